"""The processing thread and the processor that lives on it: built there (it owns the key
store connection), replaced after a fault of the whole store, closed there."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from time import perf_counter
from typing import Any, TypeVar

from pipelines.errors import KeystoreError
from service.metrics import Metrics
from service.runner.contract import Processor, ProcessorFactory
from service.runner.health import Health
from service.runner.retry import Retrier, StoreFault

log = logging.getLogger("deidstream.runner")
T = TypeVar("T")


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


class Worker:
    """The processor and its one thread (``executor``: every processor call runs there, so
    CPU-bound work stays off the event loop and the store's connection on one thread)."""

    def __init__(
        self, metrics: Metrics, factory: ProcessorFactory, health: Health, retrier: Retrier
    ) -> None:
        self._factory = factory
        self._health = health
        self._retrier = retrier
        self._busy_inc = metrics.processing_busy.inc
        self.busy_seconds = 0.0  # wall time the processing thread spent working
        self.executor: ThreadPoolExecutor = WorkerThread(self._add_busy)
        self._processor: Processor | None = None

    def _add_busy(self, seconds: float) -> None:
        """Called on the processing thread only (its one writer)."""
        self.busy_seconds += seconds
        self._busy_inc(seconds)

    @property
    def current(self) -> Processor | None:
        """The processor, None before it is opened and after it is closed."""
        return self._processor

    @property
    def processor(self) -> Processor:
        if self._processor is None:
            raise RuntimeError("the runner is not started")
        return self._processor

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the processing thread."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn)

    async def prepare(self) -> None:
        """Build the processor on the worker thread, retrying while the store is down."""
        if self._processor is not None:
            return
        self._processor = await self._retrier.retry("keystore", self._open)
        self._health.keystore_ok = True
        self._health.clear_store_fault()

    async def _open(self) -> Processor:
        """Run the factory on the worker thread; a key store that cannot be opened for a
        reason other than an outage (wrong or missing key, unusable file) is a StoreFault."""
        try:
            return await self.run(self._factory)
        except KeystoreError as exc:
            if exc.retriable:
                raise
            self._health.set_store_fault(exc.reason_class, exc)
            raise StoreFault(exc.reason_class) from exc

    async def reopen(self) -> None:
        """After a store fault: open the store again (a corrected key file is read anew);
        the old processor is closed (its store flushed) once the new one works."""
        old = self._processor
        new = await self._open()
        if new is old:
            return
        self._processor = new
        if old is not None:
            try:
                await self.run(old.close)
            except Exception as exc:  # noqa: BLE001 - the old store is being replaced anyway
                log.warning("closing the faulty processor failed: %s", type(exc).__name__)

    async def close(self) -> None:
        """Close the processor on its thread (which owns the store's connection), then the
        thread."""
        processor, self._processor = self._processor, None
        if processor is not None:
            try:
                await self.run(processor.close)
            except Exception as exc:  # noqa: BLE001 - closing must not hide the real exit
                log.warning("closing the processor failed: %s", type(exc).__name__)
        self.executor.shutdown(wait=True, cancel_futures=True)
