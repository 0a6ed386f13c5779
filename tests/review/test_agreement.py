"""Kappa against tables computed by hand (Cohen's 2x2 and Fleiss' worked example)."""

from __future__ import annotations

from collections import Counter

import pytest

from pipelines.agreement import cohen_kappa, fleiss_kappa


def test_cohen_two_by_two() -> None:
    # A yes / B yes 20, yes/no 5, no/yes 10, no/no 15: p_o = 0.7; A says yes 25/50, B 30/50,
    # p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    pairs = [("y", "y")] * 20 + [("y", "n")] * 5 + [("n", "y")] * 10 + [("n", "n")] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)


def test_cohen_perfect_chance_and_disagreement() -> None:
    assert cohen_kappa([("a", "a"), ("b", "b")]) == pytest.approx(1.0)
    # always disagreeing on two balanced labels: p_o = 0, p_e = 0.5 -> -1
    assert cohen_kappa([("a", "b"), ("b", "a")]) == pytest.approx(-1.0)
    assert cohen_kappa([("a", "a"), ("a", "a")]) is None  # p_e = 1: undefined
    assert cohen_kappa([]) is None


# Fleiss (1971)'s worked table as reproduced in most texts: 10 subjects, 14 raters each,
# 5 categories. By hand: P-bar = 0.378, P_e = 0.2128, kappa = 0.2099.
FLEISS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_worked_example() -> None:
    table = [Counter({j: n for j, n in enumerate(row) if n}) for row in FLEISS]
    assert fleiss_kappa(table) == pytest.approx(0.2099, abs=5e-4)


def test_fleiss_two_raters_close_to_cohen_and_skips_single_ratings() -> None:
    # two raters, labels a/b: items (a,a) x2, (b,b) x1, (a,b) x1; one item rated once
    table = [
        Counter({"a": 2}),
        Counter({"a": 2}),
        Counter({"b": 2}),
        Counter({"a": 1, "b": 1}),
        Counter({"a": 1}),
    ]
    # P-bar = 3/4; p_a = 5/8, p_b = 3/8, P_e = 34/64; kappa = (0.75 - 0.53125) / 0.46875
    assert fleiss_kappa(table) == pytest.approx((0.75 - 34 / 64) / (1 - 34 / 64))
    assert fleiss_kappa([Counter({"a": 1})]) is None
