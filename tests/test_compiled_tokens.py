"""The compiled tokenizer (``_tokens_c.tokenize``) against the Python one (``compiled(False)``),
whole ``Tokens`` for whole ``Tokens``: on invented notes of every length, including notes past
the offsets its table of ints holds (65,536), notes that are not ASCII (the Python path either
way), apostrophes, digits and words written in several cases."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.phi import lexicons


def _tokens(text: str, enabled: bool) -> lexicons.Tokens:
    with compiled.compiled(enabled):
        return lexicons._tokenize(text)


def _same(text: str) -> lexicons.Tokens:
    """``Tokens`` of ``text`` compiled and not, field for field (the columns too, and the
    types: lists for the columns, tuples and frozensets for the words)."""
    fast, slow = _tokens(text, True), _tokens(text, False)
    assert fast == slow
    assert fast.columns == slow.columns
    assert fast.columns is not None and slow.columns is not None
    for mine, theirs in zip(fast.columns, slow.columns, strict=True):
        assert type(mine) is type(theirs) is list
    for name in ("words", "texts", "lowers", "written", "lower_set"):
        assert type(getattr(fast, name)) is type(getattr(slow, name)), name
    assert [type(word) for word in fast.words] == [lexicons.Token] * len(slow.words)
    assert [type(n) for n in fast.columns.starts + fast.columns.ends] == [int] * (
        2 * len(slow.columns.starts)
    )
    return fast


_LINE = "Seen by Dr. Quillon O'Marbeck on 12/03 at 14:05; pt's BP 120/80, it's OK.\n"


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "a",
        "Z9",
        "9z",
        "x'y'z ''a b'' c'D'e",
        "the The THE tHe the THE The",
        "ORTHO ortho Ortho oRTHO 0007 007 7",
        _LINE,
        _LINE * 40,
        _LINE.upper() * 30,
        _LINE.lower() * 30,
        "Mr. Núñez vio al Sr. Quillon en São Paulo",  # not ASCII: the Python path
        "\x1cfield\x1dsep\x1f99\x00end\x7f",
    ],
)
def test_compiled_tokens_match_on_invented_notes(text: str) -> None:
    _same(text)


def test_compiled_tokens_match_past_the_table_of_ints() -> None:
    """A note of some 90,000 characters: its offsets from 65,536 on are made one by one."""
    text = _LINE * 1200
    assert len(text) > 65_536 + 10_000
    found = _same(text)
    assert found.columns is not None
    assert found.columns.ends[-1] == len(text) - 1
    assert found.words[-1].end > 65_536


def test_short_notes_after_a_long_one_are_unchanged() -> None:
    """The table of ints grows with the longest note seen; shorter notes read the same."""
    for text in (_LINE, _LINE * 2000, _LINE * 3, "tail 1 2 3"):
        _same(text)


_PIECES = [
    "a", "I", "pt", "PT", "Pt", "pT", "seen", "SEEN", "Seen", "O'Marbeck", "o'marbeck",
    "it's", "QUILLON'S", "12", "007", "3/4", "'", "''", "x'", "-", ".", ",", "\n", "\t",
    "\x1c", "#48", "ab12CD", "Núñez", "ß", "İ",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), max_size=300).map(" ".join)
    | st.lists(st.sampled_from(_PIECES), max_size=300).map("".join)
    | st.text(alphabet=st.characters(max_codepoint=127), max_size=400)
    | st.text(alphabet="aAzZ'09 .\n", max_size=400)
)
def test_compiled_tokens_match_the_python_tokenizer(text: str) -> None:
    _same(text)
