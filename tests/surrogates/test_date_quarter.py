"""A quarter of a year ("Q2 2019") moves as its middle day does (session 19, helper places):
before, only its year moved, as a year alone does (2 July's year), so a short shift kept the
whole date verbatim."""

from __future__ import annotations

from datetime import timedelta

from surrogates.dates import DateShifter


def test_quarter_moves_with_its_middle_day() -> None:
    shifter = DateShifter(timedelta(days=200))
    assert shifter.shift_text("Q2 2019") == "Q4 2019"  # 15 May + 200 days: 1 December


def test_quarter_keeps_its_letter_and_blank() -> None:
    shifter = DateShifter(timedelta(days=-100))
    assert shifter.shift_text("q1  2020") == "q4  2019"  # 15 Feb - 100 days: 7 November
