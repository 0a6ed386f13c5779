"""The prefilter's stand-ins (``scan.stand_in``): each matches somewhere in a text exactly when
the scan pattern it stands for does, so a note's scans run or are skipped as before."""

from __future__ import annotations

import string
from typing import Any

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi import scan
from pipelines.phi.base import Doc
from pipelines.phi.recognizers import addresses, ages, date_patterns

_SCANS = [
    ages._AGES,  # noqa: SLF001
    date_patterns._NUMERIC_SHAPE,  # noqa: SLF001
    date_patterns.word_scan(),
    addresses.address_scan(),
    addresses._highway_scan(),  # noqa: SLF001
]
_PIECES = [
    "0", "1", "12", "123", "1998", "2019", "12345", "6789", "/", "-", ".", " ", "\t", "\n",
    ",", ":", "#", "'", "(", ")", "s", "Jan", "march", "May", "Dec", "mon", "Tuesday", "the",
    "th", "3rd", "of", "early", "mid", "late", "y/o", "y.o.", "yo", "yrs", "years", "year",
    "old", "age", "aged", "is", "ninety", "ninetieth", "one", "a", "hundred", "hundredth",
    "and", "two", "nineties", "90's", "hundreds", "his", "pt", "M", "female", "with", "Oak",
    "St", "Street", "Ave", "N", "apt", "Suite", "Box", "PO", "Route", "Rt", "Hwy", "RR", "MA",
    "Ohio", "zip", "Christmas", "Q2", "on", "DOB", "x",
]  # fmt: skip
# Invented texts at the edges of what the stand-ins leave out.
_EXAMPLES = [
    "in her latenineties", "his late-nineties", "the 90's", "pt in her nineties now",
    "a 3 yrs old", "102 year-old", "92-year-old man", "99 y.o. woman", "one hundred and two",
    "ninety-two years old", "aged 95", "turned 91 in May", "12-3-2019", "3/4", "1.12.1999",
    "12/2018", "5/17.88", "on Tuesday the 3rd of March 1999", "Jan5", "jan 5th, 2001",
    "mid-Dec", "14 Oak Street, Apt 3", "14 Oak St.", "Route 9 box 12", "200 Rte 28", "RR 2",
    "MA 02139-1234", "zip 12345", "12345-6789", "Christmas Eve", "Q2 2019", "DOB 071588",
    "1234", "12 34", "the 11th", "ninetieth birthday", "hundredth", "90s", "x",
]  # fmt: skip


def _present(pattern: str, text: str) -> bool:
    return re2.compile(pattern).search(text) is not None


def _pairs() -> list[tuple[Any, str]]:
    return [(p, scan._STAND_INS[p.pattern]) for p in _SCANS]  # noqa: SLF001


def test_each_scan_has_its_stand_in() -> None:
    for pattern, presence in _pairs():
        assert presence != pattern.pattern
        assert len(presence) < len(pattern.pattern)


@pytest.mark.parametrize("text", _EXAMPLES)
def test_a_stand_in_matches_where_its_scan_does(text: str) -> None:
    for pattern, presence in _pairs():
        assert _present(presence, text) == (pattern.search(text) is not None), pattern.pattern[:40]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), max_size=14).map("".join)
    | st.lists(st.sampled_from(_PIECES), max_size=10).map(" ".join)
    | st.text(alphabet=string.printable, max_size=40)
)
def test_a_stand_in_matches_somewhere_exactly_when_its_scan_does(text: str) -> None:
    for pattern, presence in _pairs():
        assert _present(presence, text) == (pattern.search(text) is not None), pattern.pattern[:40]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=14).map("".join))
def test_may_match_answers_as_the_scan_with_the_stand_ins_in_the_sets(text: str) -> None:
    doc = Doc(text)
    for pattern in _SCANS:
        assert scan.may_match(doc, pattern) == (pattern.search(text) is not None)


def test_the_examples_catch_a_stand_in_that_leaves_out_too_much() -> None:
    """The ZIP+4 alternative left out of the address stand-in, the glued month-and-day out of
    the date words': some example tells each apart (the examples have the power to)."""
    address = addresses.address_scan()
    short = scan._STAND_INS[address.pattern].removesuffix(r"|\b(?P<zip4>\d{5}-\d{4})\b")  # noqa: SLF001
    assert any(_present(short, t) != (address.search(t) is not None) for t in _EXAMPLES)
    words = date_patterns.word_scan()
    glued = "|" + date_patterns._MONTH + r"\d{1,2}\b"  # noqa: SLF001
    no_glued = scan._STAND_INS[words.pattern].replace(glued, "", 1)  # noqa: SLF001
    assert any(_present(no_glued, t) != (words.search(t) is not None) for t in _EXAMPLES)


def test_a_stand_in_given_after_the_sets_are_built_rebuilds_them() -> None:
    pattern = scan.compile_words(r"\bqzx\d{2,4}(?:-\d)?")
    doc = Doc("see qzx123-4")
    assert scan.may_match(doc, pattern)
    before = scan._search_sets(0)  # noqa: SLF001
    scan.stand_in(pattern, r"\bqzx\d\d")
    after = scan._search_sets(0)  # noqa: SLF001
    assert after is not before
    assert scan.may_match(Doc("qzx12"), pattern)
    assert not scan.may_match(Doc("qzx1 and 12"), pattern)
