"""The short-form filter of ``slips.letter_dropped``: compiled or not, the same answers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.phi import lexicons, slips

_COMMON = {"await": 4.0, "awaiting": 4.5, "hello": 3.5, "rare": 1.0, "naïve": 3.4, "ab": 5.0}
_WORDS = st.text(alphabet="aeiklnortwgvh", min_size=1, max_size=9) | st.sampled_from(
    ["awat", "awit", "awaiting", "awating", "hllo", "helo", "ello", "rre", "nave", "a", "aw"]
)


def _both(word: str, common: dict[str, float], bound: float) -> tuple[bool, bool]:
    with compiled.compiled(False):
        plain = slips.letter_dropped(word, common, bound)
    return plain, slips.letter_dropped(word, common, bound)


@settings(max_examples=400, deadline=None)
@given(_WORDS)
def test_the_filter_changes_no_answer(word: str) -> None:
    plain, fast = _both(word, _COMMON, 3.3)
    assert plain == fast


@pytest.mark.parametrize(
    ("word", "dropped"),
    [("awat", True), ("awit", True), ("hllo", True), ("awating", True), ("ello", False),
     ("rre", False), ("nave", False), ("wait", False)],
)  # fmt: skip
def test_a_letter_after_the_first_left_out(word: str, dropped: bool) -> None:
    assert _both(word, _COMMON, 3.3) == (dropped, dropped)


def test_every_short_form_of_the_english_words_passes_the_filter() -> None:
    english = lexicons._english().common  # noqa: SLF001
    fast = compiled.helper("words")
    if fast is None:
        pytest.skip("the words helper is not built here")
    forms = slips._forms(english, fast)  # noqa: SLF001
    sample = sorted(english)[::97]
    for word in sample:
        for i in range(1, len(word)):
            if word.isascii() and "a" <= word[i] <= "z":
                assert fast.may_be_short(forms, word[:i] + word[i + 1 :])


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=4, max_size=10))
def test_near_english_compiled_or_not(word: str) -> None:
    with compiled.compiled(False):
        plain = lexicons.near_english(word)
    assert lexicons.near_english(word) == plain
