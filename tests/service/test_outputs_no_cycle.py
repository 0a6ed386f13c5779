"""A routed record's objects are freed by reference counting once the runner lets go of them:
no reference cycle between a Handled and its outputs' callbacks (such a cycle kept every
record's objects — the record, its outcomes, closures — alive until the garbage collector ran,
which was most of the collector's work in the service)."""

from __future__ import annotations

import gc
import weakref
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pipelines.outcome import Outcome, OutcomeKind
from service.metrics import Metrics
from service.runner.outputs import Outputs
from service.settings import Settings


@dataclass
class Rec:
    topic: str = "clinical.hl7v2"
    partition: int = 0
    offset: int = 7
    key: bytes = b"k"
    value: bytes = b"raw"
    timestamp: int = 1_700_000_000_000
    headers: list[tuple[str, bytes]] = field(default_factory=list)


def Out(kind: str) -> Outcome:  # noqa: N802 - reads like the record it builds
    return Outcome(
        kind=OutcomeKind(kind),
        research_key="rk",
        value=b"{}",
        stage_seconds={"detect": 0.001},
        span_counts={"NAME": 2},
    )


def test_routed_records_hold_no_reference_cycle() -> None:
    outputs = Outputs(Settings(create_topics=False), Metrics(), Counter())
    gc.collect()
    gc.disable()
    try:
        for kind in ("publish", "held", "tombstone"):
            rec = Rec()
            handled = outputs.route(rec, "hl7v2", [Out(kind)], datetime.now(UTC))
            assert handled.outputs and all(o.on_reject is not None for o in handled.outputs)
            gone = weakref.ref(handled)
            del handled
            assert gone() is None, f"a {kind} record's Handled outlived its last reference"
    finally:
        gc.enable()


def test_a_refused_output_still_marks_its_input_rejected() -> None:
    outputs = Outputs(Settings(create_topics=False), Metrics(), Counter())
    handled = outputs.route(Rec(), "hl7v2", [Out("publish")], datetime.now(UTC))
    assert not handled.rejected
    reject = handled.outputs[0].on_reject
    assert reject is not None
    dead = reject(RuntimeError("too large"))
    assert handled.rejected
    assert dead is not None and dead.topic == Settings().deadletter_topic
