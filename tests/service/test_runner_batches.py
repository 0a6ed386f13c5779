"""One worker-thread hop per batch: the records of a batch go to the processor in one call
(``process_many`` when it has one, else ``process`` for each inside the worker thread), with
the one-by-one behaviour kept — a repeated research key is decided again after the earlier
output is durable, a retriable failure is retried alone and the records after it are
processed again, input errors are dead-lettered and the stream goes on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import Any

from test_runner_overlap import Consumer, Out, Proc, Producer, _batch, _until

from pipelines.errors import KeystoreUnavailable, NotHL7
from service.metrics import Metrics
from service.runner import Runner, process_each
from service.settings import Settings


class CountingExecutor(ThreadPoolExecutor):
    """Counts the hops that process records (``process``, ``process_many``); the other hops
    (a dead letter's diagnosis, its marks, the confirmation) are not processing."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="test-proc")
        self.submits = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        if getattr(getattr(fn, "func", fn), "__name__", "").startswith("process"):
            self.submits += 1
        return super().submit(fn, *args, **kwargs)


def _runner(proc: Any, log: list[str]) -> tuple[Runner, Producer, CountingExecutor]:
    settings = Settings(create_topics=False, retry_initial_seconds=0.01, retry_max_seconds=0.02)
    runner = Runner(settings, Metrics(), lambda: proc)
    executor = CountingExecutor()
    runner.worker.executor = executor
    producer = Producer(log)
    runner.clients.producer = producer  # type: ignore[assignment]
    runner.clients.consumer = Consumer(log)  # type: ignore[assignment]
    runner.health.broker_ok = True
    return runner, producer, executor


async def _finish(runner: Runner, producer: Producer) -> None:
    for _ in range(20):
        producer.ack_all()
        if runner.finishing.all_done():
            break
        await asyncio.sleep(0.02)
    await asyncio.wait_for(runner.drain(), 2)
    await runner.stop()


async def test_a_batch_is_processed_in_one_hop_with_process_alone() -> None:
    log: list[str] = []
    runner, producer, executor = _runner(Proc(log), log)
    await runner.prepare_processor()
    before = executor.submits
    await runner.handle_batch(_batch((0, "a"), (1, "b"), (2, "c"), (3, "d")))
    assert executor.submits - before == 1  # four records, one hop
    assert [e for e in log if e.startswith("process")] == [
        "process a",
        "process b",
        "process c",
        "process d",
    ]
    await _until(lambda: len(producer.acks) == 4)
    await _finish(runner, producer)
    assert log[-2:] == ["confirm a,b,c,d", "commit 4"]
    assert runner.counts["published"] == 4


class Many(Proc):
    """A processor with process_many: the runner must use it instead of process."""

    def __init__(self, log: list[str]) -> None:
        super().__init__(log)
        self.batches: list[int] = []

    def process_many(
        self,
        items: Sequence[tuple[bytes, str | None, datetime]],
        unconfirmed: Sequence[set[str]] = (),
    ) -> list[list[Out] | BaseException]:
        self.batches.append(len(items))
        out: list[list[Out] | BaseException] = []
        for raw, hint, now in items:
            if raw == b"bad":
                out.append(NotHL7("input does not start with MSH", offset=0))
            else:
                out.append(self.process(raw, content_hint=hint or "auto", now=now))
        return out


async def test_process_many_is_used_and_errors_come_back_per_item() -> None:
    log: list[str] = []
    proc = Many(log)
    runner, producer, executor = _runner(proc, log)
    await runner.prepare_processor()
    before = executor.submits
    await runner.handle_batch(_batch((0, "a"), (1, "bad"), (2, "c")))
    assert executor.submits - before == 1 and proc.batches == [3]
    await _until(lambda: len(producer.acks) == 3)
    await _finish(runner, producer)
    assert runner.counts["published"] == 2 and runner.counts["deadlettered"] == 1
    assert (
        runner.metrics.value("deidstream_messages_deadlettered_total", reason_class="not_hl7") == 1
    )
    assert "commit 3" in log


async def test_a_repeated_key_is_decided_after_the_earlier_output_is_durable() -> None:
    """process() alone: the run stops right after the repeat, so every record is decided
    exactly as one by one — the repeat is a duplicate, sent once."""
    log: list[str] = []
    runner, producer, _ex = _runner(Proc(log), log)
    await runner.prepare_processor()
    task = asyncio.create_task(runner.handle_batch(_batch((0, "a"), (1, "a"), (2, "b"))))
    await _until(lambda: len(producer.acks) == 1)
    assert "process b" not in log  # b waits until the repeat of a is settled
    producer.ack_all()
    await asyncio.wait_for(task, 2)
    await _until(lambda: len(producer.acks) == 2)
    await _finish(runner, producer)
    assert log == [
        "process a",
        "process a",
        "send a",
        "confirm a",
        "process a",
        "process b",
        "send b",
        "confirm b",
        "commit 3",
    ]
    assert runner.counts["duplicate"] == 1 and runner.counts["published"] == 2


async def test_a_repeated_key_with_process_many_is_sent_once() -> None:
    log: list[str] = []
    proc = Many(log)
    runner, producer, _ex = _runner(proc, log)
    await runner.prepare_processor()
    task = asyncio.create_task(
        runner.handle_batch(_batch((0, "a"), (1, "a"), (2, "b"), (3, "a"), (4, "c")))
    )
    for _ in range(50):
        producer.ack_all()
        if task.done():
            break
        await asyncio.sleep(0.02)
    await asyncio.wait_for(task, 2)
    await _finish(runner, producer)
    sends = [e for e in log if e.startswith("send")]
    assert sorted(sends) == ["send a", "send b", "send c"]
    assert runner.counts["duplicate"] == 2 and runner.counts["published"] == 3
    assert proc.batches[0] == 5  # the first run went to process_many whole
    assert log[-1] == "commit 5"


class Flaky(Proc):
    """process() fails with a retriable error for ``fail_on`` the first ``times`` calls."""

    def __init__(self, log: list[str], fail_on: str, times: int) -> None:
        super().__init__(log)
        self.fail_on, self.times = fail_on, times

    def process(self, raw: bytes, *, content_hint: str, now: Any) -> list[Out]:
        if raw.decode() == self.fail_on and self.times > 0:
            self.times -= 1
            self.log.append(f"fail {self.fail_on}")
            raise KeystoreUnavailable("database unreachable")
        return super().process(raw, content_hint=content_hint, now=now)


async def test_a_retriable_failure_is_retried_alone_then_the_rest_processed() -> None:
    log: list[str] = []
    runner, producer, _ex = _runner(Flaky(log, "b", 2), log)
    await runner.prepare_processor()
    await asyncio.wait_for(runner.handle_batch(_batch((0, "a"), (1, "b"), (2, "c"))), 5)
    # process() alone stops the run at the failure; b is retried with backoff, then c
    assert [e for e in log if not e.startswith("send")] == [
        "process a",
        "fail b",
        "fail b",
        "process b",
        "process c",
    ]
    assert runner.metrics.value("deidstream_retries_total", operation="process") == 2
    assert runner.keystore_ok  # ready again once the store answers
    await _until(lambda: len(producer.acks) == 3)
    await _finish(runner, producer)
    assert [e for e in log if e.startswith("send")] == ["send a", "send b", "send c"]
    assert log[-1] == "commit 3" and runner.counts["deadlettered"] == 0


class FlakyMany(Many):
    def __init__(self, log: list[str]) -> None:
        super().__init__(log)
        self.down = True

    def process_many(
        self,
        items: Sequence[tuple[bytes, str | None, datetime]],
        unconfirmed: Sequence[set[str]] = (),
    ) -> list[list[Out] | BaseException]:
        if self.down:  # the store is down for the whole first run
            self.down = False
            self.batches.append(len(items))
            return [KeystoreUnavailable("database unreachable") for _ in items]
        return super().process_many(items, unconfirmed)


async def test_after_a_retry_the_later_records_are_processed_again() -> None:
    log: list[str] = []
    proc = FlakyMany(log)
    runner, producer, _ex = _runner(proc, log)
    await runner.prepare_processor()
    await asyncio.wait_for(runner.handle_batch(_batch((0, "a"), (1, "b"), (2, "c"))), 5)
    # the first record is retried alone (process), the other two in a new run
    assert proc.batches == [3, 2]
    assert [e for e in log if e.startswith("process")] == ["process a", "process b", "process c"]
    await _until(lambda: len(producer.acks) == 3)
    await _finish(runner, producer)
    assert runner.counts["published"] == 3 and runner.counts["deadlettered"] == 0


def test_process_each_stops_after_a_repeat_or_a_retriable_failure() -> None:
    log: list[str] = []
    now = datetime(2026, 1, 1)
    items = [(b"a", "hl7v2", now), (b"b", None, now), (b"a", None, now), (b"c", None, now)]
    got = process_each(Proc(log), items)
    assert [len(r) for r in got if not isinstance(r, BaseException)] == [1, 1, 1]  # a, b, a
    got = process_each(Proc(log), items[1:], unconfirmed=[{"a"}])
    assert len(got) == 2  # b, then a (unconfirmed): stop
    got = process_each(Flaky(log, "b", 1), items)
    assert len(got) == 2 and isinstance(got[1], KeystoreUnavailable)
