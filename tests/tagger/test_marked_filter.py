"""The filter ``_rows_c.marked`` turns most words away with before its set look-ups
(``extras._marked_filter``, session 23): every marked word passes it, and the tokens found
with it are those found without it and by the Python scan (``extras._marked``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.phi.tagger import extras

_BUILT = compiled.BUILT["rows"]
pytestmark = pytest.mark.skipif(_BUILT is None, reason="the rows helper is not built")


def _filter() -> bytes:
    assert _BUILT is not None
    return extras._marked_filter(_BUILT.MARK_BITS)


def test_every_marked_word_passes_the_filter() -> None:
    bits = _filter()
    mask = len(bits) * 8 - 1
    for word in extras._marked_words():
        h = hash(word) & 0xFFFF_FFFF_FFFF_FFFF
        for at in (h & mask, (h >> 32) & mask):
            assert bits[at >> 3] >> (at & 7) & 1


_KNOWN = sorted(extras._marked_words())
_WORDS = st.one_of(
    st.sampled_from(_KNOWN),
    st.sampled_from(["zzqx", "plorvin", "the", "of", "mrs", "ward", "\n", ",", "7/19"]),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz'.-", min_size=1, max_size=9),
)


@settings(max_examples=200, deadline=None)
@given(lowers=st.lists(_WORDS, max_size=60))
def test_the_tokens_marked_with_the_filter_are_those_without_it(lowers: list[str]) -> None:
    assert _BUILT is not None
    args = (lowers, extras._marked_words(), extras._second_words(), extras._ALONE, extras._KIN)
    found = _BUILT.marked(*args, _filter())
    assert found == _BUILT.marked(*args) == extras._marked(lowers)


def test_the_compiled_marked_refuses_a_filter_of_another_size() -> None:
    assert _BUILT is not None
    with pytest.raises(ValueError):
        _BUILT.marked([], frozenset(), {}, frozenset(), frozenset(), b"\0" * 8)
