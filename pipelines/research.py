"""The research output: one de-identified FHIR R4 DocumentReference per document version.

Built as plain JSON, validated once with fhir.resources' R4B model (R4 and R4B share the
DocumentReference shape; fhir.resources has no R4 package), then serialised with orjson —
validation (~0.3 ms) guards every output, the pydantic dump (~0.4 ms more) is skipped.
Subject and encounter are pseudonymous references, dates move by the patient's shift,
authors / custodian / identifiers are never copied, and ``meta.security`` says how PHI was
treated (v3 ObservationValue PSEUDED for surrogates, REDACTED for tags).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from fhir.resources.R4B.documentreference import DocumentReference
from pydantic import ValidationError

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
    if moment.tzinfo is None:  # HL7 times without offset are read as UTC
        moment = moment.replace(tzinfo=UTC)
    shifted = (moment + timedelta(days=shift_days)).astimezone(UTC)
    return shifted.isoformat(timespec="seconds").replace("+00:00", "Z")


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
        "data": base64.b64encode(text.encode("utf-8")).decode("ascii"),
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


def validate(resource: dict[str, Any]) -> None:
    """Raise :class:`InvalidFHIR` (field paths only, never values) if not a valid R4 resource."""
    try:
        DocumentReference.model_validate(resource)
    except ValidationError as exc:
        where = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})[:5]
        raise InvalidFHIR("research output is not a valid DocumentReference", fields=where) from None


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
