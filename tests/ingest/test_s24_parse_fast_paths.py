"""Session 24's shortcuts in the parse stage, each against the code it replaced.

- the plain-message pattern of ``split_messages`` (possessive quantifiers) matches exactly the
  inputs the backtracking pattern matched;
- ``input_errors_only`` (a class now) lets our errors and non-errors through and turns any
  other exception into ``MalformedInput`` naming its type only;
- the content hint read from a table gives the kind the hint rules give;
- the OBX-11 statuses read inline give the statuses ``_obx_status`` gives;
- OBX-16 providers (read only where present) are still collected;
- segments built inline are those ``Segment`` builds; the narrative read with its text OBX
  inline is the narrative ``obx_block`` gives;
- identifiers frozen without calls for empty lists are those ``unique`` gives;
- names and CX authorities read without generators are those read with them;
- an attachment's base64 decoded as it is first gives what the decode without whitespace gave.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.document import Identifier, Identifiers, PersonName, Status
from pipelines.errors import (
    BadEncodingCharacters,
    EmptyInput,
    InputError,
    MalformedInput,
    NotHL7,
    input_errors_only,
)
from pipelines.fhir.documents import _base64
from pipelines.hl7 import datatypes as dt
from pipelines.hl7.er7 import Delimiters, Er7Message, Segment, _segments
from pipelines.hl7.escapes import decode_escapes
from pipelines.hl7.framing import _ONE_PLAIN_MESSAGE, looks_like_hl7
from pipelines.hl7.mapping import _Reader, to_document
from pipelines.hl7.status import _obx_status, _obx_statuses
from pipelines.identifiers import CollectedIdentifiers, unique
from pipelines.ingest import (
    _HL7_HINTS,
    _JSON_HINTS,
    _NDJSON_HINTS,
    _first_line_is_json,
    _hinted,
    _kind,
    parse_input,
)

# the pattern before session 24 (backtracking quantifiers)
_BACKTRACKING = re.compile(
    rb"MSH([^A-Za-z0-9\s])(?:[^\r]*[^\r \t])?"
    rb"(?:\r+(?!FHS|BHS|BTS|FTS|MSH)[A-Z][A-Z0-9]{2}\1(?:[^\r]*[^\r \t])?)*\r*"
)

_PIECES = st.sampled_from(
    [b"MSH", b"PID", b"OBX", b"FHS", b"BTS", b"P1D", b"1AB", b"|", b"^", b"#", b"a", b"Z"]
    + [b" ", b"\t", b"\r", b"\r\r", b"\n", b"x y", b"\\", b"\x00", b"\xc3\xa9"]
)
_SOUP = st.lists(_PIECES, max_size=24).map(b"".join)


@settings(max_examples=600, deadline=None)
@given(_SOUP, st.booleans())
def test_plain_message_pattern_matches_what_the_backtracking_one_matched(
    body: bytes, header: bool
) -> None:
    data = b"MSH|^~\\&|" + body if header else body
    assert bool(_ONE_PLAIN_MESSAGE.fullmatch(data)) == bool(_BACKTRACKING.fullmatch(data))


@pytest.mark.parametrize(
    "data",
    [
        b"MSH|^~\\&|A\rPID|1\r",
        b"MSH|^~\\&|A \rPID|1\r",  # a line ending in a space
        b"MSH|^~\\&|A\rPID|1\t",
        b"MSH|\rPID|\r\r\r",
        b"MSH|^~\\&|A\rMSH|^~\\&|B\r",  # two messages
        b"MSH|^~\\&|A\rpid|1\r",  # a continuation line
        b"MSH#^~\\&#A\rPID#1\r",
        b"MSH#^~\\&#A\rPID|1\r",  # another separator than MSH's
    ],
)
def test_plain_message_pattern_examples(data: bytes) -> None:
    assert bool(_ONE_PLAIN_MESSAGE.fullmatch(data)) == bool(_BACKTRACKING.fullmatch(data))


def test_input_errors_only_turns_a_parser_bug_into_malformed_input() -> None:
    with pytest.raises(MalformedInput) as caught, input_errors_only("the parser"):
        raise ValueError("MRN 123456 in the text")  # a bug's text may quote the input
    assert caught.value.coordinates == {"error": "ValueError"}
    assert "123456" not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_input_errors_only_lets_our_errors_and_non_errors_through() -> None:
    with pytest.raises(EmptyInput), input_errors_only("the parser"):
        raise EmptyInput("input holds no data")
    with pytest.raises(KeyboardInterrupt), input_errors_only("the parser"):
        raise KeyboardInterrupt
    with input_errors_only("the parser"):
        pass


def _reference_kind(data: bytes, hint: str | None) -> str:
    """``ingest._kind`` before session 24 (every hint read by the rules)."""
    h = (hint or "").lower().strip()
    if _hinted(h, _NDJSON_HINTS):
        return "ndjson"
    if _hinted(h, _HL7_HINTS):
        return "hl7v2"
    head = data.lstrip(b" \t\r\n")[:1]
    if _hinted(h, _JSON_HINTS) or head in (b"{", b"["):
        return "ndjson" if _first_line_is_json(data.strip()) else "json"
    if looks_like_hl7(data):
        return "hl7v2"
    raise NotHL7("input is neither HL7 v2 (no segment at the start) nor FHIR JSON")


_HINTS = st.one_of(
    st.none(),
    st.sampled_from(["hl7v2", "fhir", "ndjson", "JSON", " Hl7 ", "text/plain", "", "x-fhir"]),
    st.sampled_from(_HL7_HINTS + _NDJSON_HINTS + _JSON_HINTS),
    st.text(max_size=12),
)
_DATA = st.sampled_from(
    [b'{"a": 1}', b'{"a": 1}\n{"b": 2}', b"[1]", b"MSH|^~\\&|A", b"PID|1", b"hello", b" {}"]
)


def _kind_or_error(kind: object, data: bytes, hint: str | None) -> str:
    try:
        return kind(data, hint)  # type: ignore[operator, no-any-return]
    except InputError as e:
        return type(e).__name__


@settings(max_examples=300, deadline=None)
@given(_DATA, _HINTS)
def test_kind_from_the_hint_table_is_the_kind_from_the_rules(data: bytes, hint: str | None) -> None:
    assert _kind_or_error(_kind, data, hint) == _kind_or_error(_reference_kind, data, hint)


_OBX11 = st.sampled_from(["", "F", "f", " F", "D", "W", "X", "C", "A", "P", "R", "S", "I"])


def _obx(status: str, present: bool) -> str:
    return f"OBX|1|TX|||text||||||{status}" if present else "OBX|1|TX|||text"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_OBX11, st.booleans(), st.sampled_from(["", "^x", "~Y"])), max_size=6))
def test_obx_statuses_inline_are_those_of_obx_status(
    rows: list[tuple[str, bool, str]],
) -> None:
    lines = ["MSH|^~\\&|A|B|C|D|20260101||ORU^R01|1|P|2.5.1", "PID|1||M1^^^H^MR"]
    lines += [_obx(status + more, present) for status, present, more in rows]
    msg = Er7Message("\r".join(lines))
    obx = msg.all("OBX")
    found = [s for s in (_obx_status(seg) for seg in obx) if s is not None]
    expected = _obx_statuses_reference(found)
    assert _obx_statuses(obx) is expected


def _obx_statuses_reference(statuses: list[object]) -> object:
    if not statuses:
        return Status.FINAL
    if all(s is Status.ENTERED_IN_ERROR for s in statuses):
        return Status.ENTERED_IN_ERROR
    for s in (Status.CORRECTED, Status.AMENDED, Status.PRELIMINARY):
        if s in statuses:
            return s
    return Status.FINAL


def test_obx16_providers_are_still_collected() -> None:
    text = "\r".join(
        [
            "MSH|^~\\&|A|B|C|D|20260101||ORU^R01|1|P|2.5.1",
            "PID|1||M1^^^H^MR||DOE^JANE",
            "OBR|1||D1|1^Note",
            "OBX|1|TX|||first line||||||F",
            "OBX|2|TX|||second line||||||F|||||77^HOUSE^GREGORY",
            "OBX|3|TX|||third line||||||F",
        ]
    )
    doc = to_document(Er7Message(text))
    assert [(p.family, p.given) for p in doc.identifiers.provider_names] == [
        ("HOUSE", ("GREGORY",))
    ]
    again = parse_input(text.encode(), content_hint="hl7v2", max_bytes=1 << 20)
    assert again == [doc]


_FIELD = st.sampled_from(["", "a", "b^c", "x~y", "\\T\\", "\\E\\n", "TX", "F", "12&3"])
_SEG_NAME = st.sampled_from(["MSH", "PID", "OBX", "NTE", "OBR", "TXA", "FHS", "BHS", "ZZ1"])
_LINE = st.tuples(_SEG_NAME, st.lists(_FIELD, max_size=7)).map(lambda t: "|".join([t[0], *t[1]]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_LINE, st.just("")), max_size=8))
def test_segments_built_inline_are_those_the_class_builds(lines: list[str]) -> None:
    d = Delimiters()
    made, by_name = _segments(lines, d)
    expected = [Segment(line, d, i) for i, line in enumerate(lines) if line]
    assert [(s.name, s.fields, s.position, s.delimiters) for s in made] == [
        (s.name, s.fields, s.position, s.delimiters) for s in expected
    ]
    indexed = Er7Message("MSH|^~\\&|").subset(made)  # Er7Message._index of those segments
    assert by_name == {name: indexed.all(name) for name in by_name}
    assert sorted(by_name) == sorted({s.name for s in made})


def test_standard_delimiters_are_those_the_checks_give() -> None:
    standard = Delimiters.from_msh("MSH|^~\\&|A|B")
    assert standard == Delimiters("|", "^", "~", "\\", "&", "")
    assert Delimiters.from_msh("MSH|^~\\&|") is standard  # one shared (frozen) value
    assert Delimiters.from_msh("MSH|^~\\&#|A").truncation == "#"
    with pytest.raises(BadEncodingCharacters):
        Delimiters.from_msh("MSH|^~\\^|A")


def _reference_narrative(r: _Reader) -> tuple[str, list[Segment], bool]:
    """``_Reader.narrative`` before session 24 (obx_block for every OBX but the first case)."""
    blocks: list[str] = []
    sources: list[Segment] = []
    skipped_binary = False
    in_report = False
    for seg in r.msg.segments:
        if seg.name in ("OBR", "TXA", "OBX"):
            in_report = True
        if seg.name == "OBX":
            block, binary = r.obx_block(seg)
            skipped_binary |= binary
            if block is not None:
                blocks.append(block)
                sources.append(seg)
        elif seg.name == "NTE" and in_report:
            blocks.append("\n".join(decode_escapes(x, r.d) for x in seg.repetitions(3)))
    return "\n".join(blocks).strip(), sources, skipped_binary


_OBX_TYPE = st.sampled_from(["TX", "FT", "ST", "TN", "CE", "NM", "ED", "tx", " TX", "TX^x", ""])
_OBX_VALUE = st.sampled_from(
    ["", "plain text", "a~b", "\\H\\bold\\N\\", "a\\F\\b", "x^Text^y", "^^text/plain^A^hi", "~"]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(_OBX_TYPE, _OBX_VALUE, st.booleans()).map(
                lambda t: f"OBX|1|{t[0]}|||{t[1]}" if t[2] else f"OBX|1|{t[0]}"
            ),
            st.sampled_from(["NTE|1||a comment", "NTE|1||one~two", "OBR|1", "PV1|1"]),
        ),
        max_size=8,
    )
)
def test_narrative_inline_is_the_narrative_of_obx_block(lines: list[str]) -> None:
    head = ["MSH|^~\\&|A|B|C|D|20260101||ORU^R01|1|P|2.5.1", "PID|1||M1^^^H^MR"]
    msg = Er7Message("\r".join(head + lines))
    text, sources, binary = _Reader(msg).narrative()
    ref_text, ref_sources, ref_binary = _reference_narrative(_Reader(msg))
    assert (text, binary) == (ref_text, ref_binary)
    assert [s.position for s in sources] == [s.position for s in ref_sources]


def _decoded_or_error(decode: Callable[[str], bytes], data: str) -> bytes | str:
    try:
        return decode(data)
    except (binascii.Error, ValueError) as e:
        return type(e).__name__


_B64_TEXT = st.one_of(
    st.binary(max_size=40).map(lambda b: base64.b64encode(b).decode()),
    st.text(alphabet="QUJDREVGab+/=\n\r \t\x1c\x85\u00a0é", max_size=24),
)


@settings(max_examples=400, deadline=None)
@given(_B64_TEXT, st.sampled_from(["", "\n", " ", "\r\n", "\x1c", "\u2028"]), st.integers(0, 30))
def test_attachment_base64_is_the_strict_decode_of_the_payload_without_whitespace(
    data: str, space: str, at: int
) -> None:
    data = data[:at] + space + data[at:]

    def reference(value: str) -> bytes:
        return base64.b64decode("".join(value.split()), validate=True)

    assert _decoded_or_error(_base64, data) == _decoded_or_error(reference, data)


_IDS = st.lists(st.sampled_from([Identifier("1"), Identifier("2", "A"), Identifier("1")]))
_TEXTS = st.lists(st.sampled_from(["a", "b", "a", ""]))


@settings(max_examples=200, deadline=None)
@given(_IDS, _TEXTS, _TEXTS, _IDS)
def test_freeze_skipping_empty_lists_is_unique_of_each(
    ids: list[Identifier], ssn: list[str], phones: list[str], others: list[Identifier]
) -> None:
    c = CollectedIdentifiers(patient_ids=ids, ssn=ssn, phones=phones, other_ids=others)
    frozen = c.freeze()
    assert frozen == Identifiers(
        patient_ids=unique(ids),
        ssn=unique(ssn),
        phones=unique(phones),
        other_ids=unique(others),
    )
    assert frozen.patient_names == () and type(frozen.patient_ids) is tuple


_PART = st.sampled_from(["", "A", "B c", " ", "Jr", "MD", "x\\T\\y"])


@settings(max_examples=300, deadline=None)
@given(_PART, _PART, _PART, _PART, _PART, _PART)
def test_name_parts_joined_without_generators_as_before(
    family: str, given_name: str, middle: str, suffix: str, prefix: str, degree: str
) -> None:
    expected = (
        None
        if not (family or given_name or middle)
        else PersonName(
            family=family,
            given=tuple(p for p in (given_name, *middle.split()) if p),
            prefix=prefix,
            suffix=" ".join(p for p in (suffix, degree) if p),
        )
    )
    assert dt._name(family, given_name, middle, suffix, prefix, degree) == expected


_CX_PART = st.sampled_from(["", "M1", "&U", "H&U", "&&", "\\T\\", " X "])


@settings(max_examples=300, deadline=None)
@given(st.lists(_CX_PART, max_size=6))
def test_cx_authority_is_the_first_given_part_of_cx4(parts: list[str]) -> None:
    raw = "^".join(parts)
    d = Delimiters()
    found = dt.cx(raw, d, "utf-8")
    hd = parts[3].split("&") if len(parts) > 3 and parts[3] else []
    authority = next((decode_escapes(h, d) for h in hd if h), "").strip()
    if found is not None:
        assert found.authority == authority
