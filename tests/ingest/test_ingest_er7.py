"""The ER7 reader's pieces: escapes, delimiters, paths, framing, charsets, data types."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.errors import BadEncoding, BadEncodingCharacters, NoMSH, NotHL7
from pipelines.hl7.datatypes import parse_date, parse_ts, xtn
from pipelines.hl7.er7 import Delimiters, Er7Message, decode_message, parse_path
from pipelines.hl7.escapes import decode_escapes
from pipelines.hl7.framing import mllp_frame, split_messages, unframe_mllp
from tests.ingest.er7_escape import escape

D = Delimiters()


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (r"a\F\b", "a|b"),
        (r"a\S\b\T\c\R\d\E\e", "a^b&c~d\\e"),
        (r"line1\.br\line2", "line1\nline2"),
        (r"a\.sp\b", "a\nb"),
        (r"a\.sp 3\b", "a\n\n\nb"),
        (r"a\.sk 2\b", "a  b"),
        (r"\.ce\Title", "\nTitle"),
        (r"\.fi\\.nf\\.in +4\\.ti -2\x", "x"),
        (r"\H\bold\N\ text", "bold text"),
        (r"end\X0D\next", "end\nnext"),
        (r"crlf\X0D0A\next", "crlf\nnext"),
        ("\\X414243\\", "ABC"),
        ("\\XC3A9\\", "é"),
        (r"\Zlocal\ kept", " kept"),
        ("\\C2842\\x\\M2442\\", "x"),
        ("\\P\\", "#"),
        (r"no escapes", "no escapes"),
        (r"unknown \Q\ kept", "unknown \\Q\\ kept"),
        (r"odd hex \X4\ kept", "odd hex \\X4\\ kept"),
        (r"not closed \F", "not closed \\F"),
        (r"path C:\temp\ and \F\ ok", "path C:\\temp\\ and | ok"),
        (r"\\ empty", "\\\\ empty"),
        (r"\.sp 999999\x", "\n" * 20 + "x"),
    ],
)
def test_escape_decoding(raw: str, text: str) -> None:
    assert decode_escapes(raw, D) == text


def test_escapes_follow_the_message_delimiters() -> None:
    d = Delimiters(field="#", component="!", repetition="@", escape="$", subcomponent="%")
    assert decode_escapes("a$F$b$S$c$T$d$R$e$E$f$.br$g", d) == "a#b!c%d@e$f\ng"
    assert decode_escapes(r"a\F\b", Delimiters(escape="")) == r"a\F\b"


def test_latin1_hex_uses_the_message_charset() -> None:
    assert decode_escapes("\\XE9\\", D, charset="latin-1") == "é"


@given(st.text(max_size=40))
def test_text_without_escape_char_is_unchanged(text: str) -> None:
    text = text.replace("\\", "")
    assert decode_escapes(text, D) == text


@given(st.text(alphabet=st.sampled_from("ab|^&~\\"), max_size=30))
def test_escaping_then_decoding_round_trips(text: str) -> None:
    escaped = escape(text)
    assert decode_escapes(escaped, D) == text


def test_delimiters_from_msh() -> None:
    d = Delimiters.from_msh("MSH#!@$%#APP")
    assert (d.field, d.component, d.repetition, d.escape, d.subcomponent) == (
        "#",
        "!",
        "@",
        "$",
        "%",
    )
    assert Delimiters.from_msh("MSH|^~\\&#|X").truncation == "#"
    assert Delimiters.from_msh("MSH|^~|X").escape == ""


@pytest.mark.parametrize(
    "msh", ["MSH|^^\\&|X", "MSH|^|X", "MSH|^~\\&|||", "MSH|A~\\&|X", "MSH", "MSH| ~\\&|"]
)
def test_bad_encoding_characters(msh: str) -> None:
    if msh == "MSH|^~\\&|||":
        Delimiters.from_msh(msh)  # fine: empty fields after MSH-2
        return
    with pytest.raises(BadEncodingCharacters):
        Delimiters.from_msh(msh)


def test_paths_and_numbering() -> None:
    text = "\r".join(
        [
            "MSH|^~\\&|APP|FAC|||20240101||ORU^R01|C1|P|2.5",
            "PID|1||A1^^^AUTH&1.2&ISO^MR~B2^^^OTHER^PI||Family&Own^Given^Middle",
            "OBX|1|TX|||first",
            "OBX|2|TX|||second\\T\\x",
        ]
    )
    m = Er7Message(text)
    assert m.get("MSH-1") == "|" and m.get("MSH-2") == "^~\\&" and m.get("MSH-9.2") == "R01"
    assert m.get("MSH-10") == "C1"
    assert m.get("PID-3") == "A1^^^AUTH&1.2&ISO^MR"
    assert m.get("PID-3(1).1") == "B2"
    assert m.get("PID-3(1).4") == "OTHER"
    assert m.get("PID-3.4.2") == "1.2"
    assert m.get("PID-3(5).1") == ""
    assert m.get("PID-5.1") == "Family&Own" and m.get("PID-5.1.1") == "Family"
    assert m.get("OBX[1]-5") == "second&x"  # decoded
    assert m.raw("OBX[1]-5") == "second\\T\\x"  # raw
    assert m.get("OBX[2]-5") == "" and m.get("ZZZ-1") == ""
    assert parse_path("OBX[2]-5(1).3.1") == ("OBX", 2, 5, 1, 3, 1)
    with pytest.raises(ValueError, match="ER7 path"):
        parse_path("PID5")


def test_split_messages_handles_batches_blank_lines_and_trailing_spaces() -> None:
    data = b"FHS|^~\\&\nBHS|^~\\&\n\nMSH|^~\\&|A|||||ADT^A01|1|P|2.5  \nPID|1\n\nMSH|^~\\&|B\r\nPID|2\r\nBTS|2\nFTS|1\n"
    msgs = split_messages(data)
    assert msgs == [b"MSH|^~\\&|A|||||ADT^A01|1|P|2.5\rPID|1", b"MSH|^~\\&|B\rPID|2"]


def test_split_messages_errors() -> None:
    with pytest.raises(NotHL7):
        split_messages(b"hello world")
    with pytest.raises(NoMSH):
        split_messages(b"PID|1\rMSH|^~\\&|A\r")
    with pytest.raises(NoMSH):
        split_messages(b"FHS|^~\\&\rFTS|0\r")


def test_mllp_unframing() -> None:
    assert unframe_mllp(mllp_frame(b"A") + mllp_frame(b"B")) == [b"A", b"B"]
    assert unframe_mllp(b"MSH|x\x1c\r") == [b"MSH|x"]
    assert unframe_mllp(b"MSH|x") == [b"MSH|x"]


def test_charsets() -> None:
    msh = b"MSH|^~\\&|A||||||ORU^R01|1|P|2.5||||||"
    assert decode_message(msh + b"8859/1\rOBX|\xe9")[0].endswith("é")
    assert decode_message(msh + b"UNICODE UTF-8\rOBX|\xc3\xa9")[0].endswith("é")
    assert decode_message(msh + b"Free text label\rOBX|plain")[1] == "utf-8"
    with pytest.raises(BadEncoding) as info:
        decode_message(msh + b"ASCII\rOBX|caf\xe9")
    assert info.value.coordinates["segment"] == "OBX#1"
    with pytest.raises(BadEncoding):
        decode_message(msh + b"\rOBX|\xff")  # empty MSH-18: UTF-8


def test_timestamps_and_dates() -> None:
    plus7 = timezone(timedelta(hours=7))
    assert parse_ts("20050110045504+0700") == datetime(2005, 1, 10, 4, 55, 4, tzinfo=plus7)
    assert parse_ts("200803051508") == datetime(2008, 3, 5, 15, 8, tzinfo=UTC)
    assert parse_ts("20240101", plus7) == datetime(2024, 1, 1, tzinfo=plus7)
    assert parse_ts("2024") == datetime(2024, 1, 1, tzinfo=UTC)
    assert parse_ts("20070701132554.1234-0400") is not None
    for bad in ("", "20241", "2024130101", "abc", "19500131T143414"):
        assert parse_ts(bad) is None
    assert parse_date("19500131T143414").isoformat() == "1950-01-31"  # type: ignore[union-attr]
    assert parse_date("2024") is None


def test_xtn_forms() -> None:
    assert xtn("(919)007-0007^^PH^^^919^0070007", D, "utf-8") == (
        ["(919)007-0007", "9190070007"],
        [],
    )
    assert xtn("^NET^X.400^someone@example.org", D, "utf-8") == ([], ["someone@example.org"])
    assert xtn("^^^^^^4042808", D, "utf-8") == (["4042808"], [])


@given(
    seps=st.sampled_from(["|^~\\&", "#*@!$", "|^~\\", "|^~"]),
    name=st.sampled_from(["MSH", "PID", "OBX", "BHS"]),
    fields=st.lists(st.text(st.sampled_from(list("ab|^~&#*@!\\ 1")), max_size=8), max_size=6),
    n=st.integers(0, 8),
)
def test_first_component_is_raw_first_repetition_first_component(
    seps: str, name: str, fields: list[str], n: int
) -> None:
    fs, enc = seps[0], seps[1:]
    header = f"MSH{fs}{enc}{fs}A"
    line = (
        f"{name}{fs}{enc}" + fs.join(["", *fields])
        if name in ("MSH", "BHS")
        else (name + fs.join(["", *fields]))
    )
    msg = Er7Message(header + "\r" + line)
    seg = msg.segments[-1]
    assert seg.first_component(n) == seg.raw(n, 0, 1)
