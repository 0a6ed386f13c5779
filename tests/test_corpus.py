"""The corpus readers: PhysioNet records (offsets, broken records), gold, names, span files."""

from __future__ import annotations

import io
import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pipelines.corpus import (
    GoldPhrase,
    Note,
    RecordError,
    load_gold,
    load_patient_names,
    read_json_notes,
    read_notes,
    read_phi,
    read_physionet,
    read_plain_text,
    sniff_format,
    spans_json,
    write_phi,
    write_physionet_record,
)
from pipelines.document import PersonName
from pipelines.spans import Category, Span

MINI = Path(__file__).resolve().parent / "fixtures" / "physionet_mini"


def _split(items: list[Note | RecordError]) -> tuple[list[Note], list[RecordError]]:
    notes = [i for i in items if isinstance(i, Note)]
    errors = [i for i in items if isinstance(i, RecordError)]
    return notes, errors


def _read(data: bytes) -> tuple[list[Note], list[RecordError]]:
    return _split(list(read_physionet(io.BytesIO(data))))


def test_fixture_offsets_match_gold_text() -> None:
    notes, errors = _split(list(read_notes(MINI / "id.text")))
    assert errors == []
    assert [n.key for n in notes] == [
        ("1", "1"),
        ("1", "2"),
        ("1", "3"),
        ("2", "1"),
        ("2", "2"),
        ("4", "1"),
    ]
    gold = load_gold(MINI / "id-phi.phrase")
    texts = {n.key: n.text for n in notes}
    checked = 0
    for key, phrases in gold.items():
        for p in phrases:
            assert texts[key][p.start : p.end] == p.text
            checked += 1
    assert checked == 11


def test_body_starts_after_header_newline_and_ends_before_marker() -> None:
    notes, _ = _read(b"START_OF_RECORD=7||||3||||\nab\ncd\n||||END_OF_RECORD\n\n")
    assert notes[0].text == "ab\ncd\n"
    assert (notes[0].patient, notes[0].note, notes[0].index, notes[0].line) == ("7", "3", 1, 1)


def test_offsets_count_characters_not_bytes() -> None:
    notes, _ = _read("START_OF_RECORD=1||||1||||\ncafé Smith\n||||END_OF_RECORD\n".encode())
    assert notes[0].text.index("Smith") == 5  # 6 in UTF-8 bytes


def test_empty_note_is_a_record() -> None:
    notes, errors = _read(b"START_OF_RECORD=1||||1||||\n||||END_OF_RECORD\n")
    assert errors == [] and notes[0].text == ""


GOOD = b"START_OF_RECORD=1||||1||||\nfine\n||||END_OF_RECORD\n\n"
LAST = b"START_OF_RECORD=9||||9||||\nlast\n||||END_OF_RECORD\n"


def test_missing_end_marker_is_reported_and_reading_goes_on() -> None:
    data = GOOD + b"START_OF_RECORD=2||||1||||\nsecret body\n" + LAST
    notes, errors = _read(data)
    assert [n.key for n in notes] == [("1", "1"), ("9", "9")]
    assert len(errors) == 1
    err = errors[0]
    assert (err.index, err.line, err.patient, err.note) == (2, 5, "2", "1")
    assert "secret" not in err.describe()
    assert "END_OF_RECORD" in err.reason


def test_bad_header_is_skipped_with_its_lines() -> None:
    data = GOOD + b"START_OF_RECORD=oops\nsecret body\n||||END_OF_RECORD\n\n" + LAST
    notes, errors = _read(data)
    assert [n.key for n in notes] == [("1", "1"), ("9", "9")]
    assert [(e.index, e.line) for e in errors] == [(2, 5)]
    assert "header" in errors[0].reason


def test_invalid_utf8_is_reported_without_content() -> None:
    data = GOOD + b"START_OF_RECORD=3||||4||||\nbad \xff\xfe bytes\n||||END_OF_RECORD\n\n" + LAST
    notes, errors = _read(data)
    assert [n.key for n in notes] == [("1", "1"), ("9", "9")]
    assert errors[0].index == 2 and "UTF-8" in errors[0].reason
    assert "bytes" not in errors[0].describe()


def test_binary_nul_bytes_are_text() -> None:
    notes, errors = _read(b"START_OF_RECORD=1||||1||||\na\x00b\x01\n||||END_OF_RECORD\n")
    assert errors == [] and notes[0].text == "a\x00b\x01\n"


