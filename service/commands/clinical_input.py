"""What ``detect`` and ``deidentify`` do with input that is not a corpus of notes.

Both read corpus notes (PhysioNet ``id.text``, JSON lines, plain text). An HL7 v2 message, an
MLLP capture or a FHIR resource read as plain text would leave its PID segment or its Patient
in the output as "text" — so they are recognised here: ``detect`` parses them through the
ingest path (the narrative, with the message's identifiers known to the detector),
``deidentify`` refuses with one line naming ``deidstream convert``. An empty file is an
error, never "0 notes" or "1 note" of nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path

from pipelines.corpus import Note, RecordError
from pipelines.document import ClinicalDocument, Identifiers

_HEAD_BYTES = 64 * 1024
_HL7_START = re.compile(rb"^(MSH|FHS|BHS)[|^~\\&#]")
_RESOURCE_TYPE = re.compile(rb'"resourceType"\s*:')


class ClinicalKind(StrEnum):
    MLLP = "MLLP-framed HL7 v2"
    HL7V2 = "HL7 v2 (MSH)"
    FHIR_JSON = "FHIR JSON"
    FHIR_NDJSON = "FHIR NDJSON"


class EmptyInput(ValueError):
    """The file has no content (only whitespace, or nothing at all)."""


def clinical_kind(path: Path) -> ClinicalKind | None:
    """The clinical message format of ``path``, or None for a corpus of notes.

    Raises :class:`EmptyInput` for a file with nothing but whitespace."""
    with path.open("rb") as fh:
        head = fh.read(_HEAD_BYTES)
    stripped = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    if not stripped:
        raise EmptyInput(f"{path} is empty")
    if stripped.startswith(b"\x0b"):
        return ClinicalKind.MLLP
    if _HL7_START.match(stripped):
        return ClinicalKind.HL7V2
    if stripped.startswith(b"{") and _RESOURCE_TYPE.search(stripped):
        first_line = stripped.split(b"\n", 1)[0].strip()
        try:
            json.loads(first_line)
        except ValueError:
            return ClinicalKind.FHIR_JSON  # one (pretty-printed) resource
        rest = stripped[len(first_line) :].strip()
        return ClinicalKind.FHIR_NDJSON if rest.startswith(b"{") else ClinicalKind.FHIR_JSON
    return None


def refusal(path: Path, kind: ClinicalKind, command: str) -> str:
    return (
        f"deidstream {command}: {path} is {kind}, not a corpus of notes; "
        f"use `deidstream convert {path}` (research DocumentReferences)"
    )


def clinical_notes(
    path: Path, kind: ClinicalKind, max_bytes: int
) -> Iterator[tuple[Note, Identifiers] | RecordError]:
    """The documents of a clinical message file as notes, with the identifiers the message
    carries (known to the detector). Context-only messages (ADT) have no narrative: skipped.
    A parse error is one :class:`RecordError` naming its reason class, never content."""
    from pipelines.errors import DeidstreamError, PartialInput
    from pipelines.ingest import parse_input

    hint = {ClinicalKind.FHIR_NDJSON: "ndjson", ClinicalKind.FHIR_JSON: "fhir"}.get(kind)
    errors: list[RecordError] = []
    try:
        documents = parse_input(path.read_bytes(), content_hint=hint, max_bytes=max_bytes)
    except PartialInput as exc:
        documents = [d for d in exc.documents if isinstance(d, ClinicalDocument)]
        errors.append(
            RecordError(0, 1, f"{len(exc.entry_errors)} entries failed [{exc.reason_class}]")
        )
    except DeidstreamError as exc:
        yield RecordError(0, 1, f"[{exc.reason_class}] {exc}")
        return
    for index, doc in enumerate(documents, start=1):
        if doc.context_only or not doc.text:
            continue
        note = Note(
            patient=doc.patient_id or "-",
            note=doc.document_id or str(index),
            text=doc.text,
            index=index,
            line=1,
        )
        yield note, doc.identifiers
    yield from errors
