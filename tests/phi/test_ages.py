"""Ages over 89 in every expression class; ages up to 89 and vital-sign decades are kept."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi.base import Doc
from pipelines.phi.recognizers.ages import AgeRecognizer
from pipelines.spans import Category

AGES = AgeRecognizer()


def found(text: str, recognizer: AgeRecognizer = AGES) -> list[str]:
    return [text[s.start : s.end] for s in recognizer.detect(Doc(text)) if s.confidence >= 0.5]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("93 yo woman admitted", "93 yo"),
        ("a 93 y/o male", "93 y/o"),
        ("pt is a 93-year-old man", "93-year-old"),
        ("101 years of age", "101 years of age"),
        ("at the age of 93 she", "93"),
        ("aged 97, lives alone", "97"),
        ("Age: 95", "95"),
        ("celebrated her ninety-third birthday", "ninety-third birthday"),
        ("ninety three years old", "ninety three years old"),
        ("one hundred years old", "one hundred years old"),
        ("his 93rd birthday", "93rd birthday"),
        ("a woman in her late 90s", "late 90s"),
        ("he is in his nineties", "nineties"),
        ("aged 93 years", "93"),
        ("93yo F", "93yo"),
        ("93-yr-old", "93-yr-old"),
    ],
)
def test_ages_over_89(text: str, expected: str) -> None:
    assert expected in found(text)
    assert all(s.category is Category.AGE for s in AGES.detect(Doc(text)))


@pytest.mark.parametrize(
    "text",
    [
        "58 yo female",
        "89 year old man",
        "age 89",
        "sats mid 90's on 2L",
        "sats in the late 90s",
        "BP 90s systolic",
        "ninety minutes later",
        "O2 sat 93 on RA",
        "90 mg lasix",
    ],
)
def test_not_ages_over_89(text: str) -> None:
    assert found(text) == []


def test_ceiling_is_a_policy_option() -> None:
    strict = AgeRecognizer({"ceiling": 80})
    assert found("85 yo man", strict) == ["85 yo"]
    assert found("85 yo man") == []


def test_unit_confirms() -> None:
    strong = AGES.detect(Doc("93 year old"))[0]
    weak = AGES.detect(Doc("for 93 years"))[0]
    assert strong.confidence > weak.confidence


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_never_raises_and_spans_in_bounds(text: str) -> None:
    for span in AGES.detect(Doc(text)):
        assert 0 <= span.start < span.end <= len(text)
