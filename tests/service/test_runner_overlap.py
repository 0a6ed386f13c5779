"""Batches overlap: the next batch is processed while the previous one waits for its acks and
commit — but commits stay in batch order after every earlier output is acknowledged and
confirmed, a batch's sends start after the previous batch's acks (not after its commit), a research key repeated
across overlapping batches is decided again after the earlier batch is durable, and
everything fetched counts against max_in_flight. The consumer and producer here are small
fakes that let the test hold acknowledgements back (the Kafka side is covered by
tests/integration)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka import TopicPartition

from pipelines.outcome import Outcome as Out
from pipelines.outcome import OutcomeKind
from service.metrics import Metrics
from service.runner import BaseProcessor, Runner
from service.settings import Settings

TP = TopicPartition("in.hl7v2", 0)


@dataclass
class Rec:
    offset: int
    value: bytes
    key: bytes = b"k"
    topic: str = TP.topic
    partition: int = TP.partition
    timestamp: int = 0
    headers: list[tuple[str, bytes]] = field(default_factory=list)


class Proc(BaseProcessor):
    """Publishes a key the first time, a duplicate once that key's publish is confirmed."""

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.confirmed: set[str] = set()

    def process(self, raw: bytes, *, content_hint: str, now: Any) -> list[Out]:
        key = raw.decode()
        self.log.append(f"process {key}")
        if key in self.confirmed:
            return [Out(kind=OutcomeKind.DUPLICATE)]
        return [Out(kind=OutcomeKind.PUBLISH, research_key=key, value=raw)]

    def commit(self, outcomes: Sequence[Out]) -> None:
        keys = [o.research_key for o in outcomes if o.research_key]
        self.log.append(f"confirm {','.join(keys)}")
        self.confirmed.update(k for k in keys if k)


class Producer:
    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.acks: list[tuple[bytes, asyncio.Future[Any]]] = []

    async def send(
        self, topic: str, value: bytes | None, *, key: bytes | None, headers: Any
    ) -> asyncio.Future[Any]:
        self.log.append(f"send {key.decode() if key else ''}")
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.acks.append((key or b"", fut))
        return fut

    def ack_all(self) -> None:
        for _key, fut in self.acks:
            if not fut.done():
                fut.set_result(None)


class Consumer:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def assignment(self) -> set[TopicPartition]:
        return {TP}

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        self.log.append(f"commit {offsets[TP]}")


def _runner(log: list[str], **over: Any) -> tuple[Runner, Producer]:
    return runner_with(Proc(log), log, **over)


def runner_with(proc: Any, log: list[str], **over: Any) -> tuple[Runner, Producer]:
    """A runner over ``proc`` with the logging consumer and producer doubles."""
    settings = Settings(
        create_topics=False, retry_initial_seconds=0.01, retry_max_seconds=0.02, **over
    )
    runner = Runner(settings, Metrics(), lambda: proc)
    producer = Producer(log)
    runner.clients.producer = producer  # type: ignore[assignment]
    runner.clients.consumer = Consumer(log)  # type: ignore[assignment]
    runner.health.broker_ok = True
    return runner, producer


async def _until(pred: Any) -> None:
    for _ in range(500):
        if pred():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def _batch(*items: tuple[int, str]) -> dict[TopicPartition, list[Rec]]:
    return {TP: [Rec(offset, value.encode()) for offset, value in items]}


async def test_next_batch_is_processed_while_the_previous_waits_for_acks() -> None:
    log: list[str] = []
    runner, producer = _runner(log)
    await runner.prepare_processor()
    await asyncio.wait_for(runner.handle_batch(_batch((0, "a"), (1, "b"))), 2)
    await _until(lambda: len(producer.acks) == 2)
    assert runner.in_flight == 2  # sent, not acknowledged: still in flight
    # the first batch's acks are held back, yet the second batch is processed
    await asyncio.wait_for(runner.handle_batch(_batch((2, "c"))), 2)
    assert "process c" in log
    assert runner.in_flight == 3
    assert runner.metrics.value("deidstream_messages_in_flight") == 3
    await asyncio.sleep(0.05)
    assert not any(e.startswith("commit") for e in log)  # nothing acknowledged yet
    assert "send c" not in log  # a batch's sends wait for the previous batch's acks
    producer.ack_all()
    await _until(lambda: "send c" in log)
    producer.ack_all()
    await asyncio.wait_for(runner.drain(), 2)
    order = [e for e in log if not e.startswith("process")]
    # c is sent as soon as a and b are acknowledged (not after their confirm and commit);
    # confirms and commits stay in batch order
    assert [e for e in order if e.startswith("send")] == ["send a", "send b", "send c"]
    assert [e for e in order if not e.startswith("send")] == [
        "confirm a,b",
        "commit 2",
        "confirm c",
        "commit 3",
    ]
    assert runner.in_flight == 0
    await runner.stop()


