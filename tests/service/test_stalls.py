"""Every stall is visible (issue 24, items 3 and 4): the watchdog's causes (a document past
its budget, a key store call outstanding, the broker unreachable) reach readiness, the
``deidstream_stall_seconds`` gauge and one log line at each end; a fault of the stream is
counted once however often it relapses; the lag is refreshed from the broker's end offsets,
not from fetches; repeated log lines are bounded."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka import TopicPartition

from keystore.errors import KeystoreError
from pipelines.deadline import deadline
from service.logs import RepeatLimit
from service.metrics import Metrics
from service.runner.health import Health
from service.runner.partitions import Assignment
from service.runner.stalls import Stalls
from service.settings import Settings


class Contention(KeystoreError):
    reason_class = "keystore_contention"


class NoClients:
    consumer = None


def _parts(**settings: Any) -> tuple[Metrics, Health, Stalls]:
    metrics = Metrics()
    health = Health(metrics, lambda: True)
    health.started = True
    health.broker_ok = True
    health.keystore_ok = True
    s = Settings(**settings)
    stalls = Stalls(s, metrics, health, NoClients(), Assignment(metrics))  # type: ignore[arg-type]
    return metrics, health, stalls


def test_a_key_store_call_outstanding_is_a_stall_until_it_returns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="deidstream.runner")
    metrics, health, stalls = _parts(stall_seconds=2.0)
    assert stalls.tick() == {} and health.ready
    now = time.monotonic()
    metrics.store_calls.begin()  # as InstrumentedStore does around every call
    metrics.store_calls.begin()  # nested (a transaction's statement)
    metrics.store_calls.end()
    assert stalls.tick(now + 1.0) == {}  # not yet: under stall_seconds
    found = stalls.tick(now + 3.0)
    assert set(found) == {"keystore"} and found["keystore"] > 2.9
    assert not health.ready
    assert metrics.value("deidstream_stall_seconds", cause="keystore") > 2.9
    assert metrics.value("deidstream_ready") == 0
    stalls.tick(now + 4.0)
    metrics.store_calls.end()
    assert stalls.tick(now + 5.0) == {} and health.ready
    assert metrics.value("deidstream_stall_seconds", cause="keystore") == 0
    lines = [r.getMessage() for r in caplog.records if "stall (keystore)" in r.getMessage()]
    assert len(lines) == 2 and "ended" in lines[1]  # one at the start, one at the end


@pytest.fixture
def busy_document() -> Iterator[threading.Event]:
    inside, release = threading.Event(), threading.Event()

    def work() -> None:
        with deadline(0.05):
            inside.set()
            release.wait(5)  # a step that does not check the budget

    thread = threading.Thread(target=work)
    thread.start()
    assert inside.wait(5)
    yield release
    release.set()
    thread.join()


def test_a_document_past_its_budget_is_a_stall(busy_document: threading.Event) -> None:
    metrics, health, stalls = _parts()
    time.sleep(0.15)
    found = stalls.tick()
    assert "document" in found and found["document"] >= 0.15
    assert not health.ready
    assert metrics.value("deidstream_stall_seconds", cause="document") >= 0.15
    busy_document.set()
    time.sleep(0.05)
    assert "document" not in stalls.tick()


def test_the_broker_unreachable_is_a_stall_after_stall_seconds() -> None:
    metrics, health, stalls = _parts(stall_seconds=1.0)
    health.broker_ok = False
    since = health.broker_down_since
    assert since is not None
    health.broker_ok = False  # still down: the stall's start does not move
    assert health.broker_down_since == since
    assert stalls.tick(since + 0.5) == {}
    assert set(stalls.tick(since + 2.0)) == {"broker"}
    health.broker_ok = True
    assert health.broker_down_since is None and stalls.tick() == {}


def test_a_stream_fault_is_counted_once_however_often_it_relapses(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A lock that times out record after record: each retried record succeeds, the next
    meets the lock again. One fault, one count, one line each way (it rose by 14-26)."""
    caplog.set_level(logging.WARNING, logger="deidstream.runner")
    metrics, health, _ = _parts()
    for _ in range(20):
        health.enter_stream_fault(Contention("lock"), "process")
        assert not health.ready
        health.clear_stream_fault("process")
    assert metrics.value("deidstream_stream_faults_total", reason_class="keystore_contention") == 1
    lines = [r.getMessage() for r in caplog.records if "stream fault" in r.getMessage()]
    assert len(lines) == 2, lines
    assert health.ready


