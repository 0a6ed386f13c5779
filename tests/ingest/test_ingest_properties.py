"""Round-trip properties: what a sender escapes and wraps, ingest gives back unchanged."""

from __future__ import annotations

import base64

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.document import PersonName
from pipelines.ingest import parse_input
from tests.ingest.er7_escape import escape

LIMIT = 1 << 20
_LINE = (
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="\x85"
        ),
        min_size=1,
        max_size=40,
    )
    .map(str.strip)
    .filter(bool)
)
_WORD = st.text(alphabet=st.characters(whitelist_categories=("Lu", "Ll")), min_size=1, max_size=12)


def oru(obx_lines: list[str], family: str, given_name: str) -> bytes:
    segments = [
        "MSH|^~\\&|A|B|C|D|20240101120000||ORU^R01|X1|P|2.5.1|||||UNICODE UTF-8",
        f"PID|1||P1^^^H^MR||{escape(family)}^{escape(given_name)}",
        "OBR|1||F1|T^Report",
    ]
    segments += [f"OBX|{i}|TX|T||{escape(line)}||||||F" for i, line in enumerate(obx_lines, 1)]
    return "\r".join(segments).encode("utf-8")


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(_LINE, min_size=1, max_size=6), family=_WORD, given_name=_WORD)
def test_escaped_obx_text_and_names_come_back_unchanged(
    lines: list[str], family: str, given_name: str
) -> None:
    (doc,) = parse_input(oru(lines, family, given_name), max_bytes=LIMIT)
    assert doc.text == "\n".join(lines)
    assert doc.identifiers.patient_names == (PersonName(family, (given_name,)),)


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(_LINE, min_size=1, max_size=5))
def test_repetitions_are_line_breaks(lines: list[str]) -> None:
    value = "~".join(escape(line) for line in lines)
    raw = (
        f"MSH|^~\\&|A|B|C|D|20240101||MDM^T02|X2|P|2.3\rPID|1||P1\rTXA|1|PN|TX\rOBX|1|TX|T||{value}"
    ).encode()
    (doc,) = parse_input(raw, max_bytes=LIMIT)
    assert doc.text == "\n".join(lines)


@settings(max_examples=100, deadline=None)
@given(text=st.lists(_LINE, min_size=1, max_size=5).map("\n".join), wrap=st.booleans())
def test_fhir_plain_attachment_round_trips(text: str, wrap: bool) -> None:
    res = {
        "resourceType": "DocumentReference",
        "status": "current",
        "subject": {"reference": "Patient/p1"},
        "content": [
            {
                "attachment": {
                    "contentType": "text/plain",
                    "data": base64.b64encode(text.encode()).decode(),
                }
            }
        ],
    }
    body = (
        {"resourceType": "Bundle", "type": "collection", "entry": [{"resource": res}]}
        if wrap
        else res
    )
    (doc,) = parse_input(orjson.dumps(body), max_bytes=LIMIT)
    assert doc.text == text and doc.patient_id == "p1"
