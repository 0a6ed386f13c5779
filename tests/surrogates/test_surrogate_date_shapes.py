"""Date shapes the detector learned in session 16: each moves by the patient's shift, format kept.

Invented dates only. A two-digit year stays two digits, a month name keeps its case and
abbreviation, a range keeps its order and length, and the original never survives.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from surrogate_helpers import make_ctx, make_state, replace_all, replace_one

from surrogates.dates import DateShifter, DateSurrogate

SHIFT = timedelta(days=-200)
REFERENCE = date(1999, 1, 20)  # the note's date: dates without a year are read near it


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dec of 98", "May of 98"),  # 15 Dec 1998 - 200 days: May 1998
        ("Jan of 98", "Jun of 97"),  # the year moves with the month
        ("JAN OF 1998", "JUN OF 1997"),
        ("Jan 98", "Jun 97"),
        ("Jan-98", "Jun-97"),
        ("Jan. '98", "Jun. '97"),
        ("Dec. '98", "May '98"),  # "May" is no abbreviation: no period
        ("3 12 98", "8 24 97"),  # m d yy set apart by blanks
        ("03 12 1998", "08 24 1997"),
        ("07151988", "12281987"),  # MMDDYYYY
        ("071588", "122887"),  # MMDDYY
        ("15071988", "28121987"),  # DDMMYYYY when the first pair is no month
        ("12-Dec", "26-May"),  # no year: the one nearest the note's date (1998)
        ("12 Dec", "26 May"),
        ("3/2-9", "8/14-21"),  # a day range in one month
        ("3/30-4/2", "9/11-9/14"),
        ("3-9 Dec", "17-23 May"),
        ("9->10 Apr, 87", "21->22 Sep, 86"),
        ("30 Jun-2 Jul 98", "12 Dec-14 Dec 97"),
        ("Jul 1-3, 1998", "Dec 13-15, 1997"),  # the year after the right day is both ends
        ("Jul 1-3 '98", "Dec 13-15 '97"),  # the left end is read in the right's year
        ("1998-2001", "1997-2000"),
        ("1965 to 1992", "1964 to 1991"),
        ("1998-99", "1997-98"),
        ("2005-07", "2004-12"),  # YYYY-MM
        ("Winter 2010", "Winter 2009"),
        ("5/17.88", "10/30.87"),
        ("4 Apr, 87", "16 Sep, 86"),
        ("15-Dec-98", "29-May-98"),
        ("03/Dec/98", "17/May/98"),
        ("3.Dec.98", "17.May.98"),
        ("03DEC1998", "17MAY1998"),
        ("3Dec98", "17May98"),
        ("Dec 3 98", "May 17 98"),
        ("Jan 3, 98", "Jun 17, 97"),
        ("Jan 3 10:30", "Jun 17 10:30"),  # a clock is no year
        ("3rd of Jan", "17th of Jun"),
        ("the 12th", "the 26th"),  # a day alone: of the month nearest the note's date
        ("3rd-5th", "18th-20th"),
    ],
)
def test_each_shape_is_shifted_in_its_own_format(text: str, expected: str) -> None:
    assert DateShifter(SHIFT, REFERENCE).shift_text(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dec 30, 1998 - Jan 2", "Dec 20, 1998 - Dec 23"),
        ("Dec 30 - Jan 2, 1999", "Dec 20 - Dec 23, 1998"),
        ("30-31 Dec 98", "20-21 Dec 98"),
    ],
)
def test_an_end_without_a_year_takes_the_other_ends(text: str, expected: str) -> None:
    # The note is years later: read alone, "Jan 2" would be of 2005.
    assert DateShifter(timedelta(days=-10), date(2005, 6, 1)).shift_text(text) == expected


def test_no_date_in_the_text_is_still_a_tag() -> None:
    for text in ("the other day", "32nd", "13 45 98"):
        assert replace_one(DateSurrogate(), text, "DATE") == "[DATE]"


def test_one_date_in_two_shapes_moves_alike_in_a_note_and_across_notes() -> None:
    state = make_state(shift=-200)
    text = "seen 12-Dec, again 12/12/98; DOB 07151988"
    out = replace_all(
        DateSurrogate(), make_ctx(text, state, REFERENCE), "DATE", "12-Dec", "12/12/98", "07151988"
    )
    assert out == ["26-May", "5/26/98", "12281987"]
    later = "f/u Dec of 98 and 12 Dec 98; born 071588"
    ctx = make_ctx(later, state, date(1999, 6, 1))
    out = replace_all(DateSurrogate(), ctx, "DATE", "Dec of 98", "12 Dec 98", "071588")
    assert out == ["May of 98", "26 May 98", "122887"]


# -- properties: each shape over generated dates ----------------------------------------------
Fmt = Callable[[date], str]


def _yy(d: date) -> str:
    return f"{d.year % 100:02d}"


# (format, what it tells: "day" | "month" | "year", written without a year)
SHAPES: dict[str, tuple[Fmt, str, bool]] = {
    "Mon of YY": (lambda d: f"{d:%b} of {_yy(d)}", "month", False),
    "Month of YYYY": (lambda d: f"{d:%B} of {d.year}", "month", False),
    "MON-YY": (lambda d: f"{d:%b}-{_yy(d)}".upper(), "month", False),
    "M D YY": (lambda d: f"{d.month} {d.day} {_yy(d)}", "day", False),
    "MM DD YYYY": (lambda d: f"{d:%m %d %Y}", "day", False),
    "MMDDYYYY": (lambda d: f"{d:%m%d%Y}", "day", False),
    "MMDDYY": (lambda d: f"{d:%m%d}{_yy(d)}", "day", False),
    "D-Mon": (lambda d: f"{d.day}-{d:%b}", "day", True),
    "D Mon": (lambda d: f"{d.day} {d:%b}", "day", True),
    "D-Mon-YY": (lambda d: f"{d.day}-{d:%b}-{_yy(d)}", "day", False),
    "DMONYYYY": (lambda d: f"{d.day}{d:%b}{d.year}".upper(), "day", False),
    "D Mon, YY": (lambda d: f"{d.day} {d:%b}, {_yy(d)}", "day", False),
    "Mon D YY": (lambda d: f"{d:%b} {d.day} {_yy(d)}", "day", False),
    "M/D.YY": (lambda d: f"{d.month}/{d.day}.{_yy(d)}", "day", False),
    "Dth": (lambda d: f"{d.day}{_suffix(d.day)}", "day", True),
    "YYYY-MM": (lambda d: f"{d:%Y-%m}", "month", False),
    "Season YYYY": (lambda d: f"Winter {d.year}", "year", False),
}


def _suffix(day: int) -> str:
    return "th" if 10 <= day <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def _target(d: date, tells: str, shift: timedelta) -> date:
    """What the shifted text must say: the day; for a month its 15th; for a year 2 July."""
    anchor = {"day": d, "month": d.replace(day=15), "year": date(d.year, 7, 2)}[tells]
    return anchor + shift


dates = st.dates(min_value=date(1950, 1, 1), max_value=date(2035, 12, 31))
shifts = st.integers(min_value=-730, max_value=-30)  # the project's default range


def _padding_told(d: date) -> bool:
    return d.month < 10 or d.day < 10  # "10 22 98" does not tell whether it is padded


@settings(deadline=None)  # CI machines are shared: no per-example deadline
@given(d=dates, days=shifts, name=st.sampled_from(sorted(SHAPES)))
def test_every_shape_reads_back_as_the_date_plus_the_shift(d: date, days: int, name: str) -> None:
    fmt, tells, yearless = SHAPES[name]
    shift = timedelta(days=days)
    target = _target(d, tells, shift)
    if tells == "year":
        assume(target.year != d.year)  # under ~6 months a year alone stays (the project's rule)
    if yearless:  # written without a year, a day keeps its text when the shift is whole
        assume((target.month, target.day) != (d.month, d.day))  # years ("1 Jan" a year back)
    if name == "Dth":
        assume(target.day != d.day)  # a day alone keeps its number when the shift spans months
    if name.startswith("M D") or name.startswith("M/D"):
        assume(_padding_told(d) and _padding_told(target))
    assume(
        5 not in (d.month, target.month) or "mon" not in name.lower()
    )  # "May": name or abbreviation?
    original = fmt(d)
    # The note's date: the date itself, so a date without a year is read in its own year and a
    # two-digit year in its own century.
    out = DateShifter(shift, d).shift_text(original)
    assert out == fmt(target)
    assert not re.search(rf"(?<!\w){re.escape(original)}(?!\w)", out)


@settings(deadline=None)  # CI machines are shared: no per-example deadline
@given(start=dates, length=st.integers(0, 40), days=shifts)
def test_a_day_range_keeps_its_order_and_length(start: date, length: int, days: int) -> None:
    end = start + timedelta(days=length)
    assume(end.month == start.month)
    shift = timedelta(days=days)
    a, b = start + shift, end + shift
    shifter = DateShifter(shift, start)
    out = shifter.shift_text(f"{start.month}/{start.day}-{end.day}")
    same = a.month == b.month
    assert out == (f"{a.month}/{a.day}-{b.day}" if same else f"{a.month}/{a.day}-{b.month}/{b.day}")
    out = shifter.shift_text(f"{start.day}-{end.day} {start:%B} {start.year}")
    tail = f" {b:%B} {b.year}"
    assert out == (f"{a.day}-{b.day}{tail}" if same else f"{a.day} {a:%B} {a.year}-{b.day}{tail}")
    out = shifter.shift_text(f"{start:%B} {start.day}-{end.day}, {start.year}")
    if same:
        assert out == f"{a:%B} {a.day}-{b.day}, {b.year}"
    elif a.year == b.year:
        assert out == f"{a:%B} {a.day}-{b:%B} {b.day}, {b.year}"
    else:
        assert out == f"{a:%B} {a.day}, {a.year}-{b:%B} {b.day}, {b.year}"


@settings(deadline=None)  # CI machines are shared: no per-example deadline
@given(first=st.integers(1950, 2030), length=st.integers(1, 30), days=st.integers(-730, -184))
def test_a_year_range_keeps_its_length(first: int, length: int, days: int) -> None:
    shifter = DateShifter(timedelta(days=days))
    moved = shifter.shift_year(first)
    assert moved < first  # 2 July moved back over half a year
    for sep in ("-", " to "):
        out = shifter.shift_text(f"{first}{sep}{first + length}")
        assert out == f"{moved}{sep}{moved + length}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1990s", "1980s"),  # 2 July 1990 - 200 days is in 1989: the decade of 1989
        ("1990's", "1980's"),
        ("1970S", "1960S"),
        ("'90s", "'80s"),
        ("90s", "80s"),
        ("December the 3rd", "May the 17th"),  # one date, not a month and a lone day
        ("MARCH THE 21ST", "SEPTEMBER THE 2ND"),
        ("mid-2004", "mid-2003"),
        ("EARLY-2010", "EARLY-2009"),
        ("2004-03-02T08:15", "2003-08-14T08:15"),  # the clock after the T stays
    ],
)
def test_session_17_shapes_are_shifted_in_their_own_format(text: str, expected: str) -> None:
    assert DateShifter(SHIFT, REFERENCE).shift_text(text) == expected
