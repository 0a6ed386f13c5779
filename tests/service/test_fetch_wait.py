"""The adaptive fetch wait (service/runner/fetchwait.py): the rule alone, without a broker
(times are given, not measured); tests/integration/test_broker_kill_durable.py runs it
against Tansu on s3:// storage."""

from __future__ import annotations

import pytest

from service.runner.fetchwait import FetchWait
from service.settings import Settings


def test_empty_fetches_with_records_waiting_raise_the_wait_to_the_ceiling() -> None:
    fw = FetchWait(25, 1000)
    waits, now = [], 0.0
    for _ in range(7):
        waits.append(fw.after_fetch(records=0, behind=True, now=now))
        now += 2 * waits[-1] / 1000  # two waits pass: fetches with this wait came back
    assert waits == [50, 100, 200, 400, 800, 1000, 1000]
    assert fw.after_fetch(records=80, behind=False, now=now) == 1000  # data flows: keep it


def test_a_step_is_judged_only_after_fetches_used_it() -> None:
    fw = FetchWait(25, 1000)
    assert fw.after_fetch(records=0, behind=True, now=10.0) == 50
    # polls that returned before a 50 ms fetch could: no further step yet
    assert fw.after_fetch(records=0, behind=True, now=10.05) == 50
    assert fw.after_fetch(records=0, behind=True, now=10.099) == 50
    assert fw.after_fetch(records=0, behind=True, now=10.1) == 100


def test_idle_fetches_bring_it_back_to_the_floor() -> None:
    fw = FetchWait(25, 1000, current_ms=1000)
    waits, now = [], 0.0
    for _ in range(7):
        waits.append(fw.after_fetch(records=0, behind=False, now=now))
        now += 2.0
    assert waits == [500, 250, 125, 62, 31, 25, 25]


def test_ceiling_equal_to_floor_is_a_fixed_wait() -> None:
    fw = FetchWait(500, 500)
    assert fw.after_fetch(records=0, behind=True, now=0.0) == 500
    assert fw.after_fetch(records=0, behind=False, now=5.0) == 500


def test_ceiling_below_the_request_timeout() -> None:
    with pytest.raises(ValueError, match="fetch_max_wait_ceiling_ms"):
        Settings(fetch_max_wait_ceiling_ms=5000, request_timeout_ms=5000, session_timeout_ms=4000)
    assert Settings().fetch_max_wait_ceiling_ms == 1000
