"""Stage timing: ``with stopwatch(times, "render", timer):`` adds the block's duration to
``times["render"]`` — the per-document stage table that becomes ``Outcome.stage_seconds``
(and the ``deidstream_stage_seconds`` histogram). The time is added when the block ends,
raising or not."""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping
from types import TracebackType

Timer = Callable[[], float]


class stopwatch:  # noqa: N801 - used as a function: ``with stopwatch(...)``
    """Adds the time spent inside the ``with`` block to ``times[stage]``."""

    __slots__ = ("_stage", "_started", "_timer", "_times")

    def __init__(
        self, times: MutableMapping[str, float], stage: str, timer: Timer = time.perf_counter
    ) -> None:
        self._times = times
        self._stage = stage
        self._timer = timer
        self._started = 0.0

    def __enter__(self) -> None:
        self._started = self._timer()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        times, stage = self._times, self._stage
        times[stage] = times.get(stage, 0.0) + self._timer() - self._started


__all__ = ["Timer", "stopwatch"]
