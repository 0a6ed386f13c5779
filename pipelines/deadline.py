"""The per-document processing deadline (issue 14, item 4).

The processor opens ``deadline(seconds)`` around one document's de-identification; the
detector calls ``check(stage)`` after each recognizer and the de-identifier after each stage,
which raises :class:`~pipelines.errors.DeadlineExceeded` once the time is up. Cooperative: a
check runs between steps, never inside one — every pattern that reads input text runs in
linear time (re2, or a bounded window; ``tests/phi/test_linear_time.py``), so a step on a
document within the size limit ends in bounded time. A context variable carries the limit, so
every worker thread (and every caller without a deadline) sees its own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pipelines.errors import DeadlineExceeded

_LIMIT: ContextVar[tuple[float, float] | None] = ContextVar("deidstream_deadline", default=None)


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Checks inside the block fail once ``seconds`` have passed (None: no deadline)."""
    limit = None if seconds is None else (time.monotonic() + seconds, seconds)
    token = _LIMIT.set(limit)
    try:
        yield
    finally:
        _LIMIT.reset(token)


def check(stage: str) -> None:
    """Raise ``DeadlineExceeded`` if the current deadline has passed (no-op without one)."""
    limit = _LIMIT.get()
    if limit is not None and time.monotonic() > limit[0]:
        raise DeadlineExceeded(
            "document processing exceeded the deadline", stage=stage, limit_seconds=limit[1]
        )


__all__ = ["check", "deadline"]
