"""Annotated corpora a site already has: PhysioNet, BRAT standoff, i2b2 2014 XML, JSON Lines.

Every reader gives a :class:`Corpus` — notes, gold phrases keyed ``(patient, note)``, the
records it could not read (coordinates and a reason, never content) — and every writer takes
``(note, phrases)`` pairs, so a corpus converts losslessly between the four layouts:

``physionet``
    a directory with ``id.text`` + ``id-phi.phrase`` (+ ``pid_patientname.txt``).
``brat``
    a directory of ``NAME.txt`` + ``NAME.ann`` pairs. Only text-bound lines are read:
    ``T1<TAB>Category 10 15<TAB>text``; a discontinuous span ``10 15;16 20`` is one phrase
    when only whitespace separates its fragments (how BRAT writes a span across a line
    break) and one phrase per fragment otherwise. ``A``/``R``/``E``/``#`` lines are ignored.
``i2b2``
    a directory of (or one) i2b2 2014 de-identification XML file(s):
    ``<TEXT><![CDATA[...]]></TEXT>`` and ``<TAGS><NAME id=.. start=.. end=.. TYPE=../>``.
    Parsed with ``defusedxml`` (DTDs refused, so no entity expansion and no external
    entities); character offsets are into the ``TEXT`` content.
``jsonl``
    a file (or a directory of ``*.jsonl``) with one object a line:
    ``{"text": ..., "spans": [{"start", "end", "category"}], "patient": .., "note": ..}``.

Patient and note of a BRAT / i2b2 file come from its name, ``PATIENT-NOTE.ext`` (the i2b2
2014 convention, e.g. ``110-01.xml``), split at the last ``-``; a name without ``-`` is a
patient with a single note of the same name.

Category names pass through a table (the policy's ``[evaluation.category_map]``,
case-insensitive) into the gold vocabulary; a name mapped to ``""`` is dropped, a name the
table lacks is kept as written. :func:`category_group` folds both the gold vocabulary and
the detector's categories into the coarse groups the slot error rate compares.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from pipelines.corpus import (
    GoldPhrase,
    Note,
    NoteKey,
    RecordError,
    load_gold,
    load_patient_names,
    read_physionet,
    write_physionet_record,
)
from pipelines.document import Identifiers
from pipelines.errors import DeidstreamError


class CorpusFormat(StrEnum):
    AUTO = "auto"
    PHYSIONET = "physionet"
    BRAT = "brat"
    I2B2 = "i2b2"
    JSONL = "jsonl"


class CorpusError(DeidstreamError):
    """The corpus as a whole cannot be read (unknown layout, missing files)."""

    reason_class = "corpus"


@dataclass(frozen=True)
class Corpus:
    notes: tuple[Note, ...]
    gold: dict[NoteKey, list[GoldPhrase]]
    errors: tuple[RecordError, ...] = ()
    known: dict[str, Identifiers] = field(default_factory=dict)
    format: CorpusFormat = CorpusFormat.PHYSIONET


# --------------------------------------------------------------------------- categories

_GROUPS: dict[str, str] = {
    **dict.fromkeys(("hcpname", "ptname", "ptnameinitial", "relativeproxyname", "name"), "NAME"),
    **dict.fromkeys(("location",), "LOCATION"),
    **dict.fromkeys(("date", "dateyear"), "DATE"),
    "age": "AGE",
    **dict.fromkeys(("phone", "fax", "email", "url", "ip", "contact"), "CONTACT"),
    **dict.fromkeys(
        ("other", "id", "ssn", "mrn", "account", "health_plan", "license", "vehicle", "device"),
        "ID",
    ),
}


def category_group(category: str) -> str:
    """``HCPName`` / ``NAME_PROVIDER`` → ``NAME``; ``Location`` / ``LOCATION_CITY`` →
    ``LOCATION``; dates, ``AGE``, ``CONTACT`` (phone, fax, e-mail, URL, IP), ``ID`` (MRNs,
    PhysioNet's ``Other``...). An unknown name is its own group (upper-cased)."""
    low = category.lower()
    if low in _GROUPS:
        return _GROUPS[low]
    for prefix, group in (("name", "NAME"), ("location", "LOCATION")):
        if low.startswith(prefix):
            return group
    return category.upper()


class CategoryMap:
    """Case-insensitive renaming of corpus categories; ``""`` drops the category."""

    def __init__(self, table: Mapping[str, str] | None = None) -> None:
        self._table = {k.lower(): v for k, v in (table or {}).items()}

    def __call__(self, name: str) -> str | None:
        """``name`` renamed by the table (kept as is when the table lacks it); ``None``
        when the table drops it."""
        renamed = self._table.get(name.lower(), name)
        return renamed or None


# --------------------------------------------------------------------------- sniffing


def sniff_corpus(path: Path) -> CorpusFormat:
    """By extension for a file, by contents for a directory."""
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix in (".jsonl", ".json", ".ndjson"):
            return CorpusFormat.JSONL
        if suffix == ".xml":
            return CorpusFormat.I2B2
        if path.name == "id.text":
            return CorpusFormat.PHYSIONET
        raise CorpusError("cannot tell the corpus format of this file", suffix=suffix)
    if (path / "id.text").is_file():
        return CorpusFormat.PHYSIONET
    for pattern, fmt in (
        ("*.ann", CorpusFormat.BRAT),
        ("*.xml", CorpusFormat.I2B2),
        ("*.jsonl", CorpusFormat.JSONL),
        ("*.json", CorpusFormat.JSONL),
    ):
        if next(path.glob(pattern), None) is not None:
            return fmt
    raise CorpusError("no id.text, *.ann, *.xml or *.jsonl in the corpus directory")


def split_stem(stem: str) -> NoteKey:
    patient, dash, note = stem.rpartition("-")
    return (patient, note) if dash and patient and note else (stem, stem)


# --------------------------------------------------------------------------- reading


Item = tuple[Note, list[GoldPhrase]] | RecordError


def read_corpus(
    path: Path,
    fmt: CorpusFormat = CorpusFormat.AUTO,
    category_map: Mapping[str, str] | None = None,
    names_file: Path | None = None,
    *,
    require_gold: bool = True,
) -> Corpus:
    """Read a whole corpus into memory (notes, gold phrases, unreadable records).

    ``require_gold=False`` lets a PhysioNet directory lack ``id-phi.phrase`` (export)."""
    if fmt is CorpusFormat.AUTO:
        fmt = sniff_corpus(path)
    rename = CategoryMap(category_map)
    items: Iterable[Item]
    if fmt is CorpusFormat.PHYSIONET:
        items = _physionet_items(path, require_gold)
    elif fmt is CorpusFormat.BRAT:
        items = _brat_items(path)
    elif fmt is CorpusFormat.I2B2:
        items = _i2b2_items(path)
    else:
        items = _jsonl_items(path)
    notes: list[Note] = []
    errors: list[RecordError] = []
    gold: dict[NoteKey, list[GoldPhrase]] = {}
    for item in items:
        if isinstance(item, RecordError):
            errors.append(item)
            continue
        note, phrases = item
        notes.append(note)
        mapped = [_renamed(p, rename) for p in phrases]
        kept = [p for p in mapped if p is not None]
        if kept:
            gold.setdefault(note.key, []).extend(kept)
    directory = path if path.is_dir() else path.parent
    pid = names_file or directory / "pid_patientname.txt"
    known = load_patient_names(pid) if pid.is_file() else {}
    return Corpus(tuple(notes), gold, tuple(errors), known, fmt)


def _renamed(phrase: GoldPhrase, rename: CategoryMap) -> GoldPhrase | None:
    category = rename(phrase.category)
    if category is None:
        return None
    return GoldPhrase(phrase.start, phrase.end, category, phrase.text)


def _physionet_items(directory: Path, require_gold: bool = True) -> Iterator[Item]:
    if directory.is_file():
        directory = directory.parent
    text_path, gold_path = directory / "id.text", directory / "id-phi.phrase"
    if not text_path.is_file() or (require_gold and not gold_path.is_file()):
        raise CorpusError("the PhysioNet layout needs id.text and id-phi.phrase")
    gold = load_gold(gold_path) if gold_path.is_file() else {}
    with text_path.open("rb") as fh:
        for item in read_physionet(fh):
            if isinstance(item, RecordError):
                yield item
                continue
            text = item.text  # phrase texts from the note: the phrase file's are one line
            yield (
                item,
                [
                    GoldPhrase(p.start, p.end, p.category, text[max(0, p.start) : p.end])
                    for p in gold.get(item.key, [])
                ],
            )


def _files(path: Path, *suffixes: str) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.iterdir() if p.suffix.lower() in suffixes and p.is_file())


