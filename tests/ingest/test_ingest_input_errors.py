"""Every input gives documents or a typed ``InputError`` — never another exception (issue 14,
item 5): a bare ``ValueError`` from a parser became ``internal_error`` and an MLLP ``AE``
("resend"), which an interface engine answers by sending the same bytes forever.

Field-aware mutation (Hypothesis): a real message or resource with one field, component or
JSON value replaced by something hostile — numbers of thousands of digits, non-ASCII digits
("²", "٣"), broken URLs ("http://[…"), escape sequences with huge counts, any Unicode — then
parsed by ``parse_input``, routed by the MLLP gateway's ``route``, and run through the whole
``Processor`` (surrogates included). ``MalformedInput`` (the safety net under the parsers)
counts as a failure too: each case it catches is to be turned into a precise error.

Bounded here (``DEIDSTREAM_FUZZ_EXAMPLES``, default 120 per property); ``make fuzz`` runs the
same properties with many more examples.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keystore.memory import InMemoryStore
from keystore.pseudonyms import Pseudonyms
from pipelines.document import ClinicalDocument
from pipelines.errors import InputError, MalformedInput, PartialInput, UnsupportedVersion
from pipelines.hl7.routing import route
from pipelines.ingest import parse_input
from pipelines.policy import Policy
from pipelines.process import Processor
from tests.conftest import FIXTURES

EXAMPLES = int(os.environ.get("DEIDSTREAM_FUZZ_EXAMPLES", "120"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
LIMIT = 1 << 20
NOW = datetime(2026, 1, 1, tzinfo=UTC)

HL7_SEEDS = [
    p.read_bytes()
    for p in sorted((FIXTURES / "hl7v2").glob("*.hl7"))
    if not p.name.startswith("err-")
] + [p.read_bytes() for p in sorted((FIXTURES / "versions").glob("*.hl7"))]
FHIR_SEEDS = [
    orjson.loads(p.read_bytes().removeprefix(b"\xef\xbb\xbf"))
    for p in sorted((FIXTURES / "fhir").glob("*.json"))
    if not p.name.startswith("err-invalid")
]

# hostile values: long and non-ASCII numbers, broken URLs and escapes, any text
_HOSTILE = st.one_of(
    st.integers(1, 6000).map(lambda n: "9" * n),
    st.integers(1, 6000).map(lambda n: "2." + "9" * n),
    st.text(st.characters(categories=["Nd", "No", "Nl"]), min_size=1, max_size=16),
    st.tuples(
        st.sampled_from(["2024", "19", "2"]),
        st.text(st.characters(categories=["Nd", "No"]), max_size=12),
    ).map("".join),
    st.sampled_from(
        [
            "http://[",
            "http://[::1",
            "https://[fe80::1%25eth0]x:99999999999",
            "see http://[abc.example.org/path and www.[x].com",
            "ftp://user:pw@[",
            "\\.sp 99999999999999999999\\",
            "\\.sp ²\\",
            "\\.in -99999\\",
            "\\X" + "0" * 31 + "\\",
            "\\Z\\",
            "20240101+9999",
            "20240101-²³00",
            "2.5.1.9.9",
            "MR",
            "",
        ]
    ),
    st.text(max_size=60),
)


# (segment id, field index in ``line.split("|")``): MSH-n is index n - 1 (MSH-1 is the bar)
_HOT_FIELDS = [
    ("MSH", 6),
    ("MSH", 8),
    ("MSH", 9),
    ("MSH", 11),
    ("MSH", 17),
    ("PID", 3),
    ("PID", 5),
    ("PID", 7),
    ("OBR", 7),
    ("OBR", 25),
    ("OBX", 2),
    ("OBX", 5),
    ("OBX", 11),
    ("TXA", 4),
    ("TXA", 17),
    ("PV1", 19),
]


@st.composite
def mutated_hl7(draw: Any) -> bytes:
    """A seed message with one field, one component of it, or a stretch of its text replaced
    by a hostile value; fields the parsers read (MSH-7, MSH-12, PID-3, OBX-5…) come often."""
    text = draw(st.sampled_from(HL7_SEEDS)).decode("utf-8", "replace")
    segments = text.replace("\r\n", "\r").replace("\n", "\r").split("\r")
    value = draw(_HOSTILE)
    hot = [
        (i, j)
        for i, seg in enumerate(segments)
        for sid, j in _HOT_FIELDS
        if seg.startswith(sid + "|") and j < len(seg.split("|"))
    ]
    if hot and draw(st.booleans()):
        i, j = draw(st.sampled_from(hot))
    else:
        i = draw(st.integers(0, len(segments) - 1))
        n = len(segments[i].split("|"))
        if n < 2:
            return text.encode()
        j = draw(st.integers(1, n - 1))
    fields = segments[i].split("|")
    how = draw(st.sampled_from(["field", "component", "insert"]))
    if how == "component" and "^" in fields[j]:
        comps = fields[j].split("^")
        comps[draw(st.integers(0, len(comps) - 1))] = value
        value = "^".join(comps)
    elif how == "insert":
        at = draw(st.integers(0, len(fields[j])))
        value = fields[j][:at] + value + fields[j][at:]
    fields[j] = value
    segments[i] = "|".join(fields)
    return "\r".join(segments).encode("utf-8")


def _json_values(max_leaves: int = 6) -> Any:
    leaf = st.one_of(
        _HOSTILE, st.integers(-(2**63), 2**63 - 1), st.floats(), st.booleans(), st.none()
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=12), inner, max_size=3)
        ),
        max_leaves=max_leaves,
    )


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(node, dict):
        for k, v in node.items():
            found += _paths(v, (*path, k))
    elif isinstance(node, list):
        for k, v in enumerate(node):
            found += _paths(v, (*path, k))
    return found


@st.composite
def mutated_fhir(draw: Any) -> bytes:
    """A seed resource with one value anywhere in its tree replaced by a hostile JSON value."""
    resource = orjson.loads(orjson.dumps(draw(st.sampled_from(FHIR_SEEDS))))
    path = draw(st.sampled_from(_paths(resource)))
    value = draw(_json_values())
    if not path:
        return orjson.dumps(value)
    node = resource
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return orjson.dumps(resource)


def documents_or_input_error(raw: bytes, hint: str | None) -> None:
    try:
        docs = parse_input(raw, content_hint=hint, max_bytes=LIMIT)
    except MalformedInput as exc:  # the net caught a parser bug: fail with its type name
        pytest.fail(f"a parser raised {exc.coordinates.get('error')} (net: MalformedInput)")
    except InputError as exc:
        assert exc.reason_class and str(exc)
        return
    assert all(isinstance(d, ClinicalDocument) for d in docs)


@FUZZ
@given(mutated_hl7())
def test_hl7_field_mutations_parse_or_raise_input_errors(raw: bytes) -> None:
    documents_or_input_error(raw, "hl7v2")
    documents_or_input_error(raw, None)


@FUZZ
@given(mutated_hl7())
def test_the_mllp_router_raises_only_input_errors(raw: bytes) -> None:
    try:
        routed = route(raw)
    except MalformedInput as exc:
        pytest.fail(f"the router raised {exc.coordinates.get('error')} (net: MalformedInput)")
    except InputError:
        return
    assert routed.key


@FUZZ
@given(mutated_fhir())
def test_fhir_value_mutations_parse_or_raise_input_errors(raw: bytes) -> None:
    documents_or_input_error(raw, "fhir")
    documents_or_input_error(raw + b"\n" + raw, "application/fhir+ndjson")


@pytest.fixture(scope="module")
def processor() -> Processor:
    return Processor(policy=Policy.load(), store=InMemoryStore(), pseudonyms=Pseudonyms.random())


@settings(FUZZ, max_examples=max(20, EXAMPLES // 3))
@given(raw=st.one_of(mutated_hl7(), mutated_fhir()))
def test_the_whole_processor_gives_outcomes_or_input_errors(
    processor: Processor, raw: bytes
) -> None:
    """Surrogates too: a URL "http://[…" in a report made ``urlsplit`` raise ValueError."""
    try:
        outcomes = processor.process(raw, now=NOW)
    except PartialInput:
        return
    except MalformedInput as exc:
        pytest.fail(f"a parser raised {exc.coordinates.get('error')} (net: MalformedInput)")
    except InputError:
        return
    assert all(
        o.kind in {"publish", "tombstone", "duplicate", "superseded", "held", "context"}
        for o in outcomes
    )


# -- the cases found (issue 14, item 5), kept as plain examples --------------------------------

_ORU = next((FIXTURES / "versions").glob("03_*.hl7")).read_bytes()


def test_an_msh12_of_thousands_of_digits_is_an_unsupported_version() -> None:
    raw = _ORU.replace(b"|P|2.5", b"|P|2." + b"9" * 5000)
    with pytest.raises(UnsupportedVersion):
        parse_input(raw, max_bytes=LIMIT)
    with pytest.raises(UnsupportedVersion):
        route(raw)


@pytest.mark.parametrize("stamp", ["2024030111000²", "20240301110000+0²00", "2024030111000٣"])
def test_a_non_ascii_digit_in_msh7_is_no_crash(stamp: str) -> None:
    raw = _ORU.replace(b"|20240301110000||ORU", f"|{stamp}||ORU".encode())
    [doc] = parse_input(raw, max_bytes=LIMIT)
    assert doc.patient_id == "MRN448812"  # parsed; the unreadable time is left out


def test_a_broken_url_in_the_text_is_replaced_not_a_crash() -> None:
    raw = _ORU.replace(b"Comparison: none available.", b"See http://[abc.example.org/x now.")
    fresh = Processor(policy=Policy.load(), store=InMemoryStore(), pseudonyms=Pseudonyms.random())
    [out] = fresh.process(raw, content_hint="hl7v2", now=NOW)
    assert out.kind == "publish" and out.value is not None
    assert b"abc.example.org" not in out.value
