"""Dates: one shift per patient, intervals exact, format kept, weekdays recomputed."""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import date, datetime, timedelta

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from surrogate_helpers import make_state, replace_one

from surrogates.context import SurrogateSettings, new_patient_state
from surrogates.dates import DateShifter, DateSurrogate

Fmt = Callable[[date], str]

FORMATS: dict[str, Fmt] = {
    "MM/DD/YYYY": lambda d: d.strftime("%m/%d/%Y"),
    "M/D/YYYY": lambda d: f"{d.month}/{d.day}/{d.year}",
    "MM-DD-YYYY": lambda d: d.strftime("%m-%d-%Y"),
    "MM.DD.YYYY": lambda d: d.strftime("%m.%d.%Y"),
    "YYYY-MM-DD": lambda d: d.isoformat(),
    "YYYYMMDD": lambda d: d.strftime("%Y%m%d"),
    "Month D, YYYY": lambda d: f"{d:%B} {d.day}, {d.year}",
    "MONTH D, YYYY": lambda d: f"{d:%B} {d.day}, {d.year}".upper(),
    "month D yyyy": lambda d: f"{d:%B} {d.day} {d.year}".lower(),
    "D Month YYYY": lambda d: f"{d.day} {d:%B} {d.year}",
    "Weekday, Month D, YYYY": lambda d: f"{d:%A}, {d:%B} {d.day}, {d.year}",
    "Wkd MM/DD/YYYY": lambda d: d.strftime("%a %m/%d/%Y"),
    "Month Dth, YYYY": lambda d: f"{d:%B} {d.day}{_suffix(d.day)}, {d.year}",
}
ABBREVIATED: dict[str, Fmt] = {
    "Mon D, YYYY": lambda d: f"{d:%b} {d.day}, {d.year}",
    "Mon. D": lambda d: f"{d:%b}. {d.day}",
}


def _suffix(day: int) -> str:
    return "th" if 10 <= day <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


dates = st.dates(min_value=date(1950, 1, 1), max_value=date(2035, 12, 31))
shifts = st.integers(min_value=-730, max_value=-1)


@settings(deadline=None)  # CI machines are shared: no per-example deadline
@given(d=dates, shift=shifts, name=st.sampled_from(sorted(FORMATS)))
def test_every_format_is_kept_and_moved_by_the_shift(d: date, shift: int, name: str) -> None:
    fmt = FORMATS[name]
    if name.startswith("M/D"):
        assume(d.month < 10 or d.day < 10)  # "10/22" does not tell whether it is padded
    shifter = DateShifter(timedelta(days=shift))
    assert shifter.shift_text(fmt(d)) == fmt(d + timedelta(days=shift))


@settings(deadline=None)  # CI machines are shared: no per-example deadline
@given(d=dates, shift=shifts, name=st.sampled_from(sorted(ABBREVIATED)))
def test_abbreviated_months_stay_abbreviated(d: date, shift: int, name: str) -> None:
    target = d + timedelta(days=shift)
    assume(5 not in (d.month, target.month))  # "May" is both the name and its abbreviation
    assume(abs((date(2000, d.month, min(d.day, 28)) - date(2000, 7, 1)).days) < 150)
    fmt = ABBREVIATED[name]
    assert DateShifter(timedelta(days=shift), date(d.year, 7, 1)).shift_text(fmt(d)) in {
        fmt(target),
        fmt(target).replace("Sep", "Sept"),
    }


@settings(deadline=None)  # CI machines are shared: no per-example deadline
@given(a=dates, b=dates, shift=shifts)
def test_intervals_are_preserved_exactly(a: date, b: date, shift: int) -> None:
    shifter = DateShifter(timedelta(days=shift))
    out_a = datetime.strptime(shifter.shift_text(a.strftime("%m/%d/%Y")) or "", "%m/%d/%Y")
    out_b = datetime.strptime(shifter.shift_text(f"{b:%B} {b.day}, {b.year}") or "", "%B %d, %Y")
    assert out_b - out_a == datetime.combine(b, datetime.min.time()) - datetime.combine(
        a, datetime.min.time()
    )
    assert out_a.date() != a


@settings(deadline=None)  # CI machines are shared: no per-example deadline
@given(d=dates, shift=shifts)
def test_two_digit_years_stay_two_digits(d: date, shift: int) -> None:
    reference = date(2030, 1, 1)  # two-digit years then read as 1941..2040
    assume(d.year > 1945)
    assume(d.month < 10 or d.day < 10)  # "10/22/05" does not tell whether it is padded
    out = DateShifter(timedelta(days=shift), reference).shift_text(d.strftime("%m/%d/%y"))
    assert out == (d + timedelta(days=shift)).strftime("%m/%d/%y")


@settings(deadline=None)  # CI machines are shared: no per-example deadline
@given(month=st.integers(1, 9), day=st.integers(1, 9), shift=shifts)
def test_dates_without_a_year_use_the_reference_year(month: int, day: int, shift: int) -> None:
    reference = date(2006, 5, 15)  # every 2006 date with month 1-9 is closer than 2005 / 2007
    d = date(2006, month, day)
    out = DateShifter(timedelta(days=shift), reference).shift_text(f"{d.month}/{d.day:02d}")
    target = d + timedelta(days=shift)  # "M/DD" as written: each part tells its padding
    assert out == f"{target.month}/{target.day:02d}"


