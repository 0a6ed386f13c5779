"""Regression cases as data: every ``tests/regression/*.toml`` file, run through the Detector.

File format (shared by all recognizer families)::

    categories = ["DATE"]          # optional: which predicted categories are compared;
                                   # default: the categories named in the file's spans
    [[case]]
    id = "slash-md"
    text = "Found on floor 7/22 by husband; BP 120/80."
    spans = [[15, 19, "DATE"]]     # expected [start, end, CATEGORY], end exclusive
    must_not = ["120/80"]          # optional: substrings no predicted span may touch
    known_weakness = "why"         # optional: expected to fail (strict xfail) until fixed

Like deduce's regression tests, the comparison is on span *sets*: the predicted spans of the
compared categories must equal the expected ones exactly (missing and extra both fail), so
a case pins both recall and precision for its categories.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from pipelines.phi.detector import Detector
from pipelines.spans import Category

REGRESSION_DIR = Path(__file__).resolve().parents[1] / "regression"


def _load() -> list[Any]:
    params = []
    for path in sorted(REGRESSION_DIR.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        cases = data.get("case", [])
        named = {Category(c) for case in cases for _, _, c in case.get("spans", [])}
        compared = {Category(c) for c in data.get("categories", [])} or named
        for case in cases:
            # a known weakness stays in the file, fails as expected, and fails the suite
            # the day it is fixed (strict), so the case is then promoted to a plain one
            marks = (
                [pytest.mark.xfail(strict=True, reason=case["known_weakness"])]
                if "known_weakness" in case
                else []
            )
            params.append(
                pytest.param(case, frozenset(compared), id=f"{path.stem}:{case['id']}", marks=marks)
            )
    return params


@pytest.fixture(scope="module")
def detector() -> Detector:
    return Detector()


def test_regression_files_exist() -> None:
    assert list(REGRESSION_DIR.glob("*.toml")), "no regression data files"


@pytest.mark.parametrize(("case", "compared"), _load())
def test_regression_case(
    case: dict[str, Any], compared: frozenset[Category], detector: Detector
) -> None:
    text: str = case["text"]
    expected = {(int(s), int(e), Category(c)) for s, e, c in case.get("spans", [])}
    for start, end, _ in expected:
        assert 0 <= start < end <= len(text), f"bad expected offsets in {case['id']}"
    spans = detector.detect(text)
    predicted = {(s.start, s.end, s.category) for s in spans if s.category in compared}
    show = lambda items: sorted((text[s:e], c.value) for s, e, c in items)  # noqa: E731
    assert predicted == expected, (
        f"missing {show(expected - predicted)}, unexpected {show(predicted - expected)}"
    )
    for needle in case.get("must_not", []):
        at = text.find(needle)
        assert at >= 0, f"must_not substring {needle!r} is not in the text"
        hit = [s for s in spans if s.start < at + len(needle) and at < s.end]
        assert not hit, f"{needle!r} was flagged as {[s.category.value for s in hit]}"
