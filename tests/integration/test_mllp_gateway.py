"""The MLLP gateway against a real Tansu broker: framed messages over a real socket, ACK codes
read back, and the input / dead-letter topics consumed to check keys and bytes."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from hl7_gen import big_report
from kafka_helpers import headers_of, read_all, unique
from prometheus_client.parser import text_string_to_metric_families

from pipelines.hl7.framing import FrameDecoder, mllp_frame
from pipelines.research import attachment_text
from service.broker import EmbeddedBroker, free_port
from service.mllp import serve
from service.settings import Settings
from tests.conftest import FIXTURES

pytestmark = pytest.mark.integration

H = FIXTURES / "hl7v2"
PHI = (b"Quillfeather", b"MRN00417", b"999-00-1234", b"Larkspur")


def settings_for(broker: EmbeddedBroker, **over: Any) -> Settings:
    base = unique("mllp")
    values: dict[str, Any] = dict(
        bootstrap_servers=broker.bootstrap_servers,
        input_topics=(f"{base}.hl7v2", f"{base}.fhir"),
        deadletter_topic=f"{base}.dlq",
        topic_partitions=3,
        retry_initial_seconds=0.05,
        retry_max_seconds=0.5,
    )
    values.update(over)
    return Settings(**values)


@dataclass
class Gateway:
    settings: Settings
    host: str
    port: int


@contextlib.asynccontextmanager
async def running(settings: Settings, **options: Any) -> AsyncIterator[Gateway]:
    stop = asyncio.Event()
    ready: asyncio.Future[tuple[str, int]] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(
        serve(settings, host="127.0.0.1", port=0, stop=stop, started=ready.set_result, **options)
    )
    try:
        host, port = await asyncio.wait_for(ready, 20)
        yield Gateway(settings, host, port)
    finally:
        stop.set()
        assert await asyncio.wait_for(task, 20) == 0


def ack_fields(ack: bytes) -> dict[str, list[str]]:
    segs = {line[:3].decode(): line.decode().split("|") for line in ack.split(b"\r") if line}
    return segs


async def exchange(gw: Gateway, stream: bytes, replies: int, chunk: int = 0) -> list[bytes]:
    """Send ``stream`` (in ``chunk``-sized writes if given) and read ``replies`` ACK frames."""
    reader, writer = await asyncio.open_connection(gw.host, gw.port)
    try:
        if chunk:
            for i in range(0, len(stream), chunk):
                writer.write(stream[i : i + chunk])
                await writer.drain()
                await asyncio.sleep(0)
        else:
            writer.write(stream)
            await writer.drain()
        decoder = FrameDecoder(1 << 20)
        acks: list[bytes] = []
        while len(acks) < replies:
            data = await asyncio.wait_for(reader.read(65536), 30)
            if not data:
                break
            acks.extend(decoder.feed(data))
        return acks
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def test_messages_are_published_keyed_by_patient_then_acked(tansu: EmbeddedBroker) -> None:
    names = ["oru-r01-tx-ft-nte-v251.hl7", "mdm-t02-v25.hl7", "adt-a01-v25.hl7"]
    payloads = [(H / n).read_bytes() for n in names]
    t11 = (H / "mdm-t11-cancel-v25.hl7").read_bytes()
    async with running(settings_for(tansu)) as gw:
        # three frames in one write (with a blank line between two of them) ...
        stream = (
            mllp_frame(payloads[0]) + b"\r\n" + mllp_frame(payloads[1]) + mllp_frame(payloads[2])
        )
        acks = await exchange(gw, stream, 3)
        # ... and one frame dribbled in 7-byte writes
        acks += await exchange(gw, mllp_frame(t11), 1, chunk=7)
        topic = gw.settings.input_topics[0]
        records = await read_all(tansu.bootstrap_servers, topic, expect=4)
    assert [ack_fields(a)["MSA"][1] for a in acks] == ["AA"] * 4
    assert [ack_fields(a)["MSA"][2] for a in acks] == [
        "ORU-0001",
        "MDM-0001",
        "ADT-A01",
        "MDM-0007",
    ]
    assert "ERR" not in ack_fields(acks[0])
    assert ack_fields(acks[0])["MSH"][8] == "ACK^R01^ACK"
    assert len(records) == 4
    assert sorted(r.value for r in records) == sorted([*payloads, t11])  # bytes unchanged
    assert {r.key for r in records} == {b"MRN00417"}
    assert len({r.partition for r in records}) == 1  # one patient, one partition, in order
    ordered = sorted(records, key=lambda r: r.offset)
    assert [r.value for r in ordered] == [*payloads, t11]
    headers = headers_of(records[0])
    assert headers["source"] == "mllp" and "hl7" in headers["content-type"]


async def test_bad_messages_are_dead_lettered_and_answered_without_phi(
    tansu: EmbeddedBroker,
) -> None:
    not_hl7 = (H / "err-not-hl7.txt").read_bytes()
    no_patient = (H / "err-missing-patient-id.hl7").read_bytes()
    unsupported = (H / "err-unsupported-type.hl7").read_bytes()
    good = (H / "mdm-t02-v25.hl7").read_bytes()
    metrics_port = free_port()
    async with running(settings_for(tansu), metrics_port=metrics_port) as gw:
        stream = b"".join(mllp_frame(p) for p in (not_hl7, no_patient, unsupported, good))
        acks = await exchange(gw, stream, 4)
        async with httpx.AsyncClient() as client:
            scraped = (await client.get(f"http://127.0.0.1:{metrics_port}/metrics")).text
        dead = await read_all(tansu.bootstrap_servers, gw.settings.deadletter_topic, expect=3)
        taken = await read_all(tansu.bootstrap_servers, gw.settings.input_topics[0], expect=1)
    codes = [ack_fields(a)["MSA"][1] for a in acks]
    assert codes == ["AR", "AE", "AR", "AA"]  # the stream goes on after bad messages
    err = ack_fields(acks[1])["ERR"]
    assert err[3].startswith("101^") and "patient" in err[8].lower()
    assert ack_fields(acks[2])["ERR"][3].startswith("200^")
    assert ack_fields(acks[0])["ERR"][3].startswith("100^")  # not HL7: no MSH at the start
    for ack in acks:
        assert not any(value in ack for value in PHI if value != b"MRN00417")
    reasons = {r.value: headers_of(r)["reason-class"] for r in dead}  # unkeyed: any partition
    assert len(dead) == 3 and reasons == {
        not_hl7: "not_hl7",
        no_patient: "missing_patient_id",
        unsupported: "unsupported_message_type",
    }
    for rec in dead:
        h = headers_of(rec)
        assert h["source"] == "mllp" and h["first-seen"]
        assert rec.key is None
        assert not any(value.decode() in " ".join(h.values()) for value in PHI)
    assert [r.value for r in taken] == [good]
    samples = {
        (s.name, tuple(sorted(s.labels.values()))): s.value
        for family in text_string_to_metric_families(scraped)
        for s in family.samples
    }
    assert samples[("deidstream_mllp_messages_total", ("AR",))] == 2
    assert samples[("deidstream_mllp_messages_total", ("AE",))] == 1
    assert samples[("deidstream_mllp_messages_total", ("AA",))] == 1
    assert samples[("deidstream_mllp_rejected_total", ("missing_patient_id",))] == 1
    assert samples[("deidstream_mllp_store_seconds_count", ("deadletter",))] == 3
    assert samples[("deidstream_mllp_connections_total", ())] == 1


async def test_metrics_port_readyz_says_ready_once_listening(tansu: EmbeddedBroker) -> None:
    """Issue 28 item 6: /readyz on the metrics port is readiness (200 ready), not metrics;
    before the broker is reached it is 503 (tests/service/test_mllp_readyz.py)."""
    metrics_port = free_port()
    async with (
        running(settings_for(tansu), metrics_port=metrics_port),
        httpx.AsyncClient() as client,
    ):
        ready = await client.get(f"http://127.0.0.1:{metrics_port}/readyz")
        metrics = await client.get(f"http://127.0.0.1:{metrics_port}/metrics")
    assert (ready.status_code, ready.text) == (200, "ready\n")
    assert "deidstream_mllp_connections_total" in metrics.text


async def test_what_the_service_would_dead_letter_is_answered_ae_before_the_ack(
    tansu: EmbeddedBroker,
) -> None:
    """Issue 15 item 5: a message that routes (MSH, a patient id) but that the service would
    dead-letter — cut inside PID, no narrative, a PDF only — used to get AA and vanish into
    the dead-letter topic. Now AE with the reason before the ACK, and the same dead letter."""
    report = (H / "oru-r01-tx-ft-nte-v251.hl7").read_bytes()
    cut = report[: report.index(b"Quillfeather^Ondi|") + len(b"Quillfeather^On")]
    no_text = (H / "oru-r01-no-narrative-v25.hl7").read_bytes()
    pdf_only = (H / "oru-r01-pdf-only-v251.hl7").read_bytes()
    good = (H / "mdm-t02-v25.hl7").read_bytes()
    batch = good.rstrip(b"\r\n") + b"\r" + no_text  # one good message, one without text
    async with running(settings_for(tansu)) as gw:
        stream = b"".join(mllp_frame(p) for p in (cut, no_text, pdf_only, good, batch))
        acks = await exchange(gw, stream, 5)
        dead = await read_all(tansu.bootstrap_servers, gw.settings.deadletter_topic, expect=3)
        taken = await read_all(tansu.bootstrap_servers, gw.settings.input_topics[0], expect=2)
    assert [ack_fields(a)["MSA"][1] for a in acks] == ["AE", "AE", "AE", "AA", "AE"]
    # the batch is stored (the service publishes its good message) and the sender told
    assert ack_fields(acks[4])["ERR"][8].startswith("partial_input: ")
    assert "no_narrative" in ack_fields(acks[4])["ERR"][8]
    for ack in acks[:2]:
        err = ack_fields(ack)["ERR"]
        assert err[3].startswith("101^") and "narrative" in err[8].lower()
    assert ack_fields(acks[2])["ERR"][3].startswith("102^")
    for ack in acks:
        assert not any(value in ack for value in PHI if value != b"MRN00417")
    reasons = {r.value: headers_of(r)["reason-class"] for r in dead}
    assert reasons == {
        cut: "no_narrative",
        no_text: "no_narrative",
        pdf_only: "unsupported_content_type",
    }
    assert sorted(r.value for r in taken) == sorted([good, batch])


async def test_oversize_frame_gets_a_nak_and_the_connection_closes(tansu: EmbeddedBroker) -> None:
    small = (H / "oru-r01-corrected-crlf-v23.hl7").read_bytes()
    big = (H / "mdm-t02-v25.hl7").read_bytes() + b"OBX|3|TX|X||" + b"x" * 4000 + b"\r"
    settings = settings_for(tansu, max_message_bytes=2048)
    assert len(small) < 2048 < len(big)
    async with running(settings) as gw:
        reader, writer = await asyncio.open_connection(gw.host, gw.port)
        writer.write(mllp_frame(small) + mllp_frame(big) + mllp_frame(small))
        await writer.drain()
        data = b""
        while True:
            got = await asyncio.wait_for(reader.read(65536), 30)
            if not got:
                break  # the gateway closed the connection
            data += got
        writer.close()
        taken = await read_all(tansu.bootstrap_servers, settings.input_topics[0], expect=1)
    acks = FrameDecoder(1 << 20).feed(data)
    assert [ack_fields(a)["MSA"][1] for a in acks] == ["AA", "AR"]
    assert ack_fields(acks[1])["MSA"][2] == "MDM-0001"  # addressed from the frame's head
    assert [r.value for r in taken] == [small]


async def test_broker_failure_is_ae_and_never_an_early_ack(own_tansu: EmbeddedBroker) -> None:
    payload = (H / "mdm-t02-v25.hl7").read_bytes()
    settings = settings_for(
        own_tansu, request_timeout_ms=2500, session_timeout_ms=2000, heartbeat_interval_ms=500
    )
    async with running(settings) as gw:
        assert [ack_fields(a)["MSA"][1] for a in await exchange(gw, mllp_frame(payload), 1)] == [
            "AA"
        ]
        own_tansu.pause()
        try:
            (ack,) = await exchange(gw, mllp_frame(payload), 1)
        finally:
            own_tansu.resume()
        fields = ack_fields(ack)
        assert fields["MSA"][1] == "AE"
        assert fields["ERR"][3].startswith("207^")  # application error: resend
        assert "resend" in fields["ERR"][8]
        (again,) = await exchange(gw, mllp_frame(payload), 1)  # the sender resends
        assert ack_fields(again)["MSA"][1] == "AA"
        records = await read_all(own_tansu.bootstrap_servers, settings.input_topics[0])
    # stored at least for each AA; the AE'd send may have landed late (dedup drops it)
    assert 2 <= len(records) <= 3
    assert all(r.value == payload and r.key == b"MRN00417" for r in records)


async def test_mllp_to_research_topic_publish_then_tombstone(
    tansu: EmbeddedBroker, tmp_path: Any
) -> None:
    """The whole way: MLLP gateway → HL7 topic → the real service → research topic; a
    retraction without narrative (OBR-25 X, no OBX) tombstones the published report."""
    from keystore.keyring import Keyring
    from service.metrics import Metrics
    from service.runner import Runner
    from service.wiring import real_processor_factory

    base = unique("e2e")
    settings = settings_for(
        tansu,
        input_topics=(f"{base}.hl7v2",),
        research_topic=f"{base}.research",
        held_topic=f"{base}.held",
        group_id=f"{base}.g",
        keystore_url=f"sqlite:///{tmp_path / 'keystore.sqlite3'}",
        master_key=Keyring.generate().to_text(),
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )
    report = (H / "oru-r01-tx-ft-nte-v251.hl7").read_bytes()
    retraction = (H / "oru-r01-retracted-no-obx-v25.hl7").read_bytes()
    metrics = Metrics()
    runner = Runner(settings, metrics, real_processor_factory(settings, metrics))
    runner.start_background()
    try:
        async with running(settings) as gw:
            acks = await exchange(gw, mllp_frame(report) + mllp_frame(retraction), 2)
            assert [ack_fields(a)["MSA"][1] for a in acks] == ["AA", "AA"]
            out = await read_all(
                tansu.bootstrap_servers, settings.research_topic, expect=2, within=60
            )
    finally:
        await runner.stop()
    assert len(out) == 2
    published, tombstone = sorted(out, key=lambda r: r.offset)
    assert published.value and published.key == tombstone.key
    assert tombstone.value is None
    text = attachment_text(json.loads(published.value)).encode()
    assert "CT CHEST" in text.decode() or "FINDINGS" in text.decode()
    assert not any(v in published.value or v in text for v in PHI)


async def test_stop_closes_idle_connections_and_answers_the_frame_in_hand(
    tansu: EmbeddedBroker,
) -> None:
    payload = (H / "mdm-t02-v25.hl7").read_bytes()
    async with running(settings_for(tansu)) as gw:
        idle_reader, idle_writer = await asyncio.open_connection(gw.host, gw.port)
        reader, writer = await asyncio.open_connection(gw.host, gw.port)
        writer.write(mllp_frame(payload))
        await writer.drain()
        await asyncio.sleep(0.2)  # the frame reaches the gateway before the stop
    # the gateway stopped (running() checked serve returned 0): the idle connection is
    # closed, the busy one got its ACK first
    assert await asyncio.wait_for(idle_reader.read(100), 5) == b""
    acks = FrameDecoder(1 << 20).feed(await asyncio.wait_for(reader.read(65536), 5))
    assert [ack_fields(a)["MSA"][1] for a in acks] == ["AA"]
    idle_writer.close()
    writer.close()


async def test_a_costly_message_holds_no_other_ack_and_is_answered_ar(
    tansu: EmbeddedBroker,
) -> None:
    """Issue 24, items 2 and 3: eight large HL7 messages held an unrelated ACK for 39 s and
    four got AE "not stored, resend" (so the sender re-sent them). With a small budget
    (a real setting) an ordinary large note is too costly: its parse runs in a child
    process killed at the budget, it is dead-lettered ``too_costly`` and answered AR (do
    not resend) — and an unrelated message sent after it on another connection is
    answered AA first."""
    costly = big_report(11, 4_000_000)
    small = (H / "mdm-t02-v25.hl7").read_bytes()
    s = settings_for(tansu, document_deadline_seconds=0.05, max_message_bytes=8 * 1024 * 1024)
    async with running(s) as gw:
        await exchange(gw, mllp_frame(small), 1)  # warm: producer, topics
        order: list[str] = []

        async def send(name: str, payload: bytes) -> bytes:
            [ack] = await exchange(gw, mllp_frame(payload), 1)
            order.append(name)
            return ack

        costly_task = asyncio.create_task(send("costly", costly))
        await asyncio.sleep(0.05)  # the costly frame is in: its route and parse have begun
        unrelated = await send("unrelated", small)
        costly_ack = await costly_task
        dead = await read_all(tansu.bootstrap_servers, s.deadletter_topic, expect=1)
    assert order == ["unrelated", "costly"]
    assert ack_fields(unrelated)["MSA"][1] == "AA"
    fields = ack_fields(costly_ack)
    assert fields["MSA"][1] == "AR"  # do not resend: the same bytes would cost the same
    assert fields["ERR"][8].startswith("too_costly: ")
    [letter] = dead
    assert headers_of(letter)["reason-class"] == "too_costly" and letter.value == costly
