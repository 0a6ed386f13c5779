"""``stopwatch`` adds a block's duration to its stage, raising or not (a fake clock)."""

from __future__ import annotations

import pytest

from pipelines.stopwatch import stopwatch


class Clock:
    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        return self.now


def test_a_stage_adds_up_over_blocks_and_counts_a_raising_block() -> None:
    clock, times = Clock(), {"parse": 1.0}
    with stopwatch(times, "dedup", clock):
        clock.now += 0.25
    with stopwatch(times, "dedup", clock):
        clock.now += 0.5
    with pytest.raises(KeyError), stopwatch(times, "render", clock):
        clock.now += 2.0
        raise KeyError("boom")
    assert times == {"parse": 1.0, "dedup": 0.75, "render": 2.0}
