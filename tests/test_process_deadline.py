"""The per-document processing deadline (issue 14, item 4): a document whose de-identification
outlasts it is held with reason class ``timeout`` — the stream goes on, nothing is published,
and the decision is recorded like any held document (a replay is a duplicate)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from keystore.memory import InMemoryStore
from keystore.pseudonyms import Pseudonyms
from pipelines.deadline import check, deadline
from pipelines.errors import DeadlineExceeded
from pipelines.policy import Policy
from pipelines.process import Processor
from service.settings import Settings

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "versions"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _raw() -> bytes:
    return next(FIXTURES.glob("03_*.hl7")).read_bytes()


def _processor(seconds: float | None) -> Processor:
    return Processor(
        policy=Policy.load(),
        store=InMemoryStore(),
        pseudonyms=Pseudonyms.random(),
        deadline_seconds=seconds,
    )


def test_a_document_past_its_deadline_is_held_with_reason_timeout() -> None:
    proc = _processor(1e-9)  # passed before the first recognizer has finished
    [out] = proc.process(_raw(), content_hint="hl7v2", now=NOW)
    assert out.kind == "held"
    assert out.reason_class == "timeout"
    assert out.value is None and out.research_key
    assert "deadline" in (out.reason or "") and "stage=" in (out.reason or "")
    assert ("decision", "held") in out.headers
    proc.commit([out])
    # a held version consumes nothing: the replay is decided again (and held again here,
    # the deadline being still past)
    [again] = proc.process(_raw(), content_hint="hl7v2", now=NOW)
    assert again.kind == "held" and again.reason_class == "timeout"


def test_within_the_deadline_the_document_is_published() -> None:
    [out] = _processor(60.0).process(_raw(), content_hint="hl7v2", now=NOW)
    assert out.kind == "publish"


def test_check_raises_only_inside_an_expired_deadline() -> None:
    check("anywhere")  # no deadline set: never raises
    with deadline(60.0):
        check("early")
    with deadline(0.0), pytest.raises(DeadlineExceeded) as caught:
        check("late")
    assert caught.value.reason_class == "timeout" and not caught.value.retriable
    check("after")  # the block's deadline is gone with the block


def test_the_deadline_is_a_service_setting() -> None:
    assert Settings().document_deadline_seconds == 30.0
    assert Settings(document_deadline_seconds=2.5).document_deadline_seconds == 2.5