def _brat_items(directory: Path) -> Iterator[Item]:
    for index, txt in enumerate(_files(directory, ".txt"), 1):
        patient, note_id = split_stem(txt.stem)
        ann = txt.with_suffix(".ann")
        try:
            text = txt.read_bytes().decode("utf-8")
            lines = ann.read_bytes().decode("utf-8").splitlines() if ann.is_file() else []
            phrases = list(_brat_phrases(lines, text))
        except UnicodeDecodeError as exc:
            yield RecordError(index, 1, f"invalid UTF-8 at byte {exc.start}", patient, note_id)
            continue
        except ValueError as exc:
            yield RecordError(index, 1, str(exc), patient, note_id)
            continue
        yield Note(patient, note_id, text, index, 1), phrases


def _brat_phrases(lines: Iterable[str], text: str) -> Iterator[GoldPhrase]:
    for lineno, line in enumerate(lines, 1):
        if not line.startswith("T"):
            continue
        parts = line.split("\t")
        if len(parts) < 2 or " " not in parts[1]:
            raise ValueError(f"annotation line {lineno}: expected ID<TAB>TYPE START END")
        category, _, offsets = parts[1].partition(" ")
        try:
            fragments = [(int(a), int(b)) for a, b in (f.split() for f in offsets.split(";"))]
        except ValueError:
            raise ValueError(f"annotation line {lineno}: bad offsets") from None
        for start, end in _merge_fragments(fragments, text):
            if not 0 <= start < end <= len(text):
                raise ValueError(f"annotation line {lineno}: offsets outside the text")
            yield GoldPhrase(start, end, category, text[start:end])


