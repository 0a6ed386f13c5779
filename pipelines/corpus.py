"""Reading and writing evaluation corpora: the PhysioNet deid format, plain text, JSON lines.

Readers stream: they yield one :class:`Note` at a time, or a :class:`RecordError` for a record
they could not read (its position only, never its content), and then go on with the rest.
Offsets are character offsets into the note body, which starts right after the header line's
newline — the convention of ``id-phi.phrase`` and of the ``.phi`` span files.

Hand-written because no maintained library reads this format; it is a few dozen lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO

from pipelines.document import Identifiers, PersonName
from pipelines.spans import Span

_HEADER = re.compile(rb"^START_OF_RECORD=([^|\r\n]+)\|\|\|\|([^|\r\n]+)\|\|\|\|\r?\n?$")
_START = b"START_OF_RECORD="
_END = b"||||END_OF_RECORD"

NoteKey = tuple[str, str]  # (patient, note)


@dataclass(frozen=True, slots=True)
class Note:
    """One note of a corpus: its position, its ids and its text."""

    patient: str
    note: str
    text: str
    index: int  # 1-based ordinal of the record in its file
    line: int  # 1-based line of the record's header (1 for single-document inputs)

    @property
    def key(self) -> NoteKey:
        return (self.patient, self.note)


@dataclass(frozen=True, slots=True)
class RecordError:
    """A record that could not be read. Carries coordinates and a reason, never content."""

    index: int
    line: int
    reason: str
    patient: str = ""
    note: str = ""

    def describe(self) -> str:
        ids = f" (patient {self.patient} note {self.note})" if self.patient else ""
        where = f"record {self.index} at line {self.line}" if self.index else f"line {self.line}"
        return f"{where}{ids}: {self.reason}"


@dataclass(frozen=True, slots=True)
class GoldPhrase:
    start: int
    end: int
    category: str
    text: str = ""


# --------------------------------------------------------------------------- PhysioNet text


def read_physionet(stream: BinaryIO | Iterable[bytes]) -> Iterator[Note | RecordError]:
    """Stream the records of an ``id.text`` file (opened in binary mode)."""
    index = 0  # ordinal of the current / last record header
    header_line = 0
    ids: tuple[str, str] | None = None  # set while inside a readable record
    body: list[bytes] = []
    skipping = False  # inside a record whose header was unreadable
    stray_line = 0  # first line of a run of text outside any record

    lineno = 0
    for raw_line in stream:
        lineno += 1
        if raw_line.startswith(_START):
            if stray_line:
                yield RecordError(index, stray_line, "stray text outside any record skipped")
                stray_line = 0
            if ids is not None:
                yield RecordError(
                    index, header_line, "missing END_OF_RECORD before the next record", *ids
                )
            index += 1
            header_line = lineno
            body = []
            ids = _parse_header(raw_line)
            skipping = ids is None
            if ids is None:
                yield RecordError(index, lineno, "malformed START_OF_RECORD header")
            continue
        if ids is None:
            if skipping:
                skipping = _END not in raw_line
            elif raw_line.strip() and not stray_line:
                stray_line = lineno
            continue
        at = raw_line.find(_END)
        if at < 0:
            body.append(raw_line)
            continue
        body.append(raw_line[:at])
        yield _finish(index, header_line, ids, body)
        ids = None
    if stray_line:
        yield RecordError(index, stray_line, "stray text outside any record skipped")
    if ids is not None:
        yield RecordError(index, header_line, "missing END_OF_RECORD at end of file", *ids)


def _parse_header(raw_line: bytes) -> tuple[str, str] | None:
    match = _HEADER.match(raw_line)
    if match is None:
        return None
    try:
        return match[1].decode("ascii"), match[2].decode("ascii")
    except UnicodeDecodeError:
        return None


def _finish(index: int, line: int, ids: tuple[str, str], body: list[bytes]) -> Note | RecordError:
    try:
        text = b"".join(body).decode("utf-8")
    except UnicodeDecodeError as exc:
        return RecordError(index, line, f"invalid UTF-8 at body byte {exc.start}", *ids)
    return Note(ids[0], ids[1], text, index, line)


def write_physionet_record(out: TextIO, patient: str, note: str, text: str) -> None:
    """Write one record in the ``id.text`` layout (the inverse of :func:`read_physionet`)."""
    out.write(f"START_OF_RECORD={patient}||||{note}||||\n{text}||||END_OF_RECORD\n\n")


# --------------------------------------------------------------------------- other inputs


def read_plain_text(data: bytes, name: str = "1") -> Iterator[Note | RecordError]:
    """A plain-text file is one note (patient ``-``)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        yield RecordError(1, 1, f"invalid UTF-8 at byte {exc.start}")
        return
    yield Note("-", name, text, 1, 1)


