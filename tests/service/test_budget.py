"""The budgeted parse (issue 24, items 2 and 3): a large input is parsed in a child process
that is killed at the per-document budget; input errors come back whole; small inputs are
parsed in place and held against the budget when they return."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hl7_gen import big_report, report

from pipelines.errors import DeadlineExceeded, NotHL7, PartialInput
from pipelines.ingest import parse_input
from service.budget import BudgetedParse

H = Path(__file__).resolve().parents[1] / "fixtures" / "hl7v2"
LIMIT = 16 * 1024 * 1024


@pytest.fixture
def parse() -> Iterator[BudgetedParse]:
    budgeted = BudgetedParse(30.0, max_bytes=LIMIT, inline_bytes=4096)
    yield budgeted
    budgeted.close()


def test_a_large_input_is_parsed_in_a_child_with_the_same_result(parse: BudgetedParse) -> None:
    raw = big_report(1, 200_000)
    assert parse(raw, content_hint="hl7v2") == parse_input(
        raw, content_hint="hl7v2", max_bytes=LIMIT
    )


def test_a_parse_over_the_budget_is_killed_and_too_costly(parse: BudgetedParse) -> None:
    raw = big_report(2, 15_000_000)  # ~0.5 s to parse: well over the kill (0.1-0.2 s)
    parse(big_report(3, 10_000), content_hint="hl7v2")  # the child is up (its start is free)
    parse.budget = 0.001
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded) as caught:
        parse(raw, content_hint="hl7v2")
    waited = time.monotonic() - started
    assert caught.value.reason_class == "too_costly"
    assert caught.value.coordinates["stage"] == "parse" and parse.killed == 1
    # the whole parse takes far longer than the wait: the child was stopped, not awaited
    begun = time.monotonic()
    parse_input(raw, content_hint="hl7v2", max_bytes=LIMIT)
    assert waited < time.monotonic() - begun
    parse.budget = 30.0  # a new child takes the next one
    assert parse(big_report(4, 20_000), content_hint="hl7v2")


def test_input_errors_from_the_child_come_back_whole(parse: BudgetedParse) -> None:
    with pytest.raises(NotHL7):
        parse(b"not an HL7 message at all " * 1000, content_hint="hl7v2")
    good = report(5, 1)
    no_text = (H / "oru-r01-no-narrative-v25.hl7").read_bytes()
    padding = b"\r".join(big_report(6, 8000).split(b"\r")[4:])  # long, still one message
    batch = good.rstrip(b"\r") + b"\r" + padding + b"\r" + no_text
    with pytest.raises(PartialInput) as expected:
        parse_input(batch, content_hint="hl7v2", max_bytes=LIMIT)
    with pytest.raises(PartialInput) as caught:
        parse(batch, content_hint="hl7v2")
    assert str(caught.value) == str(expected.value)
    assert caught.value.documents == expected.value.documents
    assert [i for i, _ in caught.value.entry_errors] == [i for i, _ in expected.value.entry_errors]


def test_a_small_input_is_parsed_in_place_and_held_against_the_budget() -> None:
    raw = report(7, 1)
    in_place = BudgetedParse(30.0, max_bytes=LIMIT)
    assert in_place(raw, content_hint="hl7v2") and in_place._pool is None  # no child
    tiny = BudgetedParse(1e-9, max_bytes=LIMIT)
    with pytest.raises(DeadlineExceeded):
        tiny(raw, content_hint="hl7v2")
    assert BudgetedParse(None, max_bytes=LIMIT)(big_report(8, 50_000), content_hint="hl7v2")


async def test_from_the_event_loop_a_costly_parse_does_not_block_it(
    parse: BudgetedParse,
) -> None:
    """While a child parses (and is killed), the loop goes on: ticks keep coming."""
    parse(big_report(9, 10_000), content_hint="hl7v2")
    parse.budget = 0.2  # a 16 MB report takes about 0.6 s of CPU to parse
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    try:
        with pytest.raises(DeadlineExceeded):
            await parse.parse_async(big_report(10, 16_000_000), content_hint="hl7v2")
    finally:
        ticker.cancel()
    assert ticks >= 5


def test_a_child_that_cannot_start_is_not_the_inputs_fault() -> None:
    """A program read from stdin: the fork server's children cannot re-import its main
    module, so every child dies at start (BrokenProcessPool). The input is parsed in place
    and published as usual — it was dead-lettered as malformed before."""
    support = Path(__file__).resolve().parents[1] / "support"
    program = f"""
import sys
sys.path.insert(0, {str(support)!r})
from hl7_gen import big_report
from service.budget import BudgetedParse
parse = BudgetedParse(30.0, max_bytes=1 << 24)
docs = parse(big_report(12, 100_000), content_hint="hl7v2")
print("documents", len(docs), "text", len(docs[0].text) > 50_000)
parse.close()
"""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-"],
        input=program,
        capture_output=True,
        text=True,
        cwd=root,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "documents 1 text True" in done.stdout
    assert "parsed in place" in done.stderr


def test_a_child_that_answered_past_the_budget_is_too_costly_all_the_same() -> None:
    """The pool kills a child at its timeout from a watching thread; in a busy process that
    thread may wake after a child that overran has answered (the MLLP gateway then answered
    AA for a costly message). The time the child itself took is held against the budget."""
    from concurrent.futures import Future

    budgeted = BudgetedParse(0.05, max_bytes=LIMIT, inline_bytes=4096)
    late: Future[tuple[bool, object, float]] = Future()
    late.set_result((True, ["parsed"], 0.4))
    with pytest.raises(DeadlineExceeded) as caught:
        budgeted._result(late)
    assert caught.value.reason_class == "too_costly"
    in_time: Future[tuple[bool, object, float]] = Future()
    in_time.set_result((True, ["parsed"], 0.01))
    assert budgeted._result(in_time) == ["parsed"]