def _merge_fragments(fragments: list[tuple[int, int]], text: str) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(fragments):
        if merged and not text[merged[-1][1] : start].strip():
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _i2b2_items(path: Path) -> Iterator[Item]:
    for index, xml in enumerate(_files(path, ".xml"), 1):
        patient, note_id = split_stem(xml.stem)
        try:
            root = SafeET.fromstring(xml.read_bytes(), forbid_dtd=True)
            text, phrases = _i2b2_document(root)
        except (ParseError, DefusedXmlException) as exc:  # DTDs refused: no entity bombs
            yield RecordError(
                index, 1, f"unreadable i2b2 XML ({type(exc).__name__})", patient, note_id
            )
            continue
        except ValueError as exc:  # ours: bad or out-of-range offsets, no TEXT
            yield RecordError(index, 1, str(exc), patient, note_id)
            continue
        yield Note(patient, note_id, text, index, 1), phrases


def _i2b2_document(root: Element) -> tuple[str, list[GoldPhrase]]:
    text_el = root.find("TEXT")
    if text_el is None:
        raise ValueError("i2b2 XML has no TEXT element")
    text = text_el.text or ""
    phrases: list[GoldPhrase] = []
    tags = root.find("TAGS")
    for tag in tags if tags is not None else ():
        try:
            start, end = int(tag.get("start", "")), int(tag.get("end", ""))
        except ValueError:
            raise ValueError(f"i2b2 tag {tag.get('id', '?')}: bad offsets") from None
        if not 0 <= start < end <= len(text):
            raise ValueError(f"i2b2 tag {tag.get('id', '?')}: offsets outside the text")
        category = tag.get("TYPE") or tag.tag  # the subtype (DOCTOR), else the tag (NAME)
        phrases.append(GoldPhrase(start, end, category, text[start:end]))
    return text, phrases


def _jsonl_items(path: Path) -> Iterator[Item]:
    index = 0
    for file in _files(path, ".jsonl", ".json", ".ndjson"):
        with file.open("rb") as fh:
            for lineno, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                index += 1
                yield _json_item(raw, index, lineno)


def _json_item(raw: bytes, index: int, line: int) -> Item:
    try:
        row = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        return RecordError(index, line, f"invalid JSON ({type(exc).__name__})")
    if not isinstance(row, dict) or not isinstance(row.get("text"), str):
        return RecordError(index, line, 'JSON record has no string "text"')
    text: str = row["text"]
    note = Note(str(row.get("patient", index)), str(row.get("note", index)), text, index, line)
    phrases: list[GoldPhrase] = []
    for span in row.get("spans") or ():
        try:
            start, end = int(span["start"]), int(span["end"])
            category = str(span.get("category", ""))
        except (KeyError, TypeError, ValueError, AttributeError):
            return RecordError(index, line, "span without integer start / end", *note.key)
        if not 0 <= start < end <= len(text):
            return RecordError(index, line, "span offsets outside the text", *note.key)
        phrases.append(GoldPhrase(start, end, category, text[start:end]))
    return note, phrases


# --------------------------------------------------------------------------- writing