def read_json_notes(stream: BinaryIO | Iterable[bytes]) -> Iterator[Note | RecordError]:
    """JSON lines, one object a line: ``{"text": ..., "patient": ..., "note": ...}``.

    A single JSON array of such objects spread over several lines is read too.
    """
    lines = iter(stream)
    first: bytes | None = None
    first_no = 0
    for no, raw in enumerate(lines, 1):
        if raw.strip():
            first, first_no = raw, no
            break
    if first is None:
        return
    if first.lstrip().startswith(b"["):
        rest = b"".join(lines)
        try:
            items = json.loads(first + rest)
        except (UnicodeDecodeError, ValueError) as exc:
            yield RecordError(1, first_no, f"invalid JSON array ({type(exc).__name__})")
            return
        if not isinstance(items, list):
            yield RecordError(1, first_no, "top-level JSON value is not an array")
            return
        for i, item in enumerate(items, 1):
            yield _json_note(item, i, first_no)
        return
    index = 0
    for no, raw in enumerate(_chain_first(first, lines), first_no):
        if not raw.strip():
            continue
        index += 1
        try:
            item = json.loads(raw)
        except (UnicodeDecodeError, ValueError) as exc:
            yield RecordError(index, no, f"invalid JSON ({type(exc).__name__})")
            continue
        yield _json_note(item, index, no)


