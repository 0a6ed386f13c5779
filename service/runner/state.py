"""The state every part of the runner shares (declared once here; set in
``Runner.__init__``), and the few methods the parts call across modules."""

from __future__ import annotations

import asyncio
from collections import Counter as Tally
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from service.metrics import Metrics
from service.settings import Settings

if TYPE_CHECKING:
    from pipelines.errors import DeidstreamError
    from service.runner.contract import Processor, ProcessorFactory
    from service.runner.outputs import Handled, Outputs
    from service.runner.partitions import PartitionState


class RunnerState:
    """Attributes of a :class:`service.runner.Runner` and the cross-part methods."""

    settings: Settings
    metrics: Metrics
    processor_factory: ProcessorFactory
    on_fatal: Callable[[BaseException], None] | None
    batch_lock: asyncio.Lock
    partitions: dict[TopicPartition, PartitionState]
    generation: int  # bumped on every revoke/assign
    counts: Tally[str]
    outputs: Outputs
    broker_ok: bool
    keystore_ok: bool
    keystore_fault: str | None  # reason class while the store is unusable
    # reason class while a fault of the stream (a key store/database error that is not one
    # record's fault) stops the batches, and which operation (process, confirm) met it
    stream_fault: str | None
    _stream_fault_at: tuple[str, float] | None
    _integrity_streak: list[str]  # patients whose records failed in a row
    started: bool
    _stop: asyncio.Event
    _executor: ThreadPoolExecutor
    _processor: Processor | None
    _producer: AIOKafkaProducer | None
    _consumer: AIOKafkaConsumer | None
    _task: asyncio.Task[None] | None
    _last_probe: float
    # batches processed and not yet committed: (finisher task, research keys, records)
    _finishing: list[tuple[asyncio.Task[None], set[str], int]]
    _finishing_records: int  # the records of those batches
    _last_acked: asyncio.Future[None] | None  # resolves when the last batch's acks are in
    _last_lag: float  # when the lag was last refreshed (monotonic)
    _processing: int  # records of the batch being processed now
    worker_busy_seconds: float  # wall time the processing thread spent working
    _topic_hints: dict[str, str]  # content hint of a record without headers, by topic

    @staticmethod
    def _need(thing: Any) -> Any:
        if thing is None:
            raise RuntimeError("the runner is not started")
        return thing

    # implemented by the parts (see service.runner.loop.Runner's bases)

    @property
    def ready(self) -> bool:
        raise NotImplementedError

    def _update_ready(self) -> None:
        raise NotImplementedError

    async def _retry(
        self,
        operation: str,
        fn: Callable[[], Any],
        retriable: Callable[[BaseException], bool] = ...,
    ) -> Any:
        raise NotImplementedError

    def _enter_stream_fault(self, exc: BaseException, operation: str) -> None:
        raise NotImplementedError

    def _clear_stream_fault(self, operation: str) -> None:
        raise NotImplementedError

    async def _sleep(self, seconds: float) -> None:
        raise NotImplementedError

    def _backoff(self, attempt: int) -> float:
        raise NotImplementedError

    async def _connect_producer(self) -> None:
        raise NotImplementedError

    async def _ensure_topics(self) -> None:
        raise NotImplementedError

    async def _after_outage(self) -> None:
        raise NotImplementedError

    async def _reopen_processor(self) -> None:
        raise NotImplementedError

    def _set_store_fault(self, reason_class: str, detail: DeidstreamError | None = None) -> None:
        raise NotImplementedError

    def _clear_store_fault(self) -> None:
        raise NotImplementedError

    def _store_wide(self, exc: DeidstreamError, subject: str | None) -> bool:
        raise NotImplementedError

    async def drain(self) -> None:
        raise NotImplementedError

    def _unconfirmed_keys(self) -> list[set[str]]:
        raise NotImplementedError

    def _set_in_flight_gauge(self) -> None:
        raise NotImplementedError

    async def _flush(self, handled: list[Handled]) -> None:
        raise NotImplementedError

    async def _finish(
        self,
        previous: asyncio.Task[None] | None,
        previous_acked: asyncio.Future[None] | None,
        handled: list[Handled],
        offsets: dict[TopicPartition, int],
        acked: asyncio.Future[None],
    ) -> None:
        raise NotImplementedError

    def forget_partition(self, tp: TopicPartition) -> None:
        raise NotImplementedError
