"""A task that never reached a child of a pool that broke is not waited for forever.

pebble fails the tasks it holds when every child dies at start, but a large task still on
its way to them (its scheduler blocked writing to a pipe no child reads) had no answer ever:
the thread that asked waited forever (seen as a 120 s timeout of
tests/service/test_budget.py's "child that cannot start" test, about one run in eight). The
pool stands in here by the one thing the wait reads of it, ``active``; the real pool is in
that test."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import Future
from typing import Any

import pytest

from service import budget
from service.budget import BudgetedParse


class _Pool:
    """A pebble pool as ``budget._settled`` reads it: working or not."""

    def __init__(self, active: bool) -> None:
        self.active = active


def _unanswered() -> Future[Any]:
    return Future()


def test_an_unanswered_task_of_a_broken_pool_is_a_child_failure() -> None:
    parse = BudgetedParse(30.0, max_bytes=1 << 20)
    started = time.monotonic()
    with pytest.raises(budget._ChildFailed):
        parse._result(_unanswered(), _Pool(active=False))
    assert time.monotonic() - started < budget.POLL_SECONDS + 0.5


def test_the_wait_sees_the_pool_break_while_it_waits() -> None:
    pool = _Pool(active=True)
    future = _unanswered()
    parse = BudgetedParse(30.0, max_bytes=1 << 20)
    loop = asyncio.new_event_loop()
    try:
        loop.call_later(0.2, setattr, pool, "active", False)
        started = time.monotonic()
        loop.run_until_complete(budget._until_settled(future, pool))
        assert time.monotonic() - started < budget.POLL_SECONDS + 1.0
    finally:
        loop.close()
    with pytest.raises(budget._ChildFailed):
        parse._result(future, pool)


def test_an_answer_is_read_whatever_the_pool() -> None:
    """A task done is answered even where its pool broke since (it was stopped after)."""
    done: Future[Any] = Future()
    done.set_result((True, ["parsed"], 0.01))
    assert BudgetedParse(30.0, max_bytes=1 << 20)._result(done, _Pool(active=False)) == ["parsed"]


def test_the_tasks_own_timeout_is_still_the_budget() -> None:
    """pebble's watch fails a task past the budget with TimeoutError: too costly, as before,
    not a child failure."""
    late: Future[Any] = Future()
    late.set_exception(TimeoutError("Task timeout"))
    parse = BudgetedParse(30.0, max_bytes=1 << 20)
    with pytest.raises(budget.DeadlineExceeded):
        parse._result(late, _Pool(active=True))
    assert parse.killed == 1