def write_corpus(
    dest: Path, fmt: CorpusFormat, items: Iterable[tuple[Note, Sequence[GoldPhrase]]]
) -> int:
    """Write ``(note, phrases)`` pairs as a corpus in ``fmt``; returns the notes written.

    ``dest`` is a directory (created), except for ``jsonl`` with a ``.jsonl`` suffix."""
    if fmt is CorpusFormat.JSONL and dest.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        dest.parent.mkdir(parents=True, exist_ok=True)
        return _write_jsonl(dest, items)
    dest.mkdir(parents=True, exist_ok=True)
    if fmt is CorpusFormat.JSONL:
        return _write_jsonl(dest / "corpus.jsonl", items)
    if fmt is CorpusFormat.PHYSIONET:
        return _write_physionet(dest, items)
    count = 0
    for note, phrases in items:
        stem = f"{note.patient}-{note.note}"
        if fmt is CorpusFormat.BRAT:
            _write_bytes(dest / f"{stem}.txt", note.text)
            _write_bytes(dest / f"{stem}.ann", brat_annotations(note.text, phrases))
        elif fmt is CorpusFormat.I2B2:
            try:
                document = i2b2_document(note.text, phrases)
            except CorpusError as exc:
                raise CorpusError(exc.reason, patient=note.patient, note=note.note) from None
            _write_bytes(dest / f"{stem}.xml", document)
        else:
            raise CorpusError("cannot write this corpus format", format=str(fmt))
        count += 1
    return count


def _write_bytes(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))  # no newline translation: offsets stay exact


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _write_physionet(dest: Path, items: Iterable[tuple[Note, Sequence[GoldPhrase]]]) -> int:
    count = 0
    with (
        (dest / "id.text").open("w", encoding="utf-8", newline="") as out,
        (dest / "id-phi.phrase").open("w", encoding="utf-8", newline="") as phrase_out,
    ):
        for note, phrases in items:
            write_physionet_record(out, note.patient, note.note, note.text)
            for p in phrases:
                phrase_out.write(
                    f"{note.patient} {note.note} {p.start} {p.end} {p.category} "
                    f"{_one_line(note.text[p.start : p.end])}\n"
                )
            count += 1
    return count


def _write_jsonl(path: Path, items: Iterable[tuple[Note, Sequence[GoldPhrase]]]) -> int:
    count = 0
    with path.open("w", encoding="utf-8", newline="") as out:
        for note, phrases in items:
            row = {
                "patient": note.patient,
                "note": note.note,
                "text": note.text,
                "spans": [
                    {"start": p.start, "end": p.end, "category": p.category} for p in phrases
                ],
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count


_LINE_BREAK = re.compile(r"[\r\n]+")


def brat_annotations(text: str, phrases: Sequence[GoldPhrase]) -> str:
    """The ``.ann`` lines; a phrase across line breaks becomes a discontinuous span."""
    lines = []
    for i, p in enumerate(phrases, 1):
        fragments: list[tuple[int, int]] = []
        at = p.start
        for brk in _LINE_BREAK.finditer(text, p.start, p.end):
            if brk.start() > at:
                fragments.append((at, brk.start()))
            at = brk.end()
        if p.end > at:
            fragments.append((at, p.end))
        offsets = ";".join(f"{a} {b}" for a, b in fragments or [(p.start, p.end)])
        category = p.category.replace(" ", "_") or "PHI"
        lines.append(f"T{i}\t{category} {offsets}\t{_one_line(text[p.start : p.end])}\n")
    return "".join(lines)


_ATTR = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "\n": "&#10;",
        "\r": "&#13;",
        "\t": "&#9;",
    }
)


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def i2b2_document(text: str, phrases: Sequence[GoldPhrase]) -> str:
    """An i2b2 2014 document: ``TEXT`` in CDATA (escaped text when it holds ``\\r`` or
    ``]]>``, which CDATA cannot carry), one ``TAGS`` child per phrase named by its group."""
    bad = _NOT_XML.search(text)
    if bad is not None:
        raise CorpusError("the text holds a character XML 1.0 cannot carry", offset=bad.start())
    plain = "\r" in text or "]]>" in text
    body = text.translate(_ATTR) if plain else f"<![CDATA[{text}]]>"
    tags = []
    for i, p in enumerate(phrases):
        group = category_group(p.category) or "PHI"
        tags.append(
            f'<{group} id="P{i}" start="{p.start}" end="{p.end}" '
            f'text="{text[p.start : p.end].translate(_ATTR)}" '
            f'TYPE="{p.category.translate(_ATTR)}" comment="" />\n'
        )
    return (
        '<?xml version="1.0" encoding="UTF-8" ?>\n<deIdi2b2>\n'
        f"<TEXT>{body}</TEXT>\n<TAGS>\n{''.join(tags)}</TAGS>\n</deIdi2b2>\n"
    )


__all__ = [
    "CategoryMap",
    "Corpus",
    "CorpusError",
    "CorpusFormat",
    "brat_annotations",
    "category_group",
    "i2b2_document",
    "read_corpus",
    "sniff_corpus",
    "split_stem",
    "write_corpus",
]
