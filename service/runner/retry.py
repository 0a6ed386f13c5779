"""Retries: which errors are transient, exponential backoff with jitter, and sleeps that a
stop request cuts short (``Stopping``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from aiokafka.errors import (
    CorruptRecordException,
    KafkaError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    RecordTooLargeError,
)
from tenacity import AsyncRetrying, retry_if_exception, wait_exponential, wait_random

from keystore import classify_database_error
from pipelines.errors import DeidstreamError, IntegrityError, KeystoreError

if TYPE_CHECKING:
    from service.runner.health import Health
    from service.runner.state import RunnerContext

log = logging.getLogger("deidstream.runner")
T = TypeVar("T")


class Stopping(Exception):  # noqa: N818 - control flow, not an error
    """Raised inside a batch when a stop was requested while waiting on a retry."""


class StoreFault(Exception):  # noqa: N818 - a retry signal, carries the reason class only
    """The key store as a whole is unusable (wrong key, cannot open): retry, never
    dead-letter. Carries the reason class, no content."""

    def __init__(self, reason_class: str) -> None:
        super().__init__(reason_class)
        self.reason_class = reason_class


# the broker refuses this one record (size, corruption): retrying cannot help, so the record
# is replaced (research/held output → dead-letter of the input; dead letter → without value)
RECORD_REJECTED = (MessageSizeTooLargeError, RecordTooLargeError, CorruptRecordException)


def is_stream_fault(exc: BaseException) -> bool:
    """Not the record's fault: any key store error except one record failing
    authentication (``IntegrityError``), and any raw database driver error — permissions,
    missing tables, a read-only role, disk full, lock timeouts, a lost connection. The
    batch stops, nothing is committed or dead-lettered, and it is retried with backoff."""
    if isinstance(exc, StoreFault):
        return True
    if isinstance(exc, KeystoreError):
        return not isinstance(exc, IntegrityError)
    return not isinstance(exc, DeidstreamError) and classify_database_error(exc) is not None


def is_retriable(exc: BaseException) -> bool:
    if isinstance(exc, StoreFault):
        return True
    if isinstance(exc, DeidstreamError):
        return bool(exc.retriable) or is_stream_fault(exc)
    if is_stream_fault(exc):
        return True
    if isinstance(exc, KafkaTimeoutError):
        return True  # aiokafka marks it final, but it is what an unreachable broker gives
    if isinstance(exc, KafkaError):
        return bool(getattr(exc, "retriable", True))
    return isinstance(exc, (ConnectionError, TimeoutError))


class Retrier:
    """The runner's retry loop and backoff (settings ``retry_initial_seconds`` /
    ``retry_max_seconds``), counted in ``deidstream_retries_total{operation}``; its sleeps
    end with ``Stopping`` on a stop request, and a retried failure shows in ``health``."""

    def __init__(self, context: RunnerContext, health: Health) -> None:
        self._settings = context.settings
        self._metrics = context.metrics
        self._stop = context.stop
        self._health = health

    def backoff(self, attempt: int) -> float:
        s = self._settings
        return float(min(s.retry_max_seconds, s.retry_initial_seconds * (2 ** min(attempt, 16))))

    async def sleep(self, seconds: float) -> None:
        """Sleep unless a stop is requested; raise Stopping then."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)
        if self._stop.is_set():
            raise Stopping()

    async def retry(
        self,
        operation: str,
        fn: Callable[[], Awaitable[T]],
        retriable: Callable[[BaseException], bool] = is_retriable,
    ) -> T:
        """Call ``fn`` (an awaitable factory) until it succeeds or a non-retriable error.

        The first attempt is a plain call: the retry machinery (tenacity's state, a few dozen
        objects in reference cycles, twice per batch) is built only after a retriable
        failure, which it then counts as its first attempt — so backoff, ``before_sleep``
        and the attempt numbers are those of the loop run from the start."""
        try:
            return await fn()
        except Exception as exc:
            if not retriable(exc):
                raise
            first: list[BaseException] = [exc]

        async def again() -> T:
            if first:
                raise first.pop()  # the failure of the plain call: the loop's attempt 1
            return await fn()

        result = await self.retry_loop(operation, again, retriable)
        self._health.clear_stream_fault(operation)
        return result

    async def retry_loop(
        self,
        operation: str,
        fn: Callable[[], Awaitable[T]],
        retriable: Callable[[BaseException], bool] = is_retriable,
    ) -> T:
        """The retry loop proper (tenacity): backoff with jitter, counted and logged."""
        s = self._settings
        health = self._health

        def before_sleep(state: Any) -> None:
            self._metrics.retries.labels(operation).inc()
            exc = state.outcome.exception() if state.outcome else None
            log.warning(
                "%s failed (%s), retry %d", operation, type(exc).__name__, state.attempt_number
            )
            if operation in ("connect", "commit", "fetch"):
                health.broker_ok = False
            elif (
                exc is not None
                and not isinstance(exc, StoreFault)
                and (is_stream_fault(exc) or isinstance(exc, KeystoreError))
            ):
                health.enter_stream_fault(exc, operation)  # a store fault has its own line
            health.update_ready()

        async for attempt in AsyncRetrying(
            retry=retry_if_exception(retriable),
            wait=wait_exponential(multiplier=s.retry_initial_seconds, max=s.retry_max_seconds)
            + wait_random(0, s.retry_initial_seconds),
            before_sleep=before_sleep,
            sleep=self.sleep,
            reraise=True,
        ):
            with attempt:
                return await fn()
        raise AssertionError("unreachable")  # pragma: no cover
