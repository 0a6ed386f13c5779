"""A word's memo entry says whether it is marked (``extras._marked_words``: some gazetteer
phrase may start with it, or a kinship word), so ``_extras`` reads the marked tokens off the
entries instead of asking the set per token (session 21): the same extras, rows and marked
tokens either way, compiled and not."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.phi.lexicons import words_case_of
from pipelines.phi.tagger import extras
from pipelines.phi.tagger.features import Featurizer, _items, _marks, token_columns
from pipelines.phi.tagger.model import Tagger

_PIECES = st.sampled_from(
    [
        "Dr.", "Ann", "Lee", "saw", "the", "in", "Boston", "New", "York", "Mercy", "Hospital",
        "of", "wife", "son", "Mother", "2021", "#", "\n", "St", "Mary's", "San", "Francisco",
        "General", "Medical", "Center", "Núñez", "日本", "at", "NEW", "HAVEN", "husband",
    ]
)  # fmt: skip
_NOTES = st.lists(_PIECES, max_size=40).map(" ".join)


@pytest.fixture(scope="module")
def shipped() -> Featurizer:
    return Tagger().featurizer


@pytest.mark.parametrize("enabled", [True, False])
@settings(max_examples=150, deadline=None)
@given(text=_NOTES)
def test_rows_from_the_entries_marks_equal_rows_from_the_set(
    shipped: Featurizer, enabled: bool, text: str
) -> None:
    starts, _, words = token_columns(text)
    with compiled.compiled(enabled):
        entries = shipped._entries(words, words_case_of(text))
        lowers = [e[5] for e in entries]
        marked = _marks(entries)
        assert marked == [i for i, low in enumerate(lowers) if low in extras._marked_words()]
        items = _items(entries)
        plan = shipped._plan
        assert extras._extras(text, starts, lowers, plan, marked) == extras._extras(
            text, starts, lowers, plan
        )
        if items:
            with_marks = shipped._rows(text, starts, entries, lowers, items, marked)
            without = shipped._rows(text, starts, entries, lowers, items)
            assert with_marks == without


@pytest.mark.skipif(compiled.BUILT["rows"] is None, reason="the rows helper is not built")
@settings(max_examples=100, deadline=None)
@given(text=_NOTES)
def test_the_compiled_scan_gives_the_marked_tokens(shipped: Featurizer, text: str) -> None:
    fast = compiled.BUILT["rows"]
    assert fast is not None
    _, _, words = token_columns(text)
    entries = shipped._entries(words, words_case_of(text))
    assert fast.scan(entries) == (_items(entries), [e[5] for e in entries], _marks(entries))


def test_a_training_featurizer_s_entries_are_marked_too() -> None:
    open_set = Featurizer(None)
    assert open_set.word("wife", words_case_of("wife"))[-1] is True
    assert open_set.word("zzqx", words_case_of("zzqx"))[-1] is False
