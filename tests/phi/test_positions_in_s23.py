"""``location_words.positions_in``: the compiled loop (helper "words") gives the indices the
Python code gives (its reference, under ``compiled(False)``), of the whole column or of the
indices ``among``, on drawn columns and sets and on invented notes' words, and refuses what
is no set."""

from __future__ import annotations

from itertools import compress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc
from pipelines.phi.recognizers.location_gazetteer import last_words
from pipelines.phi.recognizers.location_words import positions_in
from pipelines.phi.recognizers.locations import _picked_words, _visited
from pipelines.phi.synthetic import generate

_WORDS = st.sampled_from(["to", "in", "the", "of", "xqz", "é", "", "hospital", "Hospital", "ér"])


def _plain(words: frozenset[str] | set[str], column: tuple[str, ...]) -> list[int]:
    return list(compress(range(len(column)), map(words.__contains__, column)))


@settings(max_examples=300, deadline=None)
@given(st.frozensets(_WORDS | st.text(max_size=4)), st.lists(_WORDS | st.text(max_size=4)))
def test_positions_in_compiled_and_python_agree(words: frozenset[str], column: list[str]) -> None:
    col = tuple(column)
    want = _plain(words, col)
    assert positions_in(words, col) == want
    assert positions_in(set(words), col) == want
    with compiled.compiled(False):
        assert positions_in(words, col) == want


@settings(max_examples=300, deadline=None)
@given(
    st.frozensets(_WORDS | st.text(max_size=4)),
    st.lists(_WORDS | st.text(max_size=4)),
    st.data(),
)
def test_positions_in_among_compiled_and_python_agree(
    words: frozenset[str], column: list[str], data: st.DataObject
) -> None:
    col = tuple(column)
    among = sorted(data.draw(st.sets(st.integers(0, len(col) - 1))) if col else set())
    want = [k for k in among if col[k] in words]
    assert positions_in(words, col, among) == want
    with compiled.compiled(False):
        assert positions_in(words, col, among) == want


def test_positions_in_on_invented_notes() -> None:
    for note in generate(60, 23, "dev"):
        lowers = lx.tokens(Doc(note.text)).lowers
        for words in (_picked_words(), last_words()):
            with compiled.compiled(False):
                slow = positions_in(words, lowers)
                slow_among = positions_in(_visited(), lowers, slow)
            assert positions_in(words, lowers) == slow == _plain(words, lowers)
            among = positions_in(_visited(), lowers, slow)
            assert among == slow_among == [k for k in slow if lowers[k] in _visited()]


def test_the_compiled_loop_refuses_what_is_no_set() -> None:
    fast = compiled.helper("words")
    if fast is None:
        pytest.skip("the compiled helper is not built")
    with pytest.raises(TypeError):
        fast.positions_in({"to": 1}, ("to",))
    with pytest.raises(IndexError):
        fast.positions_in(frozenset({"to"}), ("to",), [1])
    # a dict is no set: the Python code answers for it
    assert positions_in({"to": 1}.keys(), ("to", "x", "to")) == [0, 2]
