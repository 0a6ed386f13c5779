"""The runner's Kafka mechanics against a real Tansu broker, with the toy processor."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from kafka_helpers import headers_of, produce, read_all, toy, unique
from toy_processor import ToyProcessor

from service.broker import EmbeddedBroker
from service.metrics import Metrics
from service.runner import Runner
from service.settings import Settings

pytestmark = pytest.mark.integration


def settings_for(broker: EmbeddedBroker, **over: Any) -> Settings:
    base = unique("t")
    values: dict[str, Any] = dict(
        bootstrap_servers=broker.bootstrap_servers,
        input_topics=(f"{base}.hl7v2", f"{base}.fhir"),
        research_topic=f"{base}.research",
        deadletter_topic=f"{base}.dlq",
        held_topic=f"{base}.held",
        group_id=f"{base}.g",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        retry_initial_seconds=0.05,
        retry_max_seconds=0.5,
        max_in_flight=50,
    )
    values.update(over)
    return Settings(**values)


async def start_runner(settings: Settings, proc: Any) -> Runner:
    runner = Runner(settings, Metrics(), lambda: proc)
    runner.start_background()
    for _ in range(200):
        if runner.ready:
            return runner
        await asyncio.sleep(0.05)
    await runner.stop()
    raise AssertionError("runner did not become ready")


async def wait_for(pred: Any, within: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while loop.time() < end:
        if pred():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached in time")


async def test_end_to_end_routes_every_kind(tansu: EmbeddedBroker) -> None:
    s = settings_for(tansu)
    proc = ToyProcessor()
    runner = await start_runner(s, proc)
    try:
        hl7, fhir = s.input_topics
        await produce(
            s.bootstrap_servers,
            hl7,
            [
                (b"p1", toy("p1", "d1", 1, "first")),
                (b"p1", toy("p1", "d1", 1, "first")),  # exact repeat -> duplicate
                (b"p1", toy("p1", "d1", 2, "second")),  # newer -> publish
                (b"p1", toy("p1", "d1", 1, "first")),  # older -> superseded
                (b"p2", b"\x0bMSH|broken"),  # malformed -> dead letter
                (b"p2", toy("p2", "d9", 1, "after the bad one")),  # the stream goes on
            ],
        )
        await produce(
            s.bootstrap_servers,
            fhir,
            [
                (b"p3", toy("p3", "d3", 1, "fhir doc")),
                (b"p3", toy("p3", "d3", 2, status="entered-in-error")),  # tombstone
                (b"p4", toy("p4", "d4", 1, "leaky", hold=True)),  # held back
            ],
        )
        await wait_for(
            lambda: (
                runner.counts["consumed"] == 9
                and runner.metrics.value("deidstream_offset_commits_total") >= 1
                and all(st.lag == 0 for st in runner.partitions.values())
            )
        )
        research = await read_all(s.bootstrap_servers, s.research_topic, expect=5)
        dlq = await read_all(s.bootstrap_servers, s.deadletter_topic, expect=1)
        held = await read_all(s.bootstrap_servers, s.held_topic, expect=1)
    finally:
        await runner.stop()

    docs = [r for r in research if r.value is not None]
    tombs = [r for r in research if r.value is None]
    assert len(docs) == 4 and len(tombs) == 1
    versions = sorted((json.loads(r.value)["text"], headers_of(r)["version"]) for r in docs)
    assert versions == [
        ("[REDACTED] AFTER THE BAD ONE", "1"),
        ("[REDACTED] FHIR DOC", "1"),
        ("[REDACTED] FIRST", "1"),
        ("[REDACTED] SECOND", "2"),
    ]
    for r in docs:
        h = headers_of(r)
        assert h["content-type"] == "application/fhir+json"
        assert h["source"] in ("hl7v2", "fhir")
        assert r.key is not None
    assert {headers_of(r)["source"] for r in docs} == {"hl7v2", "fhir"}

    assert len(dlq) == 1
    h = headers_of(dlq[0])
    assert dlq[0].value == b"\x0bMSH|broken"  # original bytes
    assert h["reason-class"] == "invalid_json"
    assert h["source-topic"] == hl7 and int(h["source-offset"]) >= 0
    assert "first-seen" in h

    assert len(held) == 1
    body = json.loads(held[0].value)
    assert body["reason_class"] == "leak_guard" and body["source_topic"] == fhir
    assert "leaky" not in held[0].value.decode().lower()  # no text on a non-secure topic

    m = runner.metrics
    assert m.value("deidstream_documents_published_total", kind="document") == 4
    assert m.value("deidstream_documents_published_total", kind="tombstone") == 1
    assert m.value("deidstream_documents_dropped_total", reason="duplicate") == 1
    assert m.value("deidstream_documents_dropped_total", reason="superseded") == 1
    assert m.value("deidstream_messages_deadlettered_total", reason_class="invalid_json") == 1
    assert m.value("deidstream_documents_held_total", reason="leak_guard") == 1
    assert m.value("deidstream_messages_consumed_total", topic=hl7, source="hl7v2") == 6
    assert m.value("deidstream_messages_consumed_total", topic=fhir, source="fhir") == 3
    assert m.value("deidstream_phi_spans_total", category="NAME") == 4
    assert m.value("deidstream_end_to_end_latency_seconds_count") == 5


async def test_restart_replays_nothing_twice(tansu: EmbeddedBroker, tmp_path: Path) -> None:
    """Committed offsets + confirmed marks: a second run over the same group publishes nothing
    new; a fresh group over the same input (full replay) only drops duplicates."""
    s = settings_for(tansu)
    marks = str(tmp_path / "marks.db")
    hl7 = s.input_topics[0]
    await produce(s.bootstrap_servers, hl7, [(b"k", toy(f"p{i}", "d", 1)) for i in range(20)])
    runner = await start_runner(s, ToyProcessor(marks))
    await wait_for(lambda: runner.counts["published"] == 20)
    await runner.stop()

    replay = s.model_copy(update={"group_id": s.group_id + ".replay"})
    runner = await start_runner(replay, ToyProcessor(marks))
    await wait_for(lambda: runner.counts["consumed"] == 20)
    await runner.stop()
    assert runner.counts["published"] == 0
    assert runner.metrics.value("deidstream_documents_dropped_total", reason="duplicate") == 20
    research = await read_all(s.bootstrap_servers, s.research_topic, expect=20)
    assert len(research) == 20


async def test_transient_failure_retries_without_loss(
    tansu: EmbeddedBroker, tmp_path: Path
) -> None:
    """Key store 'down': processing retries with backoff, readiness false, nothing committed;
    once it is back every message goes out exactly once."""
    s = settings_for(tansu)
    fail = tmp_path / "down"
    proc = ToyProcessor(fail_file=str(fail))
    runner = await start_runner(s, proc)
    try:
        fail.touch()  # while idle: the readiness probe notices the store is gone ...
        await wait_for(lambda: not runner.ready, within=15)
        fail.unlink()
        await wait_for(lambda: runner.ready, within=15)  # ... and that it is back
        fail.touch()
        await produce(
            s.bootstrap_servers, s.input_topics[0], [(None, toy(f"p{i}", "d", 1)) for i in range(5)]
        )
        await wait_for(
            lambda: runner.metrics.value("deidstream_retries_total", operation="process") >= 3
        )
        assert not runner.ready and not runner.keystore_ok
        assert runner.metrics.value("deidstream_offset_commits_total") == 0
        fail.unlink()
        await wait_for(lambda: runner.counts["published"] == 5)
        assert runner.ready
    finally:
        await runner.stop()
    research = await read_all(s.bootstrap_servers, s.research_topic, expect=5)
    assert len(research) == 5


async def test_rebalance_mid_stream_finishes_the_batch(
    tansu: EmbeddedBroker, tmp_path: Path
) -> None:
    """A second member joins while the first is busy: the revoke waits for the batch in
    flight, which publishes and commits; the new owner resumes from there — nothing is lost
    and nothing published twice."""
    s = settings_for(tansu, max_in_flight=5)
    marks = str(tmp_path / "marks.db")
    slow = ToyProcessor(marks)
    original = slow.process

    def slower(raw: bytes, **kw: Any) -> Any:
        import time

        time.sleep(0.01)  # keep the first member busy while the group rebalances
        return original(raw, **kw)

    slow.process = slower  # type: ignore[method-assign]
    total = 300
    await produce(
        s.bootstrap_servers,
        s.input_topics[0],
        [(b"k%d" % i, toy(f"p{i}", "d", 1)) for i in range(total)],
    )
    first = await start_runner(s, slow)
    await wait_for(lambda: first.counts["published"] >= 20)
    second = await start_runner(s, ToyProcessor(marks))
    try:
        await wait_for(
            lambda: (
                first.counts["consumed"] + second.counts["consumed"] >= total
                and first.status()["total_lag"] == 0
                and second.status()["total_lag"] == 0
            ),
            within=60,
        )
        assert second.counts["published"] > 0  # the newcomer got partitions and worked
    finally:
        await asyncio.gather(first.stop(), second.stop())
    research = await read_all(s.bootstrap_servers, s.research_topic, expect=total)
    assert len({r.key for r in research}) == total
    assert len(research) == total  # no document published twice


async def test_secure_held_topic_gets_the_original_bytes(tansu: EmbeddedBroker) -> None:
    s = settings_for(tansu, held_topic_secure=True)
    runner = await start_runner(s, ToyProcessor())
    raw = toy("p1", "d1", 1, "leaky", hold=True)
    try:
        await produce(s.bootstrap_servers, s.input_topics[1], [(b"p1", raw)])
        await wait_for(lambda: runner.counts["held"] == 1)
    finally:
        await runner.stop()
    held = await read_all(s.bootstrap_servers, s.held_topic, expect=1)
    assert [r.value for r in held] == [raw]
    h = headers_of(held[0])
    assert h["reason-class"] == "leak_guard" and h["source-topic"] == s.input_topics[1]
    assert await read_all(s.bootstrap_servers, s.research_topic) == []


async def test_output_the_broker_refuses_is_dead_lettered(tansu: EmbeddedBroker) -> None:
    """A research document too large for the broker cannot block its partition: the input
    goes to the dead-letter topic and the next message is published."""
    s = settings_for(tansu, max_message_bytes=256 * 1024)  # producer limit: 1 MiB
    runner = await start_runner(s, ToyProcessor())
    try:
        await produce(
            s.bootstrap_servers,
            s.input_topics[0],
            [
                (b"p1", toy("p1", "d1", 1, "huge output", pad=2_000_000)),
                (b"p1", toy("p1", "d2", 1, "next one")),
            ],
        )
        await wait_for(
            lambda: runner.counts["published"] == 1 and runner.counts["deadlettered"] == 1
        )
    finally:
        await runner.stop()
    dead = await read_all(s.bootstrap_servers, s.deadletter_topic, expect=1)
    assert headers_of(dead[0])["reason-class"] == "output_rejected"
    assert b"huge output" in dead[0].value  # the original input, for a later replay
    research = await read_all(s.bootstrap_servers, s.research_topic, expect=1)
    assert [json.loads(r.value)["text"] for r in research] == ["[REDACTED] NEXT ONE"]


async def test_partial_input_publishes_the_good_part_and_dead_letters_the_input(
    tansu: EmbeddedBroker,
) -> None:
    s = settings_for(tansu)
    runner = await start_runner(s, ToyProcessor())
    raw = toy("p1", "d1", 1, "good half", partial=True)
    try:
        await produce(s.bootstrap_servers, s.input_topics[0], [(b"p1", raw)])
        await wait_for(
            lambda: runner.counts["published"] == 1 and runner.counts["deadlettered"] == 1
        )
    finally:
        await runner.stop()
    research = await read_all(s.bootstrap_servers, s.research_topic, expect=1)
    dead = await read_all(s.bootstrap_servers, s.deadletter_topic, expect=1)
    assert json.loads(research[0].value)["text"] == "[REDACTED] GOOD HALF"
    assert dead[0].value == raw
    h = headers_of(dead[0])
    assert h["reason-class"] == "partial_input" and "entry=1" in h["reason"]