def _chain_first(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def _json_note(item: object, index: int, line: int) -> Note | RecordError:
    if not isinstance(item, dict) or not isinstance(item.get("text"), str):
        return RecordError(index, line, 'JSON record has no string "text"')
    patient = str(item.get("patient", "-"))
    note = str(item.get("note", item.get("id", index)))
    return Note(patient, note, item["text"], index, line)


def sniff_format(path: Path) -> str:
    """``physionet`` when the file starts with a record header, ``json`` for ``{``/``[``."""
    with path.open("rb") as fh:
        head = fh.read(4096).lstrip()
    if head.startswith(_START):
        return "physionet"
    if head[:1] in (b"{", b"["):
        return "json"
    return "text"


def read_notes(path: Path, fmt: str = "auto") -> Iterator[Note | RecordError]:
    """Open ``path`` and stream its notes in the given (or sniffed) input format."""
    if fmt == "auto":
        fmt = sniff_format(path)
    if fmt == "text":
        yield from read_plain_text(path.read_bytes(), path.stem or "1")
        return
    with path.open("rb") as fh:
        if fmt == "physionet":
            yield from read_physionet(fh)
        elif fmt == "json":
            yield from read_json_notes(fh)
        else:
            raise ValueError(f"unknown input format {fmt!r}")


# --------------------------------------------------------------------------- gold and names


def read_gold(stream: TextIO | Iterable[str]) -> dict[NoteKey, list[GoldPhrase]]:
    """``id-phi.phrase``: ``patient note start end category text`` a line, end exclusive."""
    gold: dict[NoteKey, list[GoldPhrase]] = {}
    for lineno, line in enumerate(stream, 1):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        parts = line.split(" ", 5)
        if len(parts) < 5:
            raise ValueError(f"gold file line {lineno}: expected at least 5 fields")
        patient, note, start, end, category = parts[:5]
        text = parts[5] if len(parts) > 5 else ""
        try:
            phrase = GoldPhrase(int(start), int(end), category, text)
        except ValueError:
            raise ValueError(f"gold file line {lineno}: offsets are not integers") from None
        gold.setdefault((patient, note), []).append(phrase)
    return gold


def read_patient_names(stream: TextIO | Iterable[str]) -> dict[str, Identifiers]:
    """``pid_patientname.txt``: ``patient||||FIRST||||LAST`` → the patient's known names."""
    known: dict[str, Identifiers] = {}
    for line in stream:
        parts = [p.strip() for p in line.rstrip("\r\n").split("||||")]
        if len(parts) < 3 or not parts[0]:
            continue
        patient, first, last = parts[0], parts[1], parts[2]
        name = PersonName(family=last, given=(first,) if first else ())
        previous = known.get(patient)
        names = (*previous.patient_names, name) if previous else (name,)
        known[patient] = Identifiers(patient_names=names)
    return known


def load_gold(path: Path) -> dict[NoteKey, list[GoldPhrase]]:
    with path.open(encoding="utf-8") as fh:
        return read_gold(fh)


def load_patient_names(path: Path) -> dict[str, Identifiers]:
    with path.open(encoding="utf-8") as fh:
        return read_patient_names(fh)


# --------------------------------------------------------------------------- span output


def write_phi(out: TextIO, patient: str, note: str, spans: Sequence[Span]) -> None:
    """The deid.pl ``.phi`` form: ``Patient P<TAB>Note N`` then ``IDX START END CATEGORY``."""
    out.write(f"Patient {patient}\tNote {note}\n")
    for idx, span in enumerate(spans, 1):
        out.write(f"{idx}\t{span.start}\t{span.end}\t{span.category.value}\n")


def spans_json(patient: str, note: str, spans: Sequence[Span]) -> str:
    """One JSON line for a note's spans (offsets and categories only, no text)."""
    return json.dumps(
        {
            "patient": patient,
            "note": note,
            "spans": [
                {
                    "start": s.start,
                    "end": s.end,
                    "category": s.category.value,
                    "confidence": round(s.confidence, 4),
                    "source": s.source,
                }
                for s in spans
            ],
        },
        separators=(",", ":"),
    )


def read_phi(stream: TextIO | Iterable[str]) -> dict[NoteKey, list[tuple[int, int, str]]]:
    """Read a ``.phi`` span file back (the 4th, category column is optional)."""
    out: dict[NoteKey, list[tuple[int, int, str]]] = {}
    current: list[tuple[int, int, str]] | None = None
    header = re.compile(r"^Patient\s+(\S+)\s+Note\s+(\S+)\s*$")
    for line in stream:
        m = header.match(line)
        if m:
            current = out.setdefault((m[1], m[2]), [])
            continue
        parts = line.split()
        if current is None or len(parts) < 3:
            continue
        current.append((int(parts[1]), int(parts[2]), parts[3] if len(parts) > 3 else ""))
    return out


@dataclass(frozen=True, slots=True)
class PredictedSpan:
    """A span read back from a span file; the category may be empty (deid.pl output)."""

    start: int
    end: int
    category: str = ""


def read_predictions(stream: TextIO | Iterable[str]) -> dict[NoteKey, list[PredictedSpan]]:
    """Spans written by ``deidstream detect`` (``.phi`` or JSON lines) or by deid.pl."""
    lines = list(stream)
    first = next((ln for ln in lines if ln.strip()), "")
    if first.lstrip().startswith("{"):
        out: dict[NoteKey, list[PredictedSpan]] = {}
        for line in lines:
            if not line.strip():
                continue
            row = json.loads(line)
            key = (str(row["patient"]), str(row["note"]))
            out.setdefault(key, []).extend(
                PredictedSpan(int(s["start"]), int(s["end"]), str(s.get("category", "")))
                for s in row["spans"]
            )
        return out
    return {key: [PredictedSpan(*t) for t in spans] for key, spans in read_phi(lines).items()}


def mapping_of(notes: Iterable[Note]) -> Mapping[NoteKey, str]:
    """Convenience for tests: key → text."""
    return {n.key: n.text for n in notes}


__all__ = [
    "GoldPhrase",
    "Note",
    "NoteKey",
    "RecordError",
    "load_gold",
    "load_patient_names",
    "mapping_of",
    "read_gold",
    "read_json_notes",
    "read_notes",
    "read_patient_names",
    "read_phi",
    "read_predictions",
    "PredictedSpan",
    "read_physionet",
    "read_plain_text",
    "sniff_format",
    "spans_json",
    "write_phi",
    "write_physionet_record",
]
