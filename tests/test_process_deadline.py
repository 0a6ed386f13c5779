"""The per-document budget (issue 14 item 4, issue 24 item 2): it covers the message's parse
and the document's de-identification together; a document over it makes the input an input
error with reason class ``too_costly`` (dead-lettered, never retried, never held), and no
version mark is written for it (a re-send is decided anew)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from keystore.memory import InMemoryStore
from keystore.pseudonyms import Pseudonyms
from pipelines.deadline import check, deadline, exceeded, running
from pipelines.errors import DeadlineExceeded, InputError
from pipelines.ingest import parse_input
from pipelines.policy import Policy
from pipelines.process import Processor
from service.settings import Settings

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "versions"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _raw() -> bytes:
    return next(FIXTURES.glob("03_*.hl7")).read_bytes()


def _processor(seconds: float | None, **options: Any) -> Processor:
    return Processor(
        policy=Policy.load(),
        store=InMemoryStore(),
        pseudonyms=Pseudonyms.random(),
        deadline_seconds=seconds,
        **options,
    )


def test_a_document_past_its_budget_is_an_input_error_too_costly() -> None:
    proc = _processor(1e-9)  # passed before the first recognizer has finished
    with pytest.raises(DeadlineExceeded) as caught:
        proc.process(_raw(), content_hint="hl7v2", now=NOW)
    error = caught.value
    assert isinstance(error, InputError) and not error.retriable
    assert error.reason_class == "too_costly"
    assert "budget" in str(error) and "stage=" in str(error)
    # no mark was written: with a budget it fits in, the same input is published
    fresh = Processor(
        policy=proc.policy, store=proc.store, pseudonyms=Pseudonyms.random(), deadline_seconds=60
    )
    [out] = fresh.process(_raw(), content_hint="hl7v2", now=NOW)
    assert out.kind == "publish"


def test_in_a_batch_only_the_costly_item_fails() -> None:
    proc = _processor(60.0)
    [first, second] = proc.process_many(
        [(_raw(), "hl7v2", NOW), (next(FIXTURES.glob("01_*.hl7")).read_bytes(), "hl7v2", NOW)]
    )
    assert not isinstance(first, BaseException) and not isinstance(second, BaseException)
    costly = _processor(1e-9)
    results = costly.process_many([(_raw(), "hl7v2", NOW), (_raw(), "hl7v2", NOW)])
    assert all(isinstance(r, DeadlineExceeded) for r in results)


def test_the_budget_covers_the_parse() -> None:
    """A parse that cannot check the budget inside itself is held against it when it
    returns: a parse longer than the budget alone makes the input too costly."""

    def slow_parse(raw: bytes, *, content_hint: str | None = None) -> list[Any]:
        time.sleep(0.3)
        return parse_input(raw, content_hint=content_hint, max_bytes=1 << 22)

    with pytest.raises(DeadlineExceeded) as caught:
        _processor(0.2, parse=slow_parse).process(_raw(), content_hint="hl7v2", now=NOW)
    assert caught.value.coordinates["stage"] == "parse"
    [out] = _processor(5.0, parse=slow_parse).process(_raw(), content_hint="hl7v2", now=NOW)
    assert out.kind == "publish"


def test_the_parse_time_is_taken_from_the_documents_budget() -> None:
    """0.25 s of parse and a 0.3 s budget: the de-identification has 0.05 s, not 0.3 s."""
    seen: list[float] = []

    def slow_parse(raw: bytes, *, content_hint: str | None = None) -> list[Any]:
        time.sleep(0.25)
        return parse_input(raw, content_hint=content_hint, max_bytes=1 << 22)

    def watching_deidentify(document: Any, state: Any) -> Any:
        [now_running] = [r for r in running() if r.budget == 0.3]
        seen.append(now_running.elapsed())
        time.sleep(0.1)
        check("slow step")
        raise AssertionError("the budget should have been used up")

    proc = _processor(0.3, parse=slow_parse, deidentify=watching_deidentify)
    with pytest.raises(DeadlineExceeded) as caught:
        proc.process(_raw(), content_hint="hl7v2", now=NOW)
    assert caught.value.coordinates["stage"] == "slow step"
    assert seen and seen[0] >= 0.25  # the document's clock started with its parse


def test_check_raises_only_inside_an_expired_deadline() -> None:
    check("anywhere")  # no deadline set: never raises
    with deadline(60.0):
        check("early")
    with deadline(0.0), pytest.raises(DeadlineExceeded) as caught:
        check("late")
    assert caught.value.reason_class == "too_costly" and not caught.value.retriable
    check("after")  # the block's deadline is gone with the block
    assert exceeded("parse", 0.1, None) is None and exceeded("parse", 0.1, 1.0) is None
    late = exceeded("parse", 2.0, 1.0)
    assert late is not None and late.coordinates == {"stage": "parse", "limit_seconds": 1.0}


def test_open_budgets_are_visible_from_another_thread() -> None:
    """A watchdog sees a document still in progress past its budget (a step that does not
    return cannot be interrupted; it can be reported)."""
    inside, release = threading.Event(), threading.Event()

    def work() -> None:
        with deadline(0.05):
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=work)
    thread.start()
    try:
        assert inside.wait(5)
        time.sleep(0.1)
        [doc] = [r for r in running() if r.budget == 0.05]
        assert doc.over() > 0 and doc.elapsed() >= 0.1
    finally:
        release.set()
        thread.join()
    assert not [r for r in running() if r.budget == 0.05]  # gone once the block ends


def test_the_budget_is_a_service_setting() -> None:
    assert Settings().document_deadline_seconds == 30.0
    assert Settings(document_deadline_seconds=2.5).document_deadline_seconds == 2.5
    assert Settings(stall_seconds=1.5).stall_seconds == 1.5
