"""The consumer's fetch wait, adapted to the broker's storage.

A fetch may wait ``fetch_max_wait_ms`` for data. Kafka answers as soon as data is there; the
embedded Tansu on memory storage waits the whole time when idle, so a short wait is its
latency floor (25 ms). On Tansu's ``s3://`` storage a fetch must also *read* the segment
from object storage within that time, and a short wait starves (measured on a local S3:
bench/README.md, "Figures from code comments").

So the wait adapts: a fetch that brought nothing although the consumer is behind the high
watermark doubles it (up to ``fetch_max_wait_ceiling_ms``); an idle fetch with nothing to
read halves it back (down to ``fetch_max_wait_ms``). On a broker that answers in time the
wait never leaves the floor.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any


@dataclass
class FetchWait:
    floor_ms: int
    ceiling_ms: int
    current_ms: int = 0
    changed_at: float | None = None  # monotonic seconds of the last change

    def __post_init__(self) -> None:
        self.ceiling_ms = max(self.ceiling_ms, self.floor_ms)
        self.current_ms = min(max(self.current_ms, self.floor_ms), self.ceiling_ms)

    def after_fetch(self, *, records: int, behind: bool, now: float) -> int:
        """The wait for the next fetch, given what the last poll brought and whether the
        consumer is behind the high watermark on any partition it fetches.

        A poll returns when its own timeout ends, maybe before a fetch sent with the new wait
        came back: a change counts only once two of the current waits have passed since the
        last one, so each step is judged on fetches that used it."""
        if records:
            return self.current_ms
        settled = (
            self.changed_at is None or now - self.changed_at >= 2 * self.current_ms / 1000 - 1e-9
        )
        if not settled:
            return self.current_ms
        wanted = (
            min(self.ceiling_ms, self.current_ms * 2)
            if behind
            else max(self.floor_ms, self.current_ms // 2)
        )
        if wanted != self.current_ms:
            self.current_ms, self.changed_at = wanted, now
        return self.current_ms


def apply(consumer: Any, wait_ms: int) -> bool:
    """Set an aiokafka consumer's fetch wait for its next fetch requests (the fetcher reads
    it each time it builds one); False if this aiokafka has no such attribute."""
    fetcher = getattr(consumer, "_fetcher", None)
    if fetcher is None or not hasattr(fetcher, "_fetch_max_wait_ms"):
        return False
    # no public setter in aiokafka: bounded, checked by tests/test_third_party_internals.py
    fetcher._fetch_max_wait_ms = wait_ms  # noqa: SLF001
    return True


async def behind(consumer: Any) -> bool:
    """Is the consumer behind the high watermark on any fetchable assigned partition?"""
    assignment = getattr(consumer, "assignment", None)
    if assignment is None:
        return False
    paused = set(consumer.paused()) if hasattr(consumer, "paused") else set()
    for tp in assignment():
        if tp in paused:
            continue
        high = consumer.highwater(tp)
        if high is None:
            continue
        position = None
        with contextlib.suppress(Exception):  # unknown during a rebalance: not evidence
            position = await asyncio.wait_for(consumer.position(tp), 0.5)
        if position is not None and position < high:
            return True
    return False
