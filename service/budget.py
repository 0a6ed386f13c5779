"""The parse of a large input under the per-document budget, in a child process that is
killed when the budget runs out (issue 24, items 2 and 3).

A Python thread cannot be stopped in the middle of a computation, and a parser (HTML, RTF,
PDF text extraction…) cannot check a deadline inside itself. So an input larger than
``INLINE_BYTES`` is parsed by a pebble ``ProcessPool`` worker with the budget as its timeout:
past it the worker is killed (pebble starts a new one) and the caller gets
:class:`~pipelines.errors.DeadlineExceeded` (reason class ``too_costly``) — the runner
dead-letters the input, the MLLP gateway answers ``AR``. The thread that asked waited the
budget at most; the event loop (ACKs, heartbeats, probes) never waited at all.

Smaller inputs are parsed where they are (a round trip to the child costs ~0.5 ms, more than
such a parse) and the time it took is held against the budget when it returns
(``pipelines.deadline.exceeded``). The children start from a fork server that has imported
the parsers once, never from a fork of the service (its threads, sockets and database
connections stay where they are).

An input error raised in the child travels back whole (its class, reason, coordinates, and
the good documents of a ``PartialInput``), as ``parse_input`` would have raised it here. A
child that cannot answer at all (it could not start, it was killed from outside) is our
fault, never the input's: the input is then parsed in place (and held against the budget
when that returns), and the next large input gets a new pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from pipelines.deadline import exceeded
from pipelines.document import ClinicalDocument
from pipelines.errors import DeadlineExceeded, DeidstreamError

log = logging.getLogger("deidstream.budget")

T = TypeVar("T")
INLINE_BYTES = 16 * 1024  # inputs up to this size are parsed in the caller's thread
PRELOAD = ["pipelines.ingest"]
WARM_SECONDS = 120.0  # a child not started by then is started on first use instead


def _parse(raw: bytes, content_hint: str | None, max_bytes: int) -> list[ClinicalDocument]:
    from pipelines.ingest import parse_input

    return parse_input(raw, content_hint=content_hint, max_bytes=max_bytes)


def portable(error: DeidstreamError) -> tuple[type[DeidstreamError], str, dict[str, Any]]:
    """An error as plain picklable parts (its constructor takes keywords that pickling an
    exception would lose: coordinates, a partial input's good documents)."""
    return type(error), str(error), dict(vars(error))


def rebuilt(parts: tuple[type[DeidstreamError], str, dict[str, Any]]) -> DeidstreamError:
    """The error :func:`portable` took apart."""
    cls, text, state = parts
    error = cls.__new__(cls)
    Exception.__init__(error, text)
    error.__dict__.update(state)
    return error


Answer = tuple[bool, Any, float]  # ``_in_child``'s: ok, the value or error, seconds taken
POLL_SECONDS = 0.5  # how often a wait for a child's answer looks whether its pool broke


class _PoolBroke(Exception):
    """The pool stopped before the task reached a child (see ``_settled``)."""


def _broken(pool: Any) -> bool:
    """Has ``pool`` stopped working (pebble marks it so when one of its threads ended, as
    when every child died at start)?"""
    return pool is not None and not pool.active


def _settled(future: Future[Answer], pool: Any) -> Answer:
    """``future.result()``, but never a wait on a pool that broke: pebble fails the tasks
    it holds when its children cannot start, but a task still on its way to them (a large
    one, blocked writing to a pipe no child reads) waits forever; it raises ``_PoolBroke``
    instead, within ``POLL_SECONDS``."""
    while True:
        if not future.done() and _broken(pool):
            raise _PoolBroke
        try:
            return future.result(timeout=POLL_SECONDS)
        except FutureTimeout:
            if future.done():
                raise  # the task's own timeout, set by the pool's watch


async def _until_settled(future: Future[Answer], pool: Any) -> None:
    """Wait, on the event loop, until ``future`` is done or its pool broke (``_settled``
    then answers without waiting)."""
    waiting = asyncio.wrap_future(future)
    while not waiting.done() and not _broken(pool):
        await asyncio.wait({waiting}, timeout=POLL_SECONDS)
    if waiting.done():
        if not waiting.cancelled():
            waiting.exception()  # read below, from the future itself
    else:
        waiting.cancel()


def _ready() -> None:
    """Runs in the child: nothing (the child answered: it is started)."""


class _ChildFailed(Exception):  # noqa: N818 - a signal to parse in place
    """The child process could not give an answer (not the input's fault)."""


def _in_child(fn: Callable[..., T], *args: Any) -> tuple[bool, Any, float]:
    """Runs in the child: (True, result) or (False, the error's portable parts), and the
    seconds the call took there."""
    started = time.monotonic()
    try:
        return True, fn(*args), time.monotonic() - started
    except DeidstreamError as exc:
        return False, portable(exc), time.monotonic() - started


class BudgetedParse:
    """``parse_input(raw, content_hint=...)`` within ``budget`` seconds (None: no budget,
    always in the caller's thread). Call it from a worker thread (``__call__``) or from the
    event loop (``parse_async``); ``close()`` stops the children."""

    def __init__(
        self,
        budget: float | None,
        *,
        max_bytes: int,
        inline_bytes: int = INLINE_BYTES,
        workers: int = 1,
    ) -> None:
        self.budget = budget
        self.max_bytes = max_bytes
        self.inline_bytes = inline_bytes
        self._workers = workers
        self._pool: Any = None  # pebble.ProcessPool, started on first use
        self._lock = threading.Lock()
        self.killed = 0  # children killed at the budget

    def _pool_now(self) -> Any:
        with self._lock:
            if self._pool is None:
                from pebble import ProcessPool

                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload(PRELOAD)
                self._pool = ProcessPool(max_workers=self._workers, context=context)
            return self._pool

    def warm(self) -> bool:
        """Start the child now and wait until it answers, so no document pays for it.

        Starting the pool starts a fork server that imports the parsers (a second or more
        on a loaded machine); the first large input waited for it, and that wait counted
        against its budget: with a short budget an ordinary 20 KB note after every start
        was dead-lettered ``too_costly``. Called where the service starts (before it is
        ready). A child killed at the budget is replaced by a fork of the ready fork
        server (milliseconds). False (logged) when the child could not start: the first
        large input tries again."""
        if self.budget is None:
            return False
        try:
            future = self._pool_now().schedule(_in_child, args=(_ready,))
            future.result(timeout=WARM_SECONDS)
        except Exception as exc:  # noqa: BLE001 - started again on first use
            log.warning(
                "the parse child did not start (%s): started on first use", type(exc).__name__
            )
            self._reset()
            return False
        return True

    @property
    def started(self) -> bool:
        """Is the pool of children started (a large input waits for no child to start)?"""
        return self._pool is not None

    def _inline(self, raw: bytes, content_hint: str | None) -> list[ClinicalDocument]:
        from pipelines.ingest import parse_input

        started = time.monotonic()
        documents = parse_input(raw, content_hint=content_hint, max_bytes=self.max_bytes)
        late = exceeded("parse", time.monotonic() - started, self.budget)
        if late is not None:
            raise late
        return documents

    def _schedule(self, fn: Callable[..., Any], *args: Any) -> tuple[Future[Answer], Any]:
        """The child's future answer, and the pool it was given to."""
        pool = self._pool_now()
        future: Future[Answer] = pool.schedule(_in_child, args=(fn, *args), timeout=self.budget)
        return future, pool

    def _result(self, future: Future[Answer], pool: Any = None) -> Any:
        """The child's answer; past the budget (the pool kills a child at its timeout, but
        its watch runs on a thread that a busy process may wake late, after a child that
        overran has answered) ``DeadlineExceeded`` all the same, as for a parse in place."""
        try:
            ok, value, took = _settled(future, pool)
        except FutureTimeout:
            self.killed += 1
            raise DeadlineExceeded(
                "document processing exceeded its budget",
                stage="parse",
                limit_seconds=self.budget,
            ) from None
        except DeidstreamError:
            raise
        except Exception as exc:  # noqa: BLE001 - the child mechanism failed, not the input
            # a child that could not start or died (killed from outside, a broken pool): our
            # fault, never the input's — the caller parses it in place instead
            log.warning("parse in a child process failed (%s): parsed in place", type(exc).__name__)
            self._reset()
            raise _ChildFailed() from None
        if not ok:
            raise rebuilt(value)
        late = exceeded("parse", took, self.budget)
        if late is not None:
            raise late
        return value

    def __call__(self, raw: bytes, *, content_hint: str | None = None) -> list[ClinicalDocument]:
        if self.budget is None or len(raw) <= self.inline_bytes:
            return self._inline(raw, content_hint)
        try:
            documents: list[ClinicalDocument] = self._result(
                *self._schedule(_parse, raw, content_hint, self.max_bytes)
            )
        except _ChildFailed:
            return self._inline(raw, content_hint)
        return documents

    async def parse_async(
        self, raw: bytes, *, content_hint: str | None = None
    ) -> list[ClinicalDocument]:
        """The same from the event loop: a large input waits in the child, never on the loop."""
        if self.budget is None or len(raw) <= self.inline_bytes:
            return self._inline(raw, content_hint)
        documents: list[ClinicalDocument] = await self.call_async(
            _parse, raw, content_hint, self.max_bytes
        )
        return documents

    async def call_async(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` (a module-level function: it is pickled by name) in a child under
        the budget, awaited from the event loop; its input errors are raised here."""
        future, pool = self._schedule(fn, *args)
        await _until_settled(future, pool)
        try:
            result: T = self._result(future, pool)
        except _ChildFailed:  # in place, off the loop, held against the budget when it returns
            started = time.monotonic()
            result = await asyncio.to_thread(fn, *args)
            late = exceeded("parse", time.monotonic() - started, self.budget)
            if late is not None:
                raise late from None
        return result

    def _reset(self) -> None:
        """After a failure of the children: a new pool on next use."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            with contextlib.suppress(Exception):
                pool.stop()

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.stop()
            pool.join(timeout=5)


__all__ = ["INLINE_BYTES", "BudgetedParse", "portable", "rebuilt"]
