"""FHIR JSON / NDJSON → documents, one outcome per entry (a bad entry never loses the others).

- a single DocumentReference or DiagnosticReport → one outcome;
- a Bundle → one outcome per DocumentReference/DiagnosticReport entry; Patient, Encounter,
  Practitioner, RelatedPerson entries (and ``contained``) are context for the documents;
  other resource types are ignored; a Bundle without any document is NotADocument;
- NDJSON → the lines are entries of one implicit Bundle (context lines work the same way);
  a line that is not JSON is an InvalidJSON outcome for that line only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from pipelines.document import ClinicalDocument
from pipelines.errors import InputError, InvalidFHIR, InvalidJSON, NotADocument
from pipelines.fhir.context import Resolver
from pipelines.fhir.documents import MAPPERS
from pipelines.fhir.json import Json, objs, string
from pipelines.fhir.validate import validate_resource

DOCUMENT_TYPES = frozenset(MAPPERS)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One entry's result: a document or the error that stopped it (never both)."""

    index: int
    document: ClinicalDocument | None = None
    error: InputError | None = None


def _with_entry(e: InputError, **where: object) -> InputError:
    """The same error class with the entry coordinates added."""
    e.coordinates.update({k: v for k, v in where.items() if v is not None})
    e.args = (str(e),)
    return e


def _map(
    res: Json, resolver: Resolver, path: str, validate: bool, message_id: str
) -> ClinicalDocument:
    if validate:
        validate_resource(res, path)
    mapper = MAPPERS[str(res.get("resourceType"))]
    return mapper(res, resolver, path, message_id)


Entry = tuple[int, "Json | InputError", str]  # (index, resource or error, fullUrl)


def _entries(resources: list[Entry], message_id: str, validate: bool, kind: str) -> list[Outcome]:
    resolver = Resolver()
    for _, res, full_url in resources:
        if isinstance(res, dict):
            resolver.add(res, full_url)
    outcomes: list[Outcome] = []
    for index, res, _ in resources:
        where = {kind: index}
        if isinstance(res, InputError):
            outcomes.append(Outcome(index, error=_with_entry(res, **where)))
            continue
        rtype = res.get("resourceType")
        if not isinstance(rtype, str) or rtype not in DOCUMENT_TYPES:
            continue
        path = f"{kind}[{index}]"
        try:
            doc = _map(res, resolver, path, validate, message_id)
        except InputError as e:
            outcomes.append(
                Outcome(index, error=_with_entry(e, **where, resource=rtype))  # a known type
            )
            continue
        outcomes.append(Outcome(index, document=doc))
    if not outcomes:
        raise NotADocument("no DocumentReference or DiagnosticReport entry", entries=len(resources))
    return outcomes


def _bundle(bundle: Json, validate: bool) -> list[Outcome]:
    resources: list[Entry] = []
    for i, entry in enumerate(objs(bundle, "entry", "Bundle")):
        res = entry.get("resource")
        if res is None:
            continue  # a deleted resource or a request-only entry: nothing to read
        if not isinstance(res, dict):
            resources.append((i, InvalidFHIR("entry.resource must be a JSON object"), ""))
            continue
        full_url = entry.get("fullUrl")
        resources.append((i, res, full_url if isinstance(full_url, str) else ""))
    message_id = string(bundle, "id", "Bundle")
    return _entries(resources, message_id, validate, "entry")


def parse_resource(resource: Any, *, validate: bool = False) -> list[Outcome]:
    """One parsed JSON value (a resource) → outcomes."""
    if not isinstance(resource, dict):
        raise NotADocument("JSON value is not a FHIR resource object")
    rtype = resource.get("resourceType")
    if not isinstance(rtype, str) or not rtype:
        raise InvalidFHIR("resource has no resourceType")
    if rtype == "Bundle":
        return _bundle(resource, validate)
    if rtype in DOCUMENT_TYPES:
        resolver = Resolver()
        return [Outcome(0, document=_map(resource, resolver, rtype, validate, ""))]
    raise NotADocument(
        "resource is not a DocumentReference, DiagnosticReport or Bundle",
        resource=type_name(rtype),
    )


def type_name(rtype: str) -> str:
    """``rtype`` when it names a FHIR type, else "?": a reason never echoes an input value (an
    alphanumeric "resourceType" may be anything, a name included)."""
    if not (rtype.isascii() and rtype.isalpha() and len(rtype) < 40):
        return "?"
    from fhir.resources import get_fhir_model_class  # the dead-letter path only

    try:
        get_fhir_model_class(rtype)
    except (ValueError, ImportError):
        return "?"
    return rtype


def loads(text: bytes | str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise InvalidJSON("not valid JSON", line=e.lineno, column=e.colno) from None


def parse_ndjson(data: bytes, *, validate: bool = False) -> list[Outcome]:
    """NDJSON (one resource per line; blank lines skipped) → outcomes, per line."""
    resources: list[Entry] = []
    for line_no, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            value = loads(line)
        except InvalidJSON as e:
            bad = InvalidJSON("line is not valid JSON", column=e.coordinates.get("column"))
            resources.append((line_no, bad, ""))
            continue
        if not isinstance(value, dict) or not isinstance(value.get("resourceType"), str):
            resources.append((line_no, InvalidFHIR("line is not a FHIR resource object"), ""))
            continue
        if value["resourceType"] == "Bundle":
            resources.append((line_no, NotADocument("a Bundle inside NDJSON is not supported"), ""))
            continue
        resources.append((line_no, value, ""))
    return _entries(resources, "", validate, "line")
