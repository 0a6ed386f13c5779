"""The runner itself: lifecycle (start, stop, drain), the fetch loop, and the batches in
flight. The parts live beside it: ``batches`` (processing), ``delivery`` (publish, confirm,
commit), ``outputs`` (what is sent), ``health`` (readiness, store faults, status),
``partitions`` (assignment, lag), ``clients`` (Kafka), ``retry`` (backoff)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter as Tally
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from time import monotonic, perf_counter
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError

from pipelines.errors import KeystoreError
from service.metrics import Metrics
from service.runner import fetchwait
from service.runner.batches import Batches
from service.runner.clients import Clients, new_consumer
from service.runner.contract import Processor, ProcessorFactory
from service.runner.delivery import Delivery
from service.runner.fetchwait import FetchWait
from service.runner.health import Health
from service.runner.outputs import Outputs
from service.runner.partitions import Partitions, PartitionState, RebalanceListener
from service.runner.retry import Retries, Stopping, StoreFault
from service.settings import Settings

log = logging.getLogger("deidstream.runner")


class WorkerThread(ThreadPoolExecutor):
    """The one processing thread, with the wall time of its work added to ``busy`` (the
    saturation signal: how much of the time the processor is working)."""

    def __init__(self, busy: Callable[[float], None]) -> None:
        super().__init__(max_workers=1, thread_name_prefix="deidstream-proc")
        self._busy = busy

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        return super().submit(self._timed, fn, args, kwargs)

    def _timed(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        start = perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self._busy(perf_counter() - start)


class Runner(Batches, Delivery, Health, Partitions, Clients, Retries):
    """Consumer group member + producer + processor, with readiness and status."""

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        processor_factory: ProcessorFactory,
        *,
        on_fatal: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics
        self.processor_factory = processor_factory
        self.on_fatal = on_fatal
        self.batch_lock = asyncio.Lock()
        self.partitions: dict[TopicPartition, PartitionState] = {}
        self.generation = 0  # bumped on every revoke/assign
        self.counts: Tally[str] = Tally()
        self.outputs = Outputs(settings, metrics, self.counts)
        self.broker_ok = False
        self.keystore_ok = False
        self.keystore_fault: str | None = None  # reason class while the store is unusable
        self.stream_fault: str | None = None  # reason class while a stream fault stops it
        self._stream_fault_at: tuple[str, float] | None = None  # (operation, since)
        self._integrity_streak: list[str] = []  # patients whose records failed in a row
        self.started = False
        self._stop = asyncio.Event()
        self.worker_busy_seconds = 0.0  # wall time the processing thread spent working
        self._busy_inc = self.metrics.processing_busy.inc
        self._executor = WorkerThread(self._add_busy)
        self._processor: Processor | None = None
        self._producer: AIOKafkaProducer | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._task: asyncio.Task[None] | None = None
        self._last_probe = 0.0
        # batches processed and not yet committed: (finisher task, research keys, records)
        self._finishing: list[tuple[asyncio.Task[None], set[str], int]] = []
        self.fetch_wait = FetchWait(settings.fetch_max_wait_ms, settings.fetch_max_wait_ceiling_ms)
        self._finishing_records = 0  # the records of those batches
        self._last_acked: asyncio.Future[None] | None = None
        self._last_lag = 0.0
        self._processing = 0  # records of the batch being processed now
        self._topic_hints: dict[str, str] = {}

    def _add_busy(self, seconds: float) -> None:
        """Called on the processing thread only (its one writer)."""
        self.worker_busy_seconds += seconds
        self._busy_inc(seconds)

    # ---------------------------------------------------------------- lifecycle

    def start_background(self) -> asyncio.Task[None]:
        """Start consuming in a task of the running loop (used by the app lifespan)."""
        self._task = asyncio.get_running_loop().create_task(self._main(), name="deidstream-runner")
        return self._task

    async def _main(self) -> None:
        try:
            await self.start()
            await self.run()
        except Stopping:
            pass
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # surfaced to the process owner, not swallowed
            log.exception("runner stopped on an unexpected error")
            if self.on_fatal:
                self.on_fatal(exc)
            raise
        finally:
            await self._close()

    async def start(self) -> None:
        """Connect (retrying while the broker is unreachable), create topics, subscribe."""
        await self.prepare_processor()
        await self._retry("connect", self._connect_producer)
        if self.settings.create_topics:
            await self._retry("connect", self._ensure_topics)
        s = self.settings
        self._consumer = new_consumer(s)
        self._consumer.subscribe(list(s.input_topics), listener=RebalanceListener(self))
        await self._retry("connect", self._consumer.start)
        self.broker_ok = True
        self.started = True
        self._update_ready()
        log.info("runner started: %d input topics, group %s", len(s.input_topics), s.group_id)

    async def prepare_processor(self) -> None:
        """Build the processor on the worker thread (it owns the key store connection)."""
        if self._processor is not None:
            return
        self._processor = await self._retry("keystore", self._open_processor)
        self.keystore_ok = True
        self._clear_store_fault()

    async def _open_processor(self) -> Processor:
        """Run the factory on the worker thread; a key store that cannot be opened for a
        reason other than an outage (wrong or missing key, unusable file) is a StoreFault."""
        loop = asyncio.get_running_loop()
        try:
            made: Processor = await loop.run_in_executor(self._executor, self.processor_factory)
        except KeystoreError as exc:
            if exc.retriable:
                raise
            self._set_store_fault(exc.reason_class, exc)
            raise StoreFault(exc.reason_class) from exc
        return made

    async def _reopen_processor(self) -> None:
        """After a store fault: open the store again (a corrected key file is read anew);
        the old processor is closed (its store flushed) once the new one works."""
        old = self._processor
        new = await self._open_processor()
        if new is old:
            return
        self._processor = new
        if old is not None:
            try:
                await asyncio.get_running_loop().run_in_executor(self._executor, old.close)
            except Exception as exc:  # noqa: BLE001 - the old store is being replaced anyway
                log.warning("closing the faulty processor failed: %s", type(exc).__name__)

    def request_stop(self) -> None:
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    async def stop(self, grace: float = 30.0) -> None:
        """Drain: finish the batch in flight, commit, leave the group, close clients."""
        self.request_stop()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), grace)
            except TimeoutError:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            except BaseException:  # noqa: BLE001, S110 - already reported by _main
                pass
        elif task is None:
            await self._close()
        else:
            with contextlib.suppress(BaseException):
                task.exception()  # already reported by _main; mark it retrieved

    async def _close(self) -> None:
        self.started = False
        self._update_ready()
        for task, _keys, _n in self._finishing:
            if not task.done():
                task.cancel()
            with contextlib.suppress(BaseException):
                await task
        self._finishing.clear()
        self._finishing_records = 0
        self._last_acked = None
        consumer, self._consumer = self._consumer, None
        producer, self._producer = self._producer, None
        if consumer is not None:
            with contextlib.suppress(Exception):
                await consumer.stop()
        if producer is not None:
            with contextlib.suppress(Exception):
                await producer.stop()
        processor, self._processor = self._processor, None
        if processor is not None:
            try:  # on the worker thread, which owns the store's connection
                close = processor.close
                await asyncio.get_running_loop().run_in_executor(self._executor, close)
            except Exception as exc:  # noqa: BLE001 - closing must not hide the real exit
                log.warning("closing the processor failed: %s", type(exc).__name__)
        self._executor.shutdown(wait=True, cancel_futures=True)

    # ---------------------------------------------------------------- the loop

    async def run(self) -> None:
        consumer = self._need(self._consumer)
        while not self._stop.is_set():
            self._reap()
            room = self.settings.max_in_flight - self.in_flight
            if room <= 0:
                await self._wait_oldest()  # bounded memory: the oldest batch first
                continue
            generation = self.generation
            try:
                batch = await consumer.getmany(
                    timeout_ms=50 if self._finishing else 300,
                    max_records=min(room, self.settings.max_batch_records),
                )
            except KafkaError as exc:
                self.broker_ok = False
                self._update_ready()
                log.warning("fetch failed: %s", type(exc).__name__)
                self.metrics.retries.labels("fetch").inc()
                await self._sleep(self.settings.retry_initial_seconds)
                continue
            await self._adapt_fetch_wait(consumer, batch)
            if batch:
                await self.handle_batch(batch, generation)
            else:
                await self._probe_broker()
            try:
                await self._refresh_lag()
            except Exception as exc:  # noqa: BLE001 - bookkeeping must never stop the stream
                log.warning("lag refresh failed: %s", type(exc).__name__)
        await self.drain()  # a stop: finish and commit everything in flight

    async def _adapt_fetch_wait(self, consumer: Any, batch: Mapping[Any, Sequence[Any]]) -> None:
        """Longer fetch waits while fetches come back empty with records waiting (slow
        broker storage), back to the floor when idle (service/runner/fetchwait.py)."""
        fw = self.fetch_wait
        if fw.ceiling_ms == fw.floor_ms:
            return
        records = sum(len(recs) for recs in batch.values())
        lagging = False if records else await fetchwait.behind(consumer)
        before = fw.current_ms
        after = fw.after_fetch(records=records, behind=lagging, now=monotonic())
        if after != before and fetchwait.apply(consumer, after):
            level = logging.INFO if after > before else logging.DEBUG
            log.log(
                level,
                "fetch wait %d ms -> %d ms (%s)",
                before,
                after,
                "records waiting, fetch empty" if after > before else "idle",
            )

    @property
    def in_flight(self) -> int:
        """Records fetched and not committed (batches finishing + the one processed)."""
        return self._finishing_records + self._processing

    def _set_in_flight_gauge(self) -> None:
        self.metrics.in_flight.set(self.in_flight)

    def _reap(self) -> None:
        """Forget finished finishers; a failed one raises here (Stopping, a fatal error)."""
        while self._finishing and self._finishing[0][0].done():
            task, _keys, n = self._finishing.pop(0)
            self._finishing_records -= n
            self._set_in_flight_gauge()
            task.result()

    async def _wait_oldest(self) -> None:
        if self._finishing:
            await asyncio.shield(self._finishing[0][0])
        self._reap()

    async def drain(self) -> None:
        """Wait until every batch handed to a finisher is acknowledged and committed."""
        while self._finishing:
            await self._wait_oldest()

    def _unconfirmed_keys(self) -> list[set[str]]:
        """The research keys of the batches still finishing (not yet confirmed)."""
        return [keys for task, keys, _n in self._finishing if not task.done()]
