"""The known-identifier scans skip a note early when it cannot hold the patient's number,
phone or birthday; these properties pin that the early exits never drop a span."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.document import Identifier, Identifiers
from pipelines.phi.recognizers import known
from pipelines.spans import Category, Span

_PIECES = st.sampled_from(
    [
        " ", "\n", "-", ".", "/", "0", "00", "12", "345", "6789", "1950", "50", "mrn", "A",
        "ab", "x", "Mar", "march", "Sept", "sep", "May", "of", ",", "(617) ", "555", "0100",
        "5th", "3rd", "é", "٣",
    ]
)  # fmt: skip
_TEXT = st.lists(_PIECES, max_size=16).map("".join)


def _all_numbers(text: str, wanted: dict[str, Category]) -> Iterator[Span]:
    """``known._numbers`` without its early exit."""
    for m in known._DIGIT_RUN.finditer(text):
        found = wanted.get(known._norm_digits(m.group()))
        if found is not None:
            yield Span(m.start(), m.end(), found, 1.0, known.SOURCE)


def _all_phones(text: str, phone: str) -> Iterator[Span]:
    """``known._phones`` without its early exit."""
    digits = re.sub(r"\D", "", phone)
    wanted = {digits[-10:], digits[-7:]}
    for m in known._PHONE.finditer(text):
        found = re.sub(r"\D", "", m.group())
        if found[-10:] in wanted or (len(found) == 7 and found in wanted):
            yield Span(m.start(), m.end(), Category.PHONE, 1.0, known.SOURCE)


@settings(max_examples=400, deadline=None)
@given(_TEXT, _TEXT.filter(lambda v: any(c.isalnum() for c in v)))
def test_the_number_precheck_never_drops_a_number(text: str, value: str) -> None:
    ids = Identifiers(patient_ids=(Identifier(value, "", "MR"),))
    wanted = {known._norm_digits(value): Category.MRN}
    wanted.pop("", None)
    assert list(known._numbers(text, ids)) == list(_all_numbers(text, wanted))


@settings(max_examples=400, deadline=None)
@given(_TEXT, st.sampled_from(["617-555-0100", "555 0100", "(617) 555-6789", "1950345"]))
def test_the_phone_precheck_never_drops_a_phone(text: str, phone: str) -> None:
    assert list(known._phones(text, [phone])) == list(_all_phones(text, phone))


@settings(max_examples=400, deadline=None)
@given(_TEXT, st.sampled_from([date(1950, 3, 5), date(1950, 5, 12), date(2000, 9, 3)]))
def test_the_month_precheck_never_drops_a_birthday(text: str, birth: date) -> None:
    # a non-ASCII line at the end turns the pre-check off and can hold no date itself
    assert list(known._birth_dates(text, birth)) == list(known._birth_dates(text + "\né", birth))


def test_a_birthday_written_with_its_month_name_is_found() -> None:
    text = "Born March 5, 1950; seen 5th of march 1950 and on May 12 1950."
    spans = list(known._birth_dates(text, date(1950, 3, 5)))
    assert [text[s.start : s.end] for s in spans] == ["March 5, 1950", "5th of march 1950"]


def test_a_phone_and_a_number_written_with_separators_are_found() -> None:
    text = "call 555-0100 or (617) 555.0100; MRN 00-123.45/6, acct AB1234."
    phones = list(known._phones(text, ["617-555-0100"]))
    assert [text[s.start : s.end] for s in phones] == ["555-0100", "(617) 555.0100"]
    ids = Identifiers(patient_ids=(Identifier("1234-56", "", "MR"),), account_numbers=("ab-1234",))
    numbers = list(known._numbers(text, ids))
    assert [text[s.start : s.end] for s in numbers] == ["00-123.45/6", "AB1234"]


def test_a_month_slip_is_no_birthday_and_no_failure() -> None:
    """ "Sepember" fits the month pattern but names no month: skipped, in any note."""
    for birth in (date(1950, 9, 5), date(1950, 3, 5)):
        assert list(known._birth_dates("seen Sepember 5, 1950 and 5 sepember 1950", birth)) == []


def test_numeric_and_compact_birthdays_are_found() -> None:
    text = "dob 19500305, 03051950 and 05031950; also 3/5/50, 5-3-1950 and 1950.03.05; 031950"
    found = [text[s.start : s.end] for s in known._birth_dates(text, date(1950, 3, 5))]
    assert found == ["3/5/50", "5-3-1950", "1950.03.05", "19500305", "03051950", "05031950"]
    assert list(known._birth_dates("dob 3/5/49, 19490305", date(1950, 3, 5))) == []


def _all_numeric_and_compact(text: str, birth: date) -> Iterator[Span]:
    """The numeric and compact scans of ``known._birth_dates`` without any early exit, with the
    compact forms written by ``strftime``."""
    for mt in known._NUMERIC_DATE.finditer(text):
        a, b, c = int(mt.group(1)), int(mt.group(3)), int(mt.group(4))
        if (
            known._is_birth(birth, c, a, b)
            or known._is_birth(birth, c, b, a)
            or known._is_birth(birth, a, b, c)
        ):
            yield Span(mt.start(), mt.end(), Category.DATE, 1.0, known.SOURCE)
    compact = {birth.strftime("%Y%m%d"), birth.strftime("%m%d%Y"), birth.strftime("%d%m%Y")}
    for mt in known._COMPACT_DATE.finditer(text):
        if mt.group(1) in compact:
            yield Span(mt.start(), mt.end(), Category.DATE, 1.0, known.SOURCE)


_BIRTHS = st.sampled_from(
    [date(1950, 3, 5), date(1931, 7, 14), date(2005, 11, 30), date(1999, 12, 1), date(987, 6, 7)]
)


@st.composite
def _dated_text(draw: st.DrawFn) -> tuple[str, date]:
    """Text of numbers near the birth date's own (padded or not, in any order, with any of
    the three delimiters, sometimes mixed) and its compact forms, between other pieces."""
    birth = draw(_BIRTHS)
    y, m, d = birth.year, birth.month, birth.day
    numbers = st.sampled_from(
        [str(v) for v in (y, y % 100, m, d, m + 1, d - 1, 20, 0)]
        + [f"{v:02d}" for v in (y % 100, m, d)]
        + [birth.strftime(f) for f in ("%Y%m%d", "%m%d%Y", "%d%m%Y")]
    )
    seps = st.sampled_from(["/", "-", "."])
    # a date shape: three numbers and two delimiters, mostly the same one twice
    shaped = st.tuples(numbers, seps, numbers, seps | st.just(""), numbers).map(
        lambda t: t[0] + t[1] + t[2] + (t[3] or t[1]) + t[4]
    )
    others = st.sampled_from(["/", "-", ".", " ", "\n", "a", "x1", ","])
    pieces = st.one_of(shaped, numbers, others)
    return "".join(draw(st.lists(pieces, max_size=10))), birth


@settings(max_examples=1500, deadline=None)
@given(_dated_text())
def test_the_numeric_birthday_precheck_never_drops_a_birthday(case: tuple[str, date]) -> None:
    text, birth = case
    # the month-name scans find nothing in these texts (no letters of a month), so the
    # whole result is the numeric and compact scans'
    assert list(known._birth_dates(text, birth)) == list(_all_numeric_and_compact(text, birth))


def test_the_numeric_birthday_precheck_lets_each_reading_through() -> None:
    birth = date(1931, 7, 14)
    text = "7/14/1931 14.7.31 1931-07-14 07/14/31 7-14-31 19310714 07141931 14071931"
    found = [text[s.start : s.end] for s in known._birth_dates(text, birth)]
    assert found == text.split()
    assert not list(known._birth_dates("7/15/1931 31.14.7 1931/14-07", birth))


@st.composite
def _month_named_text(draw: st.DrawFn) -> tuple[str, date]:
    """Month-name dates near the birth date's own (month first or day first, two- or
    four-digit years) between other pieces."""
    birth = draw(_BIRTHS.filter(lambda b: b.year >= 1000))
    y, d = birth.year, birth.day
    month = draw(st.sampled_from([birth.strftime("%B"), birth.strftime("%b"), "May", "Sept"]))
    month = draw(st.sampled_from([month, month.upper(), month.lower()]))
    day = draw(st.sampled_from([str(d), f"{d:02d}", f"{d}th", str(d % 28 + 1)]))
    year = draw(st.sampled_from([str(y), str(y % 100), f"{y % 100:02d}", str(y + 1)]))
    shaped = draw(st.sampled_from([f"{month} {day}, {year}", f"{day} of {month} {year}"]))
    around = st.lists(st.sampled_from([" ", "\n", "x", "12", "/", str(d)]), max_size=4)
    return "".join(draw(around)) + shaped + "".join(draw(around)), birth


@settings(max_examples=800, deadline=None)
@given(_month_named_text())
def test_the_month_name_precheck_never_drops_a_birthday(case: tuple[str, date]) -> None:
    text, birth = case
    # a non-ASCII line at the end turns every pre-check off and can hold no date itself
    assert list(known._birth_dates(text, birth)) == list(known._birth_dates(text + "\né", birth))