async def test_a_key_repeated_across_overlapping_batches_is_decided_again() -> None:
    log: list[str] = []
    runner, producer = _runner(log)
    await runner.prepare_processor()
    await runner.handle_batch(_batch((0, "a")))
    await _until(lambda: len(producer.acks) == 1)
    second = asyncio.create_task(runner.handle_batch(_batch((1, "a"))))
    await asyncio.sleep(0.05)
    assert not second.done()  # waits for the earlier batch before deciding again
    producer.ack_all()
    await asyncio.wait_for(second, 2)
    await asyncio.wait_for(runner.drain(), 2)
    assert log == [
        "process a",
        "send a",
        "process a",
        "confirm a",
        "commit 1",
        "process a",
        "confirm ",
        "commit 2",
    ]  # the repeat is a duplicate: sent once
    assert runner.counts["duplicate"] == 1
    await runner.stop()


async def test_everything_fetched_counts_against_max_in_flight() -> None:
    log: list[str] = []
    runner, producer = _runner(log, max_in_flight=3)
    await runner.prepare_processor()
    await runner.handle_batch(_batch((0, "a"), (1, "b")))
    assert runner.settings.max_in_flight - runner.in_flight == 1  # room for one more only
    await runner.handle_batch(_batch((2, "c")))
    assert runner.in_flight == 3
    waiting = asyncio.create_task(runner.finishing.wait_oldest())
    await asyncio.sleep(0.05)
    assert not waiting.done()  # the run loop would wait here instead of fetching
    producer.ack_all()
    await asyncio.wait_for(waiting, 2)
    assert runner.in_flight <= 1
    producer.ack_all()
    await _until(lambda: "send c" in log)
    producer.ack_all()
    await asyncio.wait_for(runner.drain(), 2)
    await runner.stop()


async def test_a_batch_is_sent_after_the_previous_acks_not_after_its_commit() -> None:
    log: list[str] = []
    runner, producer = _runner(log)
    committed = asyncio.Event()

    class SlowCommit(Consumer):
        async def commit(self, offsets: dict[TopicPartition, int]) -> None:
            await committed.wait()  # the previous batch's offset commit hangs
            await super().commit(offsets)

    runner.clients.consumer = SlowCommit(log)  # type: ignore[assignment]
    await runner.prepare_processor()
    await runner.handle_batch(_batch((0, "a")))
    await _until(lambda: len(producer.acks) == 1)
    await runner.handle_batch(_batch((1, "b")))
    producer.ack_all()
    await _until(lambda: "send b" in log)  # sent while a's commit is still pending
    assert not any(e.startswith("commit") for e in log)
    producer.ack_all()
    await asyncio.sleep(0.05)
    assert "confirm b" not in log  # b's confirm and commit wait for a's commit
    committed.set()
    await asyncio.wait_for(runner.drain(), 2)
    assert [e for e in log if e.startswith(("confirm", "commit"))] == [
        "confirm a",
        "commit 1",
        "confirm b",
        "commit 2",
    ]
    await runner.stop()


class Backlog(Consumer):
    """A consumer with records waiting: ``getmany`` hands out at most ``max_records``."""

    def __init__(self, log: list[str], recs: list[Rec]) -> None:
        super().__init__(log)
        self.recs = recs
        self.asked: list[int] = []

    async def getmany(
        self, *, timeout_ms: int, max_records: int
    ) -> dict[TopicPartition, list[Rec]]:
        self.asked.append(max_records)
        if not self.recs:
            await asyncio.sleep(timeout_ms / 1000)
            return {}
        taken, self.recs = self.recs[:max_records], self.recs[max_records:]
        return {TP: taken}

    def highwater(self, tp: TopicPartition) -> int | None:
        return None

    async def position(self, tp: TopicPartition) -> int:
        return 0


async def test_a_backlog_is_fetched_in_batches_that_overlap() -> None:
    # batches of max_batch_records, below max_in_flight: while the first batch waits for its
    # acks the next ones are fetched and processed (a batch as large as max_in_flight left
    # no room for the next one until the first was committed)
    log: list[str] = []
    runner, producer = _runner(log, max_in_flight=9, max_batch_records=3)
    consumer = Backlog(log, [Rec(i, f"k{i}".encode()) for i in range(9)])
    runner.clients.consumer = consumer  # type: ignore[assignment]
    runner.prober.last_probe = float("inf")  # no broker probe while idle
    await runner.prepare_processor()
    task = asyncio.create_task(runner.run())
    await _until(lambda: len(producer.acks) == 3)  # the first batch sent, acks held back
    await _until(lambda: "process k8" in log)  # every batch processed meanwhile
    assert all(0 < n <= 3 for n in consumer.asked)
    assert runner.in_flight == 9
    assert not any(e.startswith("commit") for e in log)
    while not any(e == "commit 9" for e in log):
        producer.ack_all()
        await asyncio.sleep(0.01)
    assert [e for e in log if e.startswith("commit")] == ["commit 3", "commit 6", "commit 9"]
    busy = runner.status()["worker_busy_seconds"]
    assert busy > 0
    assert runner.metrics.value("deidstream_processing_busy_seconds_total") == pytest.approx(
        busy, abs=1e-6
    )
    runner.request_stop()
    await asyncio.wait_for(task, 2)
    await runner.stop()