def test_year_crossing_without_year_uses_the_closest_year() -> None:
    # 12/30 written in a note of 2 Jan 2006 is 30 Dec 2005; moved 3 days back: 12/27.
    shifter = DateShifter(timedelta(days=-3), date(2006, 1, 2))
    assert shifter.shift_text("12/30") == "12/27"
    assert shifter.shift_text("1/2") == "12/30"


def test_leap_day_without_a_year_is_still_a_date() -> None:
    out = DateShifter(timedelta(days=-1), date(2005, 3, 1)).shift_text("2/29")
    assert out == "2/28"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1992", "1991"),  # 2 July 1992 minus 400 days is in 1991
        ("'92", "'91"),
        ("92", "91"),
        ("in 2003", "in 2002"),
        ("July 2005", "June 2004"),
        ("7/2005", "6/2004"),
        ("3/95", "2/94"),
        ("JULY", "JUNE"),
    ],
)
def test_year_and_month_mentions_move_consistently(text: str, expected: str) -> None:
    assert DateShifter(timedelta(days=-400), date(2006, 1, 1)).shift_text(text) == expected


@settings(deadline=None)  # CI machines are shared: no per-example deadline
@given(shift=shifts, weekday=st.integers(min_value=0, max_value=6))
def test_lone_weekday_moves_by_the_shift_modulo_seven(shift: int, weekday: int) -> None:
    name = calendar.day_name[weekday]
    out = DateShifter(timedelta(days=shift)).shift_text(name)
    assert out == calendar.day_name[(weekday + shift) % 7]


def test_weekday_is_recomputed_from_the_date_in_the_span() -> None:
    # 22 July 2005 was a Friday; 10 days earlier a Tuesday.
    out = DateShifter(timedelta(days=-10)).shift_text("FRI 7/22/2005")
    assert out == "TUE 7/12/2005"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Christmas", "December 15"),
        ("christmas eve", "december 14"),
        ("Thanksgiving 2005", "November 14, 2005"),  # 24 Nov 2005 - 10 days
        ("New Year's Day", "December 22"),
        ("July 4th", "June 24th"),
    ],
)
def test_holidays_become_the_shifted_date(text: str, expected: str) -> None:
    assert DateShifter(timedelta(days=-10), date(2005, 6, 1)).shift_text(text) == expected


def test_text_with_no_date_is_redacted_not_kept() -> None:
    assert replace_one(DateSurrogate(), "the other day", "DATE") == "[DATE]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10/22/2005", "09/30/2005"),
        ("10/2/2005", "9/10/2005"),
        ("1/02/2005", "12/11/2004"),
        ("7/22", "6/30"),
        ("10/23", "10/1"),
        ("10/23/05", "10/1/05"),
        ("July 05", "June 13"),
    ],
)
def test_padding_is_read_from_the_whole_date(text: str, expected: str) -> None:
    assert DateShifter(timedelta(days=-22)).shift_text(text) == expected


def test_time_next_to_a_date_is_kept() -> None:
    assert DateShifter(timedelta(days=-1)).shift_text("07/22/2005 14:30") == "07/21/2005 14:30"


def test_surrogate_uses_the_patient_shift_and_reference() -> None:
    state = make_state(shift=-31)
    out = replace_one(DateSurrogate(), "8/31", "DATE", state=state, reference=date(2010, 9, 1))
    assert out == "7/31"


@settings(deadline=None)  # CI machines are shared: no per-example deadline
@given(
    low=st.integers(min_value=0, max_value=800),
    span=st.integers(min_value=0, max_value=800),
    draw=st.integers(min_value=0, max_value=10**6),
)
def test_new_state_shift_is_in_range_and_never_zero(low: int, span: int, draw: int) -> None:
    settings = SurrogateSettings(date_shift_min_days=low, date_shift_max_days=low + span)
    state = new_patient_state(settings, randbelow=lambda n: draw % n)
    assert state.shift_days != 0
    assert -max(1, low + span) <= state.shift_days <= -max(1, low)
    assert len(state.seed) == 32


def test_output_shape_matches_for_numeric_dates() -> None:
    out = DateShifter(timedelta(days=-100)).shift_text("07/22/2005") or ""
    assert re.fullmatch(r"\d{2}/\d{2}/\d{4}", out)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7/22-7/24", "7/12-7/14"),
        ("July 22-24", "July 12-14"),
        ("7/3-5", "6/23-25"),
        ("7/2-7/30", "6/22-7/20"),
        ("July 22 to July 25", "July 12 to July 15"),
        ("7/22/2005 - 7/24/2005", "7/12/2005 - 7/14/2005"),
        ("2005-07-22", "2005-07-12"),  # a dash-separated date is one date, not a range
        ("2005-07-22T14:30:00", "2005-07-12T14:30:00"),
        ("20050722143000", "20050712143000"),
    ],
)
def test_ranges_and_timestamps(text: str, expected: str) -> None:
    assert DateShifter(timedelta(days=-10), date(2005, 8, 1)).shift_text(text) == expected


@settings(deadline=None)
@given(start=dates, length=st.integers(0, 40), shift=shifts)
def test_a_range_keeps_its_length(start: date, length: int, shift: int) -> None:
    end = start + timedelta(days=length)
    text = f"{start:%m/%d/%Y}-{end:%m/%d/%Y}"
    out = DateShifter(timedelta(days=shift)).shift_text(text) or ""
    left, right = (datetime.strptime(p, "%m/%d/%Y") for p in out.split("-"))
    assert (right - left).days == length
