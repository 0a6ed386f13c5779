"""One slow document never stalls the others, and every stall is visible (issue 24, items
2-4), against a real Tansu broker, the real pipeline and (for the store) a real PostgreSQL
with another session holding ``LOCK TABLE``.

* A document over its budget (``document_deadline_seconds``, here small so that an ordinary
  large note exceeds it) is dead-lettered ``too_costly`` — once, with its own reason, never
  retried — and the documents after it are published.
* ``LOCK TABLE`` on the key store from a second connection, with the documented store URL
  (no lock or statement timeout in it): within seconds ``/readyz`` answers 503 naming the
  stall, ``deidstream_stall_seconds{cause="keystore"}`` moves, the consumer lag counts the
  inputs that arrive meanwhile, the fault is counted once; after the lock, every input is
  published and nothing is dead-lettered.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from aiokafka import AIOKafkaProducer
from hl7_gen import big_report, report
from kafka_helpers import headers_of, produce, read_all
from test_keystore_stream_faults import Db, Locker, db  # noqa: F401 - the fixture
from test_stream_pipeline import pipeline_settings

from service.app import create_app
from service.broker import EmbeddedBroker
from service.metrics import Metrics
from service.runner import Runner
from service.wiring import real_processor_factory

pytestmark = pytest.mark.integration


async def _until(pred: Callable[[], bool], what: str, within: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while not pred():
        assert loop.time() < end, f"not reached in {within} s: {what}"
        await asyncio.sleep(0.05)


async def _one_by_one(bootstrap: str, topic: str, messages: list[tuple[bytes, bytes]]) -> None:
    """Each message its own request, as an interface engine or the MLLP gateway sends them
    (Tansu's end offsets count record batches, not records: a batch of 40 read as 1)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for key, value in messages:
            await producer.send_and_wait(topic, value, key=key)
    finally:
        await producer.stop()


def _lag(metrics: Metrics) -> float:
    return sum(
        s.value
        for m in metrics.registry.collect()
        if m.name == "deidstream_consumer_lag_messages"
        for s in m.samples
    )


async def test_a_costly_document_is_dead_lettered_and_the_others_go_on(
    tansu: EmbeddedBroker, tmp_path: Path
) -> None:
    s = pipeline_settings(
        tansu,
        tmp_path,
        document_deadline_seconds=1.0,
        max_message_bytes=8 * 1024 * 1024,
        topic_partitions=1,  # the costly input and the others on one partition, in order
    )
    topic = s.input_topics[0]
    costly = big_report(900, 6_000_000)  # an ordinary note, only long: ~2.5 s to detect
    warm = [(f"{700000 + n}".encode(), report(n + 900)) for n in range(4)]
    after = [(f"{701000 + n}".encode(), report(n + 1000)) for n in range(8)]
    metrics = Metrics()
    runner = Runner(s, metrics, real_processor_factory(s, metrics))
    runner.start_background()
    try:
        await _until(lambda: runner.ready, "ready")
        # first uses (lazy tables, the tagger) are paid by ordinary documents, not measured
        await produce(s.bootstrap_servers, topic, warm)
        await _until(lambda: runner.counts["published"] == 4, "warm-up published")
        await produce(s.bootstrap_servers, topic, [(b"700900", costly), *after])
        await _until(
            lambda: runner.counts["published"] == 12 and runner.in_flight == 0, "all decided"
        )
        dead = await read_all(s.bootstrap_servers, s.deadletter_topic, expect=1)
        research = await read_all(s.bootstrap_servers, s.research_topic, expect=12)
    finally:
        await runner.stop()
    [letter] = dead
    headers = headers_of(letter)
    assert headers["reason-class"] == "too_costly" and letter.value == costly
    assert "budget" in headers["reason"] and "Traceback" not in headers["reason"]
    assert len(research) == 12
    assert metrics.value("deidstream_messages_deadlettered_total", reason_class="too_costly") == 1
    assert metrics.value("deidstream_retries_total", operation="process") == 0  # not transient
    stages = [
        s.labels["stage"]
        for m in metrics.registry.collect()
        if m.name == "deidstream_documents_too_costly"
        for s in m.samples
        if s.name.endswith("_total") and s.value
    ]
    assert len(stages) == 1


async def test_a_locked_key_store_is_a_visible_stall_and_loses_nothing(
    tansu: EmbeddedBroker,
    tmp_path: Path,
    db: Db,  # noqa: F811 - the fixture imported above
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="deidstream.runner")
    plain_url = db.url.split("&options=")[0]  # the documented URL: no lock_timeout in it
    s = pipeline_settings(
        tansu,
        tmp_path,
        keystore_url=plain_url,
        master_key=db.key,
        keystore_migrate=False,
        stall_seconds=1.0,
    )
    topic = s.input_topics[0]
    first = [(f"{702000 + n}".encode(), report(n + 2000)) for n in range(4)]
    during = [(f"{703000 + n}".encode(), report(n + 3000)) for n in range(40)]
    metrics = Metrics()
    runner = Runner(s, metrics, real_processor_factory(s, metrics))
    app = create_app(s, runner=runner, start_runner=False)
    runner.start_background()
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")
    try:
        await _until(lambda: runner.ready, "ready")
        await produce(s.bootstrap_servers, topic, first)
        await _until(lambda: runner.counts["published"] == 4, "first published")
        await asyncio.sleep(0.5)

        locker = await asyncio.to_thread(Locker, db)
        try:
            locked_at = asyncio.get_running_loop().time()
            await _one_by_one(s.bootstrap_servers, topic, during)
            await _until(lambda: not runner.ready, "not ready", within=10)
            seen = asyncio.get_running_loop().time() - locked_at
            ready = await http.get("/readyz")
            assert ready.status_code == 503
            reasons = ready.json()["reasons"]
            assert any(r in ("stalled:keystore", "keystore_unreachable") for r in reasons)
            await _until(
                lambda: (
                    metrics.value("deidstream_stall_seconds", cause="keystore") > 0
                    or metrics.value(
                        "deidstream_keystore_fault", reason_class="keystore_contention"
                    )
                    == 1
                ),
                "a stall metric",
                within=10,
            )
            # the lag keeps counting while the worker is stalled (it read 1 before)
            await _until(lambda: _lag(metrics) >= 30, "lag counts the waiting inputs", 15)
            await asyncio.sleep(12.0)  # the lock lasts past several lock timeouts
            assert runner.counts["deadlettered"] == 0
            assert not runner.ready
        finally:
            await asyncio.to_thread(locker.release)

        await _until(
            lambda: runner.counts["published"] == 44 and runner.in_flight == 0, "all published"
        )
        await _until(lambda: runner.ready, "ready again", within=15)
        await _until(lambda: _lag(metrics) == 0, "no lag", within=10)
    finally:
        await http.aclose()
        await runner.stop()
    dead = await read_all(s.bootstrap_servers, s.deadletter_topic, within=2)
    research = await read_all(s.bootstrap_servers, s.research_topic, expect=44)
    assert dead == [] and len({r.key for r in research}) == 44
    faults = metrics.value("deidstream_stream_faults_total", reason_class="keystore_contention")
    stall_lines = [r.getMessage() for r in caplog.records if "stall (keystore)" in r.getMessage()]
    fault_lines = [r.getMessage() for r in caplog.records if "stream fault (" in r.getMessage()]
    print(
        f"\nLOCK TABLE 12+ s: not ready after {seen:.1f} s, faults_total={faults:.0f}, "
        f"stall lines={len(stall_lines)}, fault lines={len(fault_lines)}"
    )
    assert faults == 1  # one fault, counted once (it rose by 14-26)
    assert len(fault_lines) == 1
    assert seen < 8.0
