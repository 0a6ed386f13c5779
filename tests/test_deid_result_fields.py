"""``DeidResult`` writes its slots through a hand-written ``__init__`` (one setter per field,
taken by name): every field must be set, each to its own argument."""

from __future__ import annotations

import inspect
from dataclasses import fields

from pipelines.deidentify import DeidResult
from pipelines.spans import Category, Span


def test_every_field_is_a_parameter_of_init() -> None:
    params = list(inspect.signature(DeidResult.__init__).parameters)[1:]
    assert params == [f.name for f in fields(DeidResult)]


def test_each_field_gets_its_own_argument() -> None:
    span = Span(0, 4, Category.NAME_PATIENT, 1.0, "rule")
    chosen = Span(5, 9, Category.DATE, 1.0, "rule")
    values = {
        "text": "text",
        "spans": (span,),
        "held_reason": "reason",
        "stage_seconds": {"detect": 1.5},
        "state_changed": True,
        "leaks": {"NAME": 2},
        "detected": 7,
        "chosen": (chosen,),
        "held_class": "oversize_note",
    }
    result = DeidResult(**values)  # type: ignore[arg-type]
    assert {f.name: getattr(result, f.name) for f in fields(DeidResult)} == values


def test_defaults_match_the_declared_ones() -> None:
    result = DeidResult("t", (), None)
    for f in fields(DeidResult)[3:]:
        expected = {} if f.name == "leaks" else f.default
        if f.name == "stage_seconds":
            assert dict(result.stage_seconds) == {}
            continue
        assert getattr(result, f.name) == expected, f.name
