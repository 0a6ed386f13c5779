"""Patterns rewritten for speed find exactly what their plain spelling finds.

The stdlib ``re`` only skips ahead in C when a pattern opens with a character class, so some
patterns are spelt "\\d\\d{0,3}" instead of "\\d{1,4}" or carry their look-behind after the first
digit; these properties pin that the rewrite changed no match, group or split.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi.recognizers import contact, date_patterns, dates, known

# digits (ASCII and not), the separators the patterns care about, letters, quotes, "@"
_TEXT = st.text(alphabet="0123456789٣/.-:' ’abzAZé@_%+\n", max_size=40)

_PLAIN = {
    "numeric": re.compile(dates._NUMERIC_BODY + date_patterns._NUMERIC_END),
    "numeric_date": re.compile(r"(?<!\d)(\d{1,4})([/.-])(\d{1,2})\2(\d{1,4})(?!\d)"),
    "compact_date": re.compile(r"(?<!\d)(\d{8})(?!\d)"),
}
_FAST = {
    "numeric": dates._NUMERIC,
    "numeric_date": known._NUMERIC_DATE,
    "compact_date": known._COMPACT_DATE,
}


def _found(
    pattern: re.Pattern[str], text: str
) -> list[tuple[tuple[int, int], tuple[str | None, ...]]]:
    return [(m.span(), m.groups()) for m in pattern.finditer(text)]


@settings(max_examples=500, deadline=None)
@given(_TEXT)
def test_rewritten_patterns_match_as_written_plainly(text: str) -> None:
    for name, plain in _PLAIN.items():
        assert _found(_FAST[name], text) == _found(plain, text), name


@settings(max_examples=500, deadline=None)
@given(_TEXT)
def test_the_email_precheck_never_hides_an_address(text: str) -> None:
    if contact._EMAIL.search(text):
        assert contact._email_at(text)


def test_the_email_precheck_skips_at_signs_for_at() -> None:
    assert not contact._email_at("pt seen @ 0800, meds given @1000; @")
    assert contact._email_at("contact jdoe@example.org")
