"""The MLLP frame decoder (any chunking gives the same frames) and routing of payloads.
The gateway against a real broker is in tests/integration/test_mllp_gateway.py."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.errors import MissingPatientId, NotHL7, UnsupportedMessageType
from pipelines.hl7.framing import FrameDecoder
from pipelines.hl7.routing import route
from tests.conftest import FIXTURES

H = FIXTURES / "hl7v2"

payloads = st.binary(max_size=300).map(lambda b: b.replace(b"\x0b", b"").replace(b"\x1c", b""))
junk = st.sampled_from([b"", b"\r", b"\n", b"\r\n", b"  "])


def frame(payload: bytes) -> bytes:
    return b"\x0b" + payload + b"\x1c\x0d"


def feed_in_chunks(decoder: FrameDecoder, stream: bytes, cuts: list[int]) -> list[bytes]:
    out: list[bytes] = []
    bounds = [0, *sorted(set(c % (len(stream) + 1) for c in cuts)), len(stream)]
    for a, b in zip(bounds, bounds[1:], strict=False):
        out.extend(decoder.feed(stream[a:b]))
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(junk, payloads), max_size=8),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=30),
)
def test_any_chunking_gives_the_same_frames(
    parts: list[tuple[bytes, bytes]], cuts: list[int]
) -> None:
    stream = b"".join(j + frame(p) for j, p in parts)
    decoder = FrameDecoder(max_frame_bytes=1000)
    assert feed_in_chunks(decoder, stream, cuts) == [p for _, p in parts]
    assert decoder.pending == 0 and decoder.too_large is None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(payloads, max_size=4),
    st.integers(min_value=65, max_value=400),
    st.lists(st.integers(min_value=0, max_value=2_000), max_size=20),
)
def test_oversize_frame_is_refused_after_the_frames_before_it(
    before: list[bytes], size: int, cuts: list[int]
) -> None:
    limit = 64
    before = [p[:limit] for p in before]
    stream = b"".join(frame(p) for p in before) + frame(b"M" * size) + frame(b"after")
    decoder = FrameDecoder(max_frame_bytes=limit)
    got = feed_in_chunks(decoder, stream, cuts)
    assert got == before  # nothing after the oversize frame is taken
    assert decoder.too_large is not None and decoder.too_large.limit == limit


def test_end_marker_split_across_reads_and_a_lone_1c_inside() -> None:
    decoder = FrameDecoder(max_frame_bytes=100)
    assert decoder.feed(b"\x0bab\x1cc") == []  # 0x1C without 0x0D is payload
    assert decoder.feed(b"d\x1c") == []
    assert decoder.feed(b"\x0d\x0bx") == [b"ab\x1ccd"]
    assert decoder.feed(b"\x1c\x0d") == [b"x"]


def test_bytes_outside_frames_are_skipped_and_counted() -> None:
    decoder = FrameDecoder(max_frame_bytes=100)
    assert decoder.feed(b"noise\r\n\x0bA\x1c\x0d\n") == [b"A"]
    assert decoder.skipped == len(b"noise\r\n") + 1


def test_route_keys_by_the_patient_the_pipeline_files_under() -> None:
    r = route((H / "oru-r01-tx-ft-nte-v251.hl7").read_bytes())
    assert (r.key, r.patient.authority, r.message_type, r.trigger) == (
        b"MRN00417",
        "NORTHCLINIC",
        "ORU",
        "R01",
    )
    assert route((H / "mdm-t11-cancel-v25.hl7").read_bytes()).trigger == "T11"
    batch = route((H / "batch-fhs-bhs-v25.hl7").read_bytes())
    assert batch.messages == 3 and batch.key == b"MRN00417"


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("err-not-hl7.txt", NotHL7),
        ("err-missing-patient-id.hl7", MissingPatientId),
        ("err-unsupported-type.hl7", UnsupportedMessageType),
    ],
)
def test_route_errors_are_typed(name: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        route((H / name).read_bytes())


def _hl7_fixtures() -> list[bytes]:
    return [p.read_bytes() for p in sorted(H.glob("*.hl7")) if not p.name.startswith("err-")]


def test_route_key_is_the_patient_the_document_is_filed_under() -> None:
    from pipelines.ingest import ingest

    checked = 0
    for raw in _hl7_fixtures():
        docs = ingest(raw, max_bytes=1 << 20).documents
        if docs:
            assert route(raw).key == docs[0].patient_id.encode()
            checked += 1
    assert checked >= 15


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_hl7_fixtures()),
    st.lists(st.tuples(st.integers(0, 4000), st.binary(max_size=4)), max_size=6),
)
def test_route_raises_only_input_errors_on_mutated_messages(
    raw: bytes, edits: list[tuple[int, bytes]]
) -> None:
    from pipelines.errors import InputError

    data = bytearray(raw)
    for pos, chunk in edits:
        at = pos % (len(data) + 1)
        data[at : at + len(chunk)] = chunk
    with contextlib.suppress(InputError):
        route(bytes(data))