def test_truncated_file_reports_last_record() -> None:
    notes, errors = _read(GOOD + b"START_OF_RECORD=5||||6||||\ncut off")
    assert len(notes) == 1
    assert errors[0].patient == "5" and "end of file" in errors[0].reason


def test_stray_text_between_records_is_reported() -> None:
    notes, errors = _read(GOOD + b"garbage line\n" + LAST)
    assert len(notes) == 2
    assert errors[0].line == 5 and "stray" in errors[0].reason


def test_large_note_streams() -> None:
    body = b"word " * 1_000_000  # 5 MB on one line
    notes, errors = _read(b"START_OF_RECORD=1||||1||||\n" + body + b"\n||||END_OF_RECORD\n")
    assert errors == [] and len(notes[0].text) == len(body) + 1


safe_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r|"),
    max_size=200,
).filter(lambda t: "START_OF_RECORD=" not in t)


@given(st.lists(safe_text, max_size=5))
def test_write_then_read_round_trips(texts: list[str]) -> None:
    out = io.StringIO()
    for i, text in enumerate(texts, 1):
        write_physionet_record(out, "1", str(i), text)
    notes, errors = _read(out.getvalue().encode())
    assert errors == []
    assert [n.text for n in notes] == texts


def test_patient_names() -> None:
    known = load_patient_names(MINI / "pid_patientname.txt")
    assert known["1"].patient_names == (PersonName(family="WRENFIELD", given=("ADA",)),)
    assert set(known) == {"1", "2", "4"}


def test_gold_reader_keeps_multiword_text() -> None:
    gold = load_gold(MINI / "id-phi.phrase")
    assert GoldPhrase(64, 87, "Location", "Larkspur Medical Center") in gold[("1", "1")]


def test_phi_writer_round_trips() -> None:
    out = io.StringIO()
    spans = [Span(3, 6, Category.NAME_PATIENT), Span(41, 45, Category.DATE)]
    write_phi(out, "1", "1", spans)
    assert out.getvalue() == "Patient 1\tNote 1\n1\t3\t6\tNAME_PATIENT\n2\t41\t45\tDATE\n"
    assert read_phi(io.StringIO(out.getvalue())) == {
        ("1", "1"): [(3, 6, "NAME_PATIENT"), (41, 45, "DATE")]
    }


def test_spans_json_has_offsets_only() -> None:
    line = json.loads(spans_json("1", "2", [Span(0, 4, Category.DATE, 0.9, "dates")]))
    assert line == {
        "patient": "1",
        "note": "2",
        "spans": [{"start": 0, "end": 4, "category": "DATE", "confidence": 0.9, "source": "dates"}],
    }


def test_plain_text_and_json_inputs(tmp_path: Path) -> None:
    notes, errors = _split(list(read_plain_text("héllo".encode(), "n")))
    assert notes[0].text == "héllo" and errors == []
    _, errors = _split(list(read_plain_text(b"\xff")))
    assert errors[0].index == 1

    data = b'{"text": "a", "patient": "p", "note": "1"}\nnot json\n{"text": 3}\n{"text": "b"}\n'
    notes, errors = _split(list(read_json_notes(io.BytesIO(data))))
    assert [(n.patient, n.text) for n in notes] == [("p", "a"), ("-", "b")]
    assert [(e.index, e.line) for e in errors] == [(2, 2), (3, 3)]

    arr = tmp_path / "notes.json"
    arr.write_text(json.dumps([{"text": "x"}, {"text": "y", "note": "n2"}]))
    assert sniff_format(arr) == "json"
    notes, _ = _split(list(read_notes(arr)))
    assert [(n.note, n.text) for n in notes] == [("1", "x"), ("n2", "y")]
    assert sniff_format(MINI / "id.text") == "physionet"


fragments = st.sampled_from(
    [
        b"START_OF_RECORD=1||||2||||\n",
        b"START_OF_RECORD=x\n",
        b"START_OF_RECORD=",
        b"||||END_OF_RECORD\n",
        b"||||END_OF_RECORD",
        b"text line\n",
        b"\n",
        b"\xff\xfe",
        b"\x00\x01",
        "é".encode(),
        b"\r\n",
    ]
)


@given(st.lists(fragments, max_size=30))
def test_reader_never_raises_on_any_bytes(parts: list[bytes]) -> None:
    items = list(read_physionet(io.BytesIO(b"".join(parts))))
    indices = [i.index for i in items]
    assert indices == sorted(indices)
    for item in items:
        if isinstance(item, RecordError):
            assert item.line >= 1 and "text line" not in item.describe()
        else:
            assert "||||END_OF_RECORD" not in item.text
