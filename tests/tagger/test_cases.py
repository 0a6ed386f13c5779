"""Invented cases for the whole default detector (rules united with the shipped tagger)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from pipelines.phi.detector import Detector

CASES = tomllib.loads((Path(__file__).parent / "cases.toml").read_text(encoding="utf-8"))["case"]


@pytest.fixture(scope="module")
def detector() -> Detector:
    return Detector()


def test_the_default_policy_runs_the_tagger(detector: Detector) -> None:
    assert "tagger" in [r.name for r in detector.recognizers]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(case: dict[str, Any], detector: Detector) -> None:
    text: str = case["text"]
    spans = detector.detect(text)
    covered = {i for s in spans for i in range(s.start, s.end)}
    for phrase in case["must_cover"]:
        at = text.index(phrase)
        missing = [
            i for i in range(at, at + len(phrase)) if i not in covered and not text[i].isspace()
        ]
        assert not missing, f"{phrase!r} not fully covered"
    for phrase in case.get("must_not", []):
        at = text.index(phrase)
        assert not covered & set(range(at, at + len(phrase))), f"{phrase!r} touched"
