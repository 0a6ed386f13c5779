"""The research output: one de-identified FHIR R4 DocumentReference per document version.

Built as plain JSON, validated with fhir.resources' R4B model (R4 and R4B share the
DocumentReference shape; fhir.resources has no R4 package), then serialised with orjson —
validation guards every output, the pydantic dump (slower) is skipped. Validation is split
so that it costs a fraction of a whole-model validation (see :func:`validate`): the resource's
*skeleton* — every value with the per-document values at a few fixed paths (id, date,
references, the attachment data, the near-duplicate key and score) replaced by valid
placeholders — is validated whole by the model, once per distinct skeleton (keyed by its
JSON bytes); the values taken out are validated one by one with the very field types the
model declares there. Nothing is left unvalidated: tests/test_research_validation.py and
tests/test_research_outputs_valid.py check that this accepts exactly what the whole model
accepts.
Subject and encounter are pseudonymous references, dates move by the patient's shift,
authors / custodian / identifiers are never copied, and ``meta.security`` says how PHI was
treated (v3 ObservationValue PSEUDED for surrogates, REDACTED for tags).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from threading import Lock
from typing import Any

import orjson
from fhir.resources.R4B.attachment import Attachment
from fhir.resources.R4B.documentreference import DocumentReference
from fhir.resources.R4B.extension import Extension
from fhir.resources.R4B.reference import Reference
from pydantic import BaseModel, TypeAdapter, ValidationError

from pipelines.document import ClinicalDocument, Status
from pipelines.errors import InvalidFHIR
from pipelines.spans import Span

OBSERVATION_VALUE = "http://terminology.hl7.org/CodeSystem/v3-ObservationValue"
SECURITY_DISPLAY = {"PSEUDED": "pseudonymized", "REDACTED": "redacted"}
EXTENSION_BASE = "http://deidstream.local/fhir/StructureDefinition"
NEAR_DUPLICATE_URL = f"{EXTENSION_BASE}/near-duplicate"
ANNOTATION_URL = f"{EXTENSION_BASE}/surrogate-annotation"
CONTENT_TYPE = "text/plain; charset=utf-8"
MEDIA_TYPE = "application/fhir+json"

DOC_STATUS = {
    Status.PRELIMINARY: "preliminary",
    Status.FINAL: "final",
    Status.AMENDED: "amended",
    Status.CORRECTED: "amended",  # R4 docStatus has no "corrected"
}

_SPACES = re.compile(r"\s+")
# HL7 v2 coding-system names (table 0396) → FHIR system URIs; other non-URI names are dropped
# rather than published as a bogus ``system``.
CODE_SYSTEMS = {
    "LN": "http://loinc.org",
    "LOINC": "http://loinc.org",
    "SCT": "http://snomed.info/sct",
    "SNM": "http://snomed.info/sct",
    "SNOMED": "http://snomed.info/sct",
    "C4": "http://www.ama-assn.org/go/cpt",
    "CPT": "http://www.ama-assn.org/go/cpt",
    "I10": "http://hl7.org/fhir/sid/icd-10",
}


@dataclass(frozen=True, slots=True)
class ResearchDocument:
    research_key: str  # Kafka message key: pseudonym of (patient | visit | report type)
    version_id: str  # DocumentReference.id
    resource: dict[str, Any]  # the validated JSON object
    value: bytes  # its JSON bytes

    @property
    def json(self) -> bytes:
        return self.value


def _code(value: str) -> str:
    """A FHIR ``code``: no leading/trailing space, single inner spaces."""
    return _SPACES.sub(" ", value).strip()


def _instant(moment: datetime, shift_days: int) -> str:
    """The shifted moment in UTC to the second, ``Z`` for its offset: what
    ``isoformat(timespec="seconds")`` writes with ``+00:00`` replaced, in one formatting."""
    if moment.tzinfo is None:  # HL7 times without offset are read as UTC
        moment = moment.replace(tzinfo=UTC)
    s = (moment + timedelta(days=shift_days)).astimezone(UTC)
    # one %-formatting of six ints: cheaper than isoformat, or an f-string's six specs
    fields = (s.year, s.month, s.day, s.hour, s.minute, s.second)
    return "%04d-%02d-%02dT%02d:%02d:%02dZ" % fields  # noqa: UP031


def system_uri(name: str) -> str:
    """The FHIR system URI for an HL7 v2 coding-system name (or the URI itself); '' if unknown."""
    name = name.strip()
    if ":" in name:  # already a URI (FHIR input) or a URN
        return name
    return CODE_SYSTEMS.get(name.upper(), "")


def _type(document: ClinicalDocument) -> dict[str, Any] | None:
    rt = document.report_type
    code, display, system = _code(rt.code), rt.display.strip(), system_uri(rt.system)
    if not code and not display:
        return None
    concept: dict[str, Any] = {}
    if code:
        coding: dict[str, Any] = {"code": code}
        if system:
            coding["system"] = system
        if display:
            coding["display"] = display
        concept["coding"] = [coding]
    if display:
        concept["text"] = display
    return concept


def _annotation(span: Span) -> dict[str, Any]:
    return {
        "url": ANNOTATION_URL,
        "extension": [
            {"url": "start", "valueInteger": span.start},
            {"url": "end", "valueInteger": span.end},
            {"url": "category", "valueCode": span.category.value},
        ],
    }


def build_resource(
    document: ClinicalDocument,
    *,
    text: str,
    version_id: str,
    patient_pseudonym: str,
    encounter_pseudonym: str | None,
    shift_days: int,
    security: Iterable[str],
    replaces: str | None = None,
    near_duplicate: tuple[str, float] | None = None,
    annotations: Sequence[Span] | None = None,
) -> dict[str, Any]:
    """The research DocumentReference as JSON (not yet validated)."""
    codes = sorted(set(security))
    resource: dict[str, Any] = {"resourceType": "DocumentReference", "id": version_id}
    if codes:
        resource["meta"] = {
            "security": [
                {"system": OBSERVATION_VALUE, "code": c, "display": SECURITY_DISPLAY.get(c, c)}
                for c in codes
            ]
        }
    extensions: list[dict[str, Any]] = []
    if near_duplicate is not None:
        other, score = near_duplicate
        extensions.append(
            {
                "url": NEAR_DUPLICATE_URL,
                "extension": [
                    {"url": "researchKey", "valueString": other},
                    {"url": "score", "valueDecimal": round(score, 3)},
                ],
            }
        )
    if extensions:
        resource["extension"] = extensions
    resource["status"] = "current"
    resource["docStatus"] = DOC_STATUS.get(document.status, "final")
    concept = _type(document)
    if concept is not None:
        resource["type"] = concept
    resource["subject"] = {"reference": f"Patient/{patient_pseudonym}"}
    moment = document.document_date or document.version.filing_time
    if moment is not None:
        resource["date"] = _instant(moment, shift_days)
    if replaces:
        resource["relatesTo"] = [
            {"code": "replaces", "target": {"reference": f"DocumentReference/{replaces}"}}
        ]
    attachment: dict[str, Any] = {
        "contentType": CONTENT_TYPE,
        "data": binascii.b2a_base64(text.encode("utf-8"), newline=False).decode("ascii"),
    }
    if document.language:
        attachment["language"] = document.language
    content: dict[str, Any] = {"attachment": attachment}
    if annotations:
        content["extension"] = [_annotation(s) for s in annotations]
    resource["content"] = [content]
    if encounter_pseudonym:
        resource["context"] = {"encounter": [{"reference": f"Encounter/{encounter_pseudonym}"}]}
    return resource


Path = tuple[str | int, ...]


def _field(model: type[BaseModel], name: str) -> TypeAdapter[Any]:
    annotation = model.model_fields[name].annotation
    if annotation is None:
        raise TypeError(f"{model.__name__}.{name} has no type")
    return TypeAdapter(annotation)


# The per-document values: (path, the model that holds the field at that path, field name,
# a valid placeholder of the same JSON kind). Every path's parent is that model in any
# DocumentReference (the FHIR structure fixes it), so the value is validated with exactly
# the type the whole-resource validation would use there.
_VARIABLE: tuple[tuple[Path, type[BaseModel], str, Any], ...] = (
    (("id",), DocumentReference, "id", "x"),
    (("date",), DocumentReference, "date", "2000-01-01T00:00:00Z"),
    (("subject", "reference"), Reference, "reference", "x"),
    (("relatesTo", 0, "target", "reference"), Reference, "reference", "x"),
    (("context", "encounter", 0, "reference"), Reference, "reference", "x"),
    (("content", 0, "attachment", "data"), Attachment, "data", "AAAA"),
    (("extension", 0, "extension", 0, "valueString"), Extension, "valueString", "x"),
    (("extension", 0, "extension", 1, "valueDecimal"), Extension, "valueDecimal", 0.5),
)
_ADAPTERS = {(model, name): _field(model, name) for _, model, name, _ in _VARIABLE}
_PATHS = tuple((path, ph, _ADAPTERS[(model, name)]) for path, model, name, ph in _VARIABLE)
_BASE64 = _ADAPTERS[(Attachment, "data")]
_BASE64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_SKELETONS: OrderedDict[bytes | str, None] = OrderedDict()  # skeletons validated whole (LRU)
_SKELETONS_MAX = 1024
_SKELETONS_LOCK = Lock()


def _plain_base64(value: str) -> bool:
    """Is ``value`` padded standard base64 — a multiple of four characters from the base64
    alphabet, then at most two ``=`` (what ``base64.b64encode`` writes)? Such a string is
    accepted by the attachment ``data`` type (``base64.b64decode`` of its UTF-8 bytes
    cannot fail), so ``validate`` need not decode it; any other
    value is still validated by the type itself."""
    if len(value) % 4 or not value.isascii():
        return False
    raw = value.encode("ascii")
    body = raw.rstrip(b"=")
    return len(raw) - len(body) <= 2 and not body.translate(None, _BASE64_ALPHABET)


_KEY_OPTIONS = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)


def _not_json(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def _skeleton_key(skeleton: dict[str, Any]) -> bytes | str:
    """The cache key of a skeleton: its orjson bytes — the serialiser ``render`` publishes
    with, so two skeletons with one key publish the same bytes (cheaper than ``repr``).
    Where JSON would conflate what the model tells apart it is ``repr`` instead: ``null``
    (orjson writes None, NaN and infinities all as null), str/int/dict/list subclasses,
    dates, dataclasses, non-str keys, oversized ints. bytes and str keys never collide."""
    try:
        key = orjson.dumps(skeleton, default=_not_json, option=_KEY_OPTIONS)
    except TypeError:
        return repr(skeleton)
    return repr(skeleton) if b"null" in key else key


def _invalid(exc: ValidationError, prefix: Path = ()) -> InvalidFHIR:
    where = sorted({".".join(str(p) for p in (*prefix, *e["loc"])) for e in exc.errors()})[:5]
    return InvalidFHIR("research output is not a valid DocumentReference", fields=where)


def _holes(resource: dict[str, Any]) -> list[tuple[Any, str | int, Any, Any, Path, Any]]:
    """Where the skeleton gets its placeholders: (container, key, value, placeholder, path,
    adapter) per per-document value, found in ``resource`` as it is (every path is walked
    before anything is substituted). Only exact dicts and lists are walked. A value of
    another JSON kind than its placeholder (or "") stays in the skeleton, which is then
    validated whole with it. (tests/test_research_inplace.py keeps a copying reference.)"""
    holes: list[tuple[Any, str | int, Any, Any, Path, Any]] = []
    for path, placeholder, adapter in _PATHS:
        node: Any = resource
        parent: Any = None
        for step in path:
            if type(step) is int:
                if type(node) is not list or step >= len(node):
                    break
            elif type(node) is not dict or step not in node:
                break
            parent, node = node, node[step]
        else:
            if type(node) is type(placeholder) and node != "":
                holes.append((parent, path[-1], node, placeholder, path, adapter))
    return holes


def validate(resource: dict[str, Any]) -> None:
    """Raise :class:`InvalidFHIR` (field paths only, never values) if not a valid R4 resource.

    The skeleton (see the module docstring) is validated by ``DocumentReference`` itself
    the first time it is seen; the values taken out of it, each by its field's own type.
    A skeleton that is valid with placeholders stays valid with any values its field types
    accept: fhir.resources' model-level checks look at presence (required elements, one
    value[x]), not at these values.

    The skeleton is ``resource`` itself with the placeholders put in place for the time of
    the check and the values put back after it (copying the containers on the eight paths,
    as an earlier version did, cost more than the rest of the check): the same JSON, so the
    same cache key and the same model validation.
    """
    holes = _holes(resource)
    for container, step, _value, placeholder, _path, _adapter in holes:
        container[step] = placeholder
    try:
        key = _skeleton_key(resource)
        with _SKELETONS_LOCK:
            known = key in _SKELETONS
            if known:
                _SKELETONS.move_to_end(key)
        if not known:
            try:
                DocumentReference.model_validate(resource)
            except ValidationError as exc:
                raise _invalid(exc) from None
            with _SKELETONS_LOCK:
                _SKELETONS[key] = None
                while len(_SKELETONS) > _SKELETONS_MAX:
                    _SKELETONS.popitem(last=False)
    finally:  # each hole holds the value found before any substitution (shared slots too)
        for container, step, value, _placeholder, _path, _adapter in reversed(holes):
            container[step] = value
    for _container, _step, value, _placeholder, path, adapter in holes:
        if adapter is _BASE64 and type(value) is str and _plain_base64(value):
            continue  # valid by its form (see _plain_base64)
        try:  # the adapter's validator itself: ``TypeAdapter.validate_python``'s defaults
            adapter.validator.validate_python(value)
        except ValidationError as exc:
            raise _invalid(exc, path) from None


def validate_whole(resource: dict[str, Any]) -> None:
    """The same check without the split: the model validates the resource as it is."""
    try:
        DocumentReference.model_validate(resource)
    except ValidationError as exc:
        raise _invalid(exc) from None


def render(research_key: str, resource: dict[str, Any]) -> ResearchDocument:
    """Validate once and serialise (orjson: the validated JSON is the output as is)."""
    validate(resource)
    return ResearchDocument(
        research_key=research_key,
        version_id=str(resource["id"]),
        resource=resource,
        value=orjson.dumps(resource),
    )


def attachment_text(resource: dict[str, Any]) -> str:
    """The de-identified text of a research DocumentReference (for tests and tools)."""
    data = resource["content"][0]["attachment"]["data"]
    return base64.b64decode(data).decode("utf-8")
