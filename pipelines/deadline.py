"""The per-document budget (issue 14 item 4, issue 24 item 2).

One document's budget covers everything it costs: its message's parse (text extraction from
HTML, RTF, PDF…) and its de-identification. The processor opens ``deadline(seconds,
spent=...)`` around a document's de-identification, ``spent`` being what its message's parse
took; the detector calls ``check(stage)`` after each recognizer and the de-identifier after
each stage, which raises :class:`~pipelines.errors.DeadlineExceeded` (reason class
``too_costly``: the input is dead-lettered, never retried) once the budget is used up. The
parse itself is bounded by the caller (``pipelines.budget``: in a child process killed at the
budget, or checked as soon as it returns).

Cooperative: a check runs between steps, never inside one. So the open budgets are also
registered (``running()``): a watchdog on another thread sees a document that is still in
progress past its budget (a step that does not return) and reports it (``/readyz``, the
``deidstream_stall_seconds{cause="document"}`` gauge). A context variable carries the limit,
so every worker thread (and every caller without a deadline) sees its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from pipelines.errors import DeadlineExceeded

_LIMIT: ContextVar[tuple[float, float] | None] = ContextVar("deidstream_deadline", default=None)


@dataclass(frozen=True, slots=True)
class Running:
    """A document in progress: since when (monotonic, its message's parse included) and its
    budget in seconds."""

    started: float
    budget: float

    def elapsed(self, now: float | None = None) -> float:
        return (time.monotonic() if now is None else now) - self.started

    def over(self, now: float | None = None) -> float:
        """Seconds past the budget (0 while within it)."""
        return max(0.0, self.elapsed(now) - self.budget)


_RUNNING: dict[int, Running] = {}  # thread id → the document it works on
_RUNNING_LOCK = threading.Lock()


@contextmanager
def deadline(seconds: float | None, *, spent: float = 0.0) -> Iterator[None]:
    """Checks inside the block fail once ``seconds`` have passed, ``spent`` of them before
    the block (the message's parse). None: no deadline, nothing registered."""
    if seconds is None:
        token = _LIMIT.set(None)
        try:
            yield
        finally:
            _LIMIT.reset(token)
        return
    now = time.monotonic()
    started = now - max(0.0, spent)
    token = _LIMIT.set((started + seconds, seconds))
    me = threading.get_ident()
    with _RUNNING_LOCK:
        before = _RUNNING.get(me)
        _RUNNING[me] = Running(started, seconds)
    try:
        yield
    finally:
        _LIMIT.reset(token)
        with _RUNNING_LOCK:
            if before is None:
                _RUNNING.pop(me, None)
            else:
                _RUNNING[me] = before


def check(stage: str) -> None:
    """Raise ``DeadlineExceeded`` if the current deadline has passed (no-op without one)."""
    limit = _LIMIT.get()
    if limit is not None and time.monotonic() > limit[0]:
        raise DeadlineExceeded(
            "document processing exceeded its budget", stage=stage, limit_seconds=limit[1]
        )


def exceeded(stage: str, elapsed: float, budget: float | None) -> DeadlineExceeded | None:
    """The error for a step that returned after ``elapsed`` seconds of a ``budget`` (a
    step that cannot check inside itself, as a parser); None within the budget."""
    if budget is None or elapsed <= budget:
        return None
    return DeadlineExceeded(
        "document processing exceeded its budget", stage=stage, limit_seconds=budget
    )


def running() -> list[Running]:
    """The documents in progress on any thread (for a watchdog)."""
    with _RUNNING_LOCK:
        return list(_RUNNING.values())


__all__ = ["Running", "check", "deadline", "exceeded", "running"]
