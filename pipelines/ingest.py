"""The one entry point for raw input: bytes in, ClinicalDocuments out (service and convert).

Sniffing, in order: size limit → empty → MLLP framing → byte-order mark → ``content_hint``
(a MIME type or 'hl7v2' / 'fhir' / 'ndjson') → first byte: ``{`` or ``[`` is JSON (several
lines of objects is NDJSON), a segment id (MSH, FHS, BHS, …) is HL7 v2, anything else NotHL7.

Several documents can come from one input (HL7 batch or several MLLP frames, Bundle, NDJSON).
Per-entry errors never lose the good entries: :func:`ingest` returns both; :func:`parse_input`
returns the documents when every entry parsed, re-raises the error when the input held a
single entry (or all entries failed the same way), and raises :class:`PartialInput` carrying
the good documents and the (index, error) pairs when some failed — a caller that does not
know PartialInput dead-letters the whole input, so nothing is dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.document import ClinicalDocument
from pipelines.errors import (
    BadEncoding,
    BadEncodingCharacters,
    DeidstreamError,
    EmptyInput,
    InputError,
    MissingPatientId,
    NoMSH,
    NoNarrative,
    NotHL7,
    OversizeInput,
    PartialInput,
    UnsupportedVersion,
    input_errors_only,
)
from pipelines.fhir.parse import loads, parse_ndjson, parse_resource
from pipelines.hl7.framing import looks_like_hl7, split_messages, unframe_mllp
from pipelines.hl7.mapping import parse_hl7v2_all

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_HL7_HINTS = ("hl7", "x-application/hl7-v2+er7", "application/hl7-v2", "application/edi-hl7")
_NDJSON_HINTS = ("ndjson", "application/fhir+ndjson", "application/x-ndjson")
_JSON_HINTS = ("fhir", "json", "application/fhir+json", "application/json")


@dataclass(frozen=True, slots=True)
class IngestResult:
    """Documents in input order, and the entries that failed (index, error)."""

    documents: tuple[ClinicalDocument, ...]
    errors: tuple[tuple[int, InputError], ...]
    kind: str  # "hl7v2" | "fhir" | "ndjson"


def _kind(data: bytes, hint: str | None) -> str:
    kind = _USUAL_HINTS[hint] if hint in _USUAL_HINTS else _hint_kind((hint or "").lower().strip())
    if kind == "ndjson" or kind == "hl7v2":
        return kind
    head = data.lstrip(b" \t\r\n")[:1]
    if kind == "json" or head in (b"{", b"["):
        # a JSON hint still tells NDJSON from one document
        return "ndjson" if _first_line_is_json(data.strip()) else "json"
    if looks_like_hl7(data):
        return "hl7v2"
    raise NotHL7("input is neither HL7 v2 (no segment at the start) nor FHIR JSON")


def _hint_kind(hint: str) -> str | None:
    """What a (lower-cased, stripped) content hint says alone: "ndjson", "hl7v2", "json" (one
    document or NDJSON: the data tells) or None (the data decides)."""
    if _hinted(hint, _NDJSON_HINTS):
        return "ndjson"
    if _hinted(hint, _HL7_HINTS):
        return "hl7v2"
    if _hinted(hint, _JSON_HINTS):
        return "json"
    return None


def _hinted(hint: str, names: tuple[str, ...]) -> bool:
    """The (lower-cased) content hint names one of ``names``."""
    return bool(hint) and any(x in hint for x in names)


# the hints the service and the tools pass, read once (every input carries one)
_USUAL_HINTS: dict[str | None, str | None] = {
    hint: _hint_kind(hint) for hint in ("hl7v2", *_HL7_HINTS, *_NDJSON_HINTS, *_JSON_HINTS)
}
_USUAL_HINTS[None] = None


def _first_line_is_json(body: bytes) -> bool:
    """Several lines, the first one a JSON object on its own: NDJSON."""
    if b"\n" not in body or body[:1] != b"{":
        return False
    first = body.split(b"\n", 1)[0].strip()
    if not first.endswith(b"}"):
        return False
    try:
        loads(first)
    except InputError:
        return False
    return True


def _hl7(chunks: list[bytes]) -> tuple[list[ClinicalDocument], list[tuple[int, InputError]]]:
    docs: list[ClinicalDocument] = []
    errors: list[tuple[int, InputError]] = []
    index = 0
    for chunk in chunks:
        try:
            messages = split_messages(chunk)
        except InputError as e:
            if len(chunks) == 1:
                raise
            e.coordinates["frame"] = index  # one bad MLLP frame must not lose the others
            e.args = (str(e),)
            errors.append((index, e))
            index += 1
            continue
        for message in messages:
            try:
                docs.extend(parse_hl7v2_all(message))
            except InputError as e:
                e.coordinates["message"] = index
                e.args = (str(e),)
                errors.append((index, e))
            index += 1
    return docs, errors


def ingest(
    raw: bytes, *, content_hint: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> IngestResult:
    """Parse everything in ``raw``; whole-input problems raise, per-entry ones are returned.
    Only :class:`InputError` escapes (anything else unexpected becomes ``MalformedInput``)."""
    with input_errors_only("the parser"):
        return _ingest(raw, content_hint, max_bytes)


def _ingest(raw: bytes, content_hint: str | None, max_bytes: int) -> IngestResult:
    if len(raw) > max_bytes:
        raise OversizeInput(
            "input is larger than the configured limit", size=len(raw), limit=max_bytes
        )
    chunks = [c.lstrip(b" \t\r\n").removeprefix(_UTF8_BOM) for c in unframe_mllp(raw)]
    chunks = [c for c in chunks if c.strip(b" \t\r\n\x00")]
    if not chunks:
        raise EmptyInput("input holds no data")
    if chunks[0][:2] in _UTF16_BOMS:
        raise BadEncoding("UTF-16 input is not supported; send UTF-8")
    kind = _kind(chunks[0], content_hint)
    if kind == "hl7v2":
        docs, errors = _hl7(chunks)
        return IngestResult(tuple(docs), tuple(errors), "hl7v2")
    data = b"\n".join(chunks)
    outcomes = parse_ndjson(data) if kind == "ndjson" else parse_resource(loads(data))
    return IngestResult(
        tuple([o.document for o in outcomes if o.document is not None]),
        tuple([(o.index, o.error) for o in outcomes if o.error is not None]),
        "fhir" if kind == "json" else "ndjson",
    )


def parse_input(
    raw: bytes, *, content_hint: str | None = None, max_bytes: int
) -> list[ClinicalDocument]:
    """Bytes → documents, or the typed error for the dead-letter path (see module doc)."""
    result = ingest(raw, content_hint=content_hint, max_bytes=max_bytes)
    if not result.errors:
        return list(result.documents)
    first = result.errors[0][1]
    if not result.documents and len({type(e) for _, e in result.errors}) == 1:
        if len(result.errors) > 1:
            first.coordinates["failed_entries"] = len(result.errors)
            first.args = (str(first),)
        raise first
    raise PartialInput(
        "some entries failed to parse",
        documents=result.documents,
        entry_errors=result.errors,
        parsed=len(result.documents),
        failed=len(result.errors),
        first_reason=first.reason_class,
    )


# Errors where hl7apy's reading of the standard adds something precise (structure, fields)
_DIAGNOSED = (BadEncodingCharacters, NoMSH, UnsupportedVersion, MissingPatientId, NoNarrative)


def reason_headers(error: DeidstreamError, raw: bytes | None = None) -> dict[str, str]:
    """Dead-letter headers for an ingest error: class, reason text, coordinates (no PHI).

    With ``raw`` HL7 v2 bytes and a structural error, hl7apy's findings on the first message
    are added as ``hl7_findings`` (slow: the dead-letter path only).
    """
    headers = {"reason_class": error.reason_class, "reason": str(error)}
    if isinstance(error, PartialInput):
        headers["entry_errors"] = "; ".join(f"{i}:{e.reason_class}" for i, e in error.entry_errors)[
            :1000
        ]
    if raw is not None and isinstance(error, _DIAGNOSED):
        from pipelines.hl7.ack import diagnose  # hl7apy: loaded on the dead-letter path only

        frames = unframe_mllp(raw)
        body = frames[0].lstrip(b" \t\r\n").removeprefix(_UTF8_BOM) if frames else b""
        start = body.find(b"MSH")
        if start != -1:
            findings = diagnose(body[start:])
            if findings:
                headers["hl7_findings"] = "; ".join(findings)[:1000]
    return headers