def test_another_fault_is_counted_on_its_own() -> None:
    metrics, health, _ = _parts()
    health.enter_stream_fault(Contention("lock"), "process")
    health.clear_stream_fault("process")
    other = KeystoreError("denied")
    health.enter_stream_fault(other, "process")
    assert metrics.value("deidstream_stream_faults_total", reason_class="keystore") == 1
    assert metrics.value("deidstream_stream_faults_total", reason_class="keystore_contention") == 1


class EndsConsumer:
    """What refresh_ends uses of aiokafka's consumer."""

    def __init__(self, ends: dict[TopicPartition, int], committed: int) -> None:
        self.ends = ends
        self._committed = committed

    def assignment(self) -> set[TopicPartition]:
        return set(self.ends)

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.ends[tp] for tp in tps}

    async def committed(self, tp: TopicPartition) -> int:
        return self._committed


async def test_the_lag_grows_from_end_offsets_without_any_fetch() -> None:
    metrics = Metrics()
    assignment = Assignment(metrics)
    tp = TopicPartition("in", 0)
    assignment.assigned([tp])
    assignment.committed({tp: 10})
    consumer = EndsConsumer({tp: 11}, committed=10)
    await assignment.refresh_ends(consumer)  # type: ignore[arg-type]
    assert metrics.value("deidstream_consumer_lag_messages", topic="in", partition="0") == 1
    consumer.ends[tp] = 410  # 399 inputs arrive while the worker is stalled
    await assignment.refresh_ends(consumer)  # type: ignore[arg-type]
    assert metrics.value("deidstream_consumer_lag_messages", topic="in", partition="0") == 400
    fresh = TopicPartition("in", 1)  # never committed by us: the group's committed offset
    assignment.assigned([fresh])
    consumer.ends[fresh] = 50
    await assignment.refresh_ends(consumer)  # type: ignore[arg-type]
    assert metrics.value("deidstream_consumer_lag_messages", topic="in", partition="1") == 40


def test_repeated_log_lines_are_bounded() -> None:
    """A broker outage logged ~200 lines per second: now ``burst`` per kind per window,
    and the next line let through says how many were left out."""
    limit = RepeatLimit(burst=3, window=0.2)

    def record(msg: str) -> logging.LogRecord:
        return logging.LogRecord("aiokafka", logging.ERROR, __file__, 1, msg, (), None)

    passed = [limit.filter(record("Unable connect to node %s")) for _ in range(1000)]
    assert sum(passed) == 3
    assert limit.filter(record("another kind of line"))
    time.sleep(0.25)
    late = record("Unable connect to node %s")
    assert limit.filter(late) and "997 similar lines left out" in str(late.msg)


def test_the_service_console_handler_gets_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from service.logs import configure_logging

    root = logging.getLogger()
    console = logging.StreamHandler()
    monkeypatch.setattr(root, "handlers", [console])
    configure_logging("info")
    configure_logging("info")  # twice: one filter
    assert [type(f) for f in console.filters] == [RepeatLimit]


async def test_a_broker_outage_logs_a_bounded_number_of_lines() -> None:
    """The runner against a broker that does not answer, retrying fast: hundreds of
    failures (aiokafka's and the runner's lines, ~60 a second), a few lines in the log."""
    import asyncio
    import io

    from toy_processor import ToyProcessor

    from service.broker import free_port
    from service.runner import Runner

    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.addFilter(RepeatLimit())
    root = logging.getLogger()
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.INFO)
    metrics = Metrics()
    settings = Settings(
        bootstrap_servers=f"127.0.0.1:{free_port()}",
        retry_initial_seconds=0.01,
        retry_max_seconds=0.02,
    )
    runner = Runner(settings, metrics, ToyProcessor)
    try:
        runner.start_background()
        await asyncio.sleep(3.0)
    finally:
        await runner.stop()
        root.removeHandler(handler)
        root.setLevel(level)
    failures = metrics.value("deidstream_retries_total", operation="connect")
    lines = buffer.getvalue().splitlines()
    assert failures >= 30, failures
    assert len(lines) <= 15, lines
