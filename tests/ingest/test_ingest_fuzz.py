"""Fuzzing both parsers: whatever the bytes, only our typed input errors may escape.

Mutation-based (bytes flipped, deleted, inserted, duplicated in every sample and fixture,
seeded so failures replay) and Hypothesis-generated (random bytes, HL7-shaped token soup,
JSON-shaped DocumentReference skeletons with random values).
"""

from __future__ import annotations

import base64
import random
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.document import ClinicalDocument
from pipelines.errors import InputError
from pipelines.ingest import parse_input
from tests.conftest import FIXTURES, SAMPLES

LIMIT = 1 << 20


def check(raw: bytes, hint: str | None = None) -> None:
    try:
        docs = parse_input(raw, content_hint=hint, max_bytes=LIMIT)
    except InputError as e:
        assert e.reason and isinstance(str(e), str)
        return
    assert all(isinstance(d, ClinicalDocument) for d in docs)


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if not b:
            b.extend(rng.randbytes(4))
        op = rng.randrange(5)
        i = rng.randrange(len(b))
        if op == 0:
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            del b[i : i + rng.randint(1, 16)]
        elif op == 2:
            b[i:i] = rng.choice(
                [
                    b"|",
                    b"^",
                    b"~",
                    b"\\",
                    b"&",
                    b"\r",
                    b"\n",
                    b"\x0b",
                    b"\x1c",
                    b'"',
                    b"{",
                    b"}",
                    b"\\X0\\",
                    b"\xff",
                    b"MSH|",
                ]
            )
        elif op == 3:
            j = rng.randrange(len(b))
            b[i:i] = b[j : j + rng.randint(1, 64)]
        else:
            b[i] = rng.randrange(256)
    return bytes(b)


def _inputs() -> list[Path]:
    files = sorted(p for p in (FIXTURES / "hl7v2").iterdir()) + sorted(
        (FIXTURES / "fhir").iterdir()
    )
    if SAMPLES.exists():
        files += sorted(p for p in SAMPLES.rglob("*") if p.is_file() and p.suffix != ".md")
    return files


@pytest.mark.parametrize("path", _inputs(), ids=lambda p: p.name)
def test_mutated_inputs_raise_only_input_errors(path: Path) -> None:
    data = path.read_bytes()
    rng = random.Random(path.name)
    for _ in range(25):
        check(mutate(data, rng))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes(raw: bytes) -> None:
    check(raw)
    check(raw, "hl7v2")
    check(raw, "application/fhir+ndjson")


_HL7_TOKENS = st.sampled_from(
    [
        "MSH|^~\\&|",
        "MSH|",
        "PID|",
        "OBX|",
        "OBR|",
        "TXA|",
        "NTE|",
        "PV1|",
        "NK1|",
        "FHS|^~\\&",
        "BHS|",
        "BTS|",
        "ORU^R01",
        "MDM^T02",
        "MDM^T10",
        "ADT^A08",
        "2.5",
        "2.3",
        "8859/1",
        "UNICODE UTF-8",
        "ASCII",
        "|",
        "^",
        "~",
        "&",
        "\\",
        "\\F\\",
        "\\.br\\",
        "\\X0D\\",
        "\\XZZ\\",
        "\\.sp 99\\",
        "\r",
        "\n",
        "\r\n",
        "TX",
        "FT",
        "ED",
        "CE",
        "ST",
        "Base64",
        "text/html",
        "text/rtf",
        "PDF",
        "MR",
        "F",
        "C",
        "X",
        "CA",
        "20240101",
        "2024010112-0500",
        "12345",
        "PGh0bWw+",
        "<p>",
        "{\\rtf1 x}",
        "\x0b",
        "\x1c\r",
        "\xe9",
    ]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_HL7_TOKENS, min_size=1, max_size=60))
def test_hl7_shaped_token_soup(tokens: list[str]) -> None:
    check("".join(tokens).encode("utf-8"))


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.text(max_size=8),
    st.sampled_from(
        [
            "Patient/1",
            "#p",
            "urn:uuid:x",
            "Encounter/e",
            "Patient?identifier=a|b",
            "replaces",
            "text/html",
            "text/rtf",
            "application/pdf",
        ]
    ),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_KEYS = st.sampled_from(
    [
        "subject",
        "context",
        "content",
        "relatesTo",
        "type",
        "meta",
        "date",
        "status",
        "docStatus",
        "author",
        "contained",
        "id",
        "identifier",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    overrides=st.dictionaries(_KEYS, _JSON, max_size=5),
    text=st.binary(max_size=40),
    media=st.sampled_from(
        ["text/plain", "text/html", "text/rtf", "application/xhtml+xml", "image/png", ""]
    ),
    wrap=st.sampled_from(["single", "bundle", "ndjson"]),
)
def test_document_reference_shaped_json(
    overrides: dict, text: bytes, media: str, wrap: str
) -> None:  # type: ignore[type-arg]
    res: dict = {  # type: ignore[type-arg]
        "resourceType": "DocumentReference",
        "subject": {"reference": "Patient/1"},
        "content": [
            {"attachment": {"contentType": media, "data": base64.b64encode(text).decode()}}
        ],
    }
    res.update(overrides)
    if wrap == "bundle":
        raw = orjson.dumps(
            {"resourceType": "Bundle", "entry": [{"resource": res}, {"resource": overrides}]}
        )
    elif wrap == "ndjson":
        raw = orjson.dumps(res) + b"\n" + orjson.dumps(overrides)
    else:
        raw = orjson.dumps(res)
    check(raw)
