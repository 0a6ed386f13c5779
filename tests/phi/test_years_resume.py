"""The years scan's "74'" takes the character after it (so "the 80's" is no match) and the
search resumes at that character: the same matches as the scan without it, less the refused
"NN's", and the same spans, with re2's internals and without."""

from __future__ import annotations

from typing import Any

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import re2_boundary
from pipelines.phi.base import Doc
from pipelines.phi.recognizers import years
from pipelines.spans import Span

_OLD = re2.compile(years._YEAR_SCAN.pattern.replace(r"'(?-i:[^sS]|\z)", "'", 1))  # noqa: SLF001
_PIECES = [
    "80", "95", "'", "s", "S", "'s", "1998", "2001", "74", "MI", "CABG", "CVA", "in", " ", ",",
    "and", "x", "\n", "\u017f", "é", "0", "-", "/", "since the", "the", "mid", "'95", "9",
    "\"", "ok",
]  # fmt: skip
_TEXTS = st.lists(st.sampled_from(_PIECES), max_size=14).map("".join)


def _old_detect(text: str) -> list[Span]:
    note = years._Note(text)  # noqa: SLF001
    found: list[Span] = []
    for m in _OLD.finditer(text):
        years.PASSES.judge(years._TABLE, note, text, m, found)  # noqa: SLF001
    found += [years.PASSES.make("years.span", pair) for pair in note.ranges]
    return found + years._chain(note, found)  # noqa: SLF001


def _groups(m: Any) -> tuple[tuple[int, int], ...]:
    return tuple(m.span(g) for g in range(1, _OLD.groups + 1))


def _refused(m: Any, text: str) -> bool:
    """An old "74'" match the new scan leaves out: followed by s or S."""
    return m.start(years._A2) >= 0 and text[m.end() : m.end() + 1] in ("s", "S")  # noqa: SLF001


@pytest.mark.parametrize("fast", [True, False])
@settings(max_examples=300, deadline=None)
@given(text=_TEXTS)
def test_the_scan_finds_the_old_matches_less_the_refused(fast: bool, text: str) -> None:
    with re2_boundary.internals(fast):
        new = [
            _groups(m)
            for m in re2_boundary.finditer_resuming(
                years._YEAR_SCAN,  # noqa: SLF001
                text,
                years._resume,  # noqa: SLF001
            )
        ]
        old = [_groups(m) for m in _OLD.finditer(text) if not _refused(m, text)]
        assert new == old
        assert years.YearRecognizer().detect(Doc(text)) == _old_detect(text)


@pytest.mark.parametrize(
    "text",
    ["MI in the 80's, CABG '95", "CVA 74'\n", "CVA 74'", "the 80's1998", "74''95", "74'1998",
     "in 80'S and 90's", "MI 74'\u017f", "x 12'é 1999", "in 74' and 1988"],
)  # fmt: skip
def test_invented_notes_give_the_old_spans(text: str) -> None:
    for fast in (True, False):
        with re2_boundary.internals(fast):
            assert years.YearRecognizer().detect(Doc(text)) == _old_detect(text)


def test_the_commonest_refused_match_is_no_match_now() -> None:
    assert (
        list(re2_boundary.finditer_resuming(years._YEAR_SCAN, "sats in the 90's", years._resume))
        == []
    )  # noqa: SLF001
    assert len(list(_OLD.finditer("sats in the 90's"))) == 1
