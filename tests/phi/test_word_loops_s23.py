"""The compiled word loops of s23-wordloops (helper "words") against their Python references
under ``compiled(False)``: ``word_positions.positions`` (a few words compared, more looked
up) and the pick before the hospital-acronym scan (``facility_acronyms._shaped``), on drawn
words and on invented notes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc
from pipelines.phi.recognizers import facility_acronyms as fa
from pipelines.phi.synthetic import generate
from pipelines.phi.word_positions import FEW_WORDS, positions

_WORDS = st.sampled_from(
    ["to", "in", "the", "xqz", "é", "éé", "\U0001f600", "hospital", "QRMC", "QH", "qmh", "ach"]
)


def _plain(present: frozenset[str], column: tuple[str, ...]) -> list[int]:
    return [k for k, word in enumerate(column) if word in present]


@settings(max_examples=400, deadline=None)
@given(st.lists(_WORDS | st.text(max_size=4)), st.data())
def test_positions_compiled_and_python_agree(column: list[str], data: st.DataObject) -> None:
    col = tuple(column)
    # ``where`` asks for words of the column (``tuple.index`` finds each at least once)
    present = frozenset(data.draw(st.sets(st.sampled_from(col), max_size=7)) if col else ())
    want = _plain(present, col)
    assert positions(col, present) == want
    assert positions(col, set(present)) == want
    with compiled.compiled(False):
        assert positions(col, present) == want


def test_positions_equal_strings_not_the_same_object() -> None:
    column = tuple("".join(["ab", c]) for c in "cdcdc")  # built: no interned literal
    assert positions(column, {"abc"}) == [0, 2, 4]
    many = {"abd", "abc", "x", "y", "z"}
    assert len(many) > FEW_WORDS
    assert positions(column, many) == [0, 1, 2, 3, 4]
    with compiled.compiled(False):
        assert positions(column, {"abc"}) == [0, 2, 4]


def test_positions_compiled_refuses_what_it_cannot_read() -> None:
    fast = compiled.helper("words")
    if fast is None:
        pytest.skip("the words helper is not built")
    with pytest.raises(TypeError):
        fast.positions(("a",), {"a": 1}, FEW_WORDS)
    with pytest.raises(TypeError):
        fast.positions(("a",), {1}, FEW_WORDS)


_ACRONYM_LIKE = st.from_regex(r"[A-Za-z]{0,5}(MC|mh|CH|ch|H|gh|rh|mc)", fullmatch=True)


@settings(max_examples=400, deadline=None)
@given(st.frozensets(_WORDS | _ACRONYM_LIKE | st.text(max_size=8), max_size=12))
def test_shaped_compiled_and_python_agree(written: frozenset[str]) -> None:
    got = fa._shaped(written)
    with compiled.compiled(False):
        assert got == fa._shaped(written)


def test_shaped_on_invented_notes() -> None:
    for note in generate(60, 29, "dev"):
        written = lx.tokens(Doc(note.text)).written
        extra = written | {"QXMC", "QH", "qmh", "whICH", "Zorch"}
        for words in (written, extra):
            got = fa._shaped(words)
            with compiled.compiled(False):
                assert got == fa._shaped(words)
    assert fa._shaped(frozenset({"QXMC", "QH", "qmh", "QQQQQQMC", "ach"})) == (
        {"QXMC", "QH"},
        {"qmh", "ach"},
    )


def test_with_tail_keeps_the_shapes_and_gives_up_on_other_scripts() -> None:
    fast = compiled.helper("words")
    if fast is None:
        pytest.skip("the words helper is not built")
    tails, longest = fa._tails()
    kept = fast.with_tail(["QXMC", "which", "QH", "H", "seen", "QQQQQQMC", "MC"], tails, longest)
    assert kept == ["QXMC", "which", "QH", "MC"]
    assert fast.with_tail(["QXMC", "Müller"], tails, longest) is None
    with pytest.raises(ValueError):
        fast.with_tail(["QXMC"], b"", longest)
