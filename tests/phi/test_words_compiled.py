"""The compiled "words" helper (pipelines/phi/_words_c.pyx) against the Python it replaces: a
sorted word list's look-up (``SortedWords.lookup``) and a new word's entry for the tagger
(``Featurizer._made``), each compared with the compiled helper off (``compiled(False)``)."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.phi import lexicons
from pipelines.phi.casing import Case
from pipelines.phi.sorted_words import BLOCK, SortedWords, one_value, sorted_words
from pipelines.phi.tagger.features import Featurizer, _entry, _kinds, _word_facts

_BUILT = compiled.BUILT["words"]
needs_helper = pytest.mark.skipif(_BUILT is None, reason="the words helper is not built here")

# short ASCII words over a few letters (neighbours in sorted order, shared prefixes), with the
# characters a look-up must refuse or send elsewhere: a space, an apostrophe, a non-ASCII letter
_WORD = st.text(alphabet="abcz'", min_size=1, max_size=6)
_QUERY = _WORD | st.sampled_from(["", " ", "a b", "ab ", "é", "aé", "zzzzzzz", "a" * 70])


def _both(words: SortedWords, queries: list[str]) -> tuple[list[float | None], ...]:
    fast = [words.lookup(q) for q in queries]
    with compiled.compiled(False):
        slow = [words.lookup(q) for q in queries]
    return fast, slow


@needs_helper
@settings(max_examples=300, deadline=None)
@given(
    listed=st.lists(_WORD, unique=True, max_size=3 * BLOCK + 5),
    queries=st.lists(_QUERY, max_size=30),
    data=st.data(),
)
def test_compiled_lookup_matches_the_bisect_and_find(
    listed: list[str], queries: list[str], data: st.DataObject
) -> None:
    plain = sorted(listed)
    lines = [" ".join(plain[at : at + BLOCK]) for at in range(0, len(plain), BLOCK)]
    values = (0.0, 1.5, 2.25, 7.0)
    buckets = array(
        "B", data.draw(st.lists(st.integers(0, 3), min_size=len(plain), max_size=len(plain)))
    )
    words = sorted_words(lines, buckets, values, {"é": 3.0})
    fast, slow = _both(words, [*queries, *listed])
    assert fast == slow


@needs_helper
@settings(max_examples=100, deadline=None)
@given(listed=st.lists(_WORD, max_size=2 * BLOCK), queries=st.lists(_QUERY, max_size=20))
def test_compiled_lookup_on_one_value_lists(listed: list[str], queries: list[str]) -> None:
    """``one_value`` keeps a sorted list's repeats: every listed word answers the one value."""
    words = one_value([w for w in listed if " " not in w], 1.0)
    fast, slow = _both(words, [*queries, *listed])
    assert fast == slow


@needs_helper
def test_compiled_lookup_on_the_shipped_lists() -> None:
    census = lexicons.last_names()._words  # type: ignore[attr-defined]
    lists = [census, lexicons._english().rare, lexicons.drug_words()]
    for words in lists:
        # each line's words, the words around them with one letter changed, the list's ends
        sample = [w for line in words.lines[::7] for w in line.split()]
        near = [w[:-1] + c for w in sample for c in "az"] + [w + "s" for w in sample]
        fast, slow = _both(words, [*sample, *near, "a", "zzzzzz", "Smith", "o'neil"])
        assert fast == slow
        assert any(v is not None for v in fast)
        # the compiled look-up bisects a line by its words: each line is sorted, and repeats
        # (side by side) are in a list of one value
        for line in words.lines:
            listed = line.split()
            assert listed == sorted(listed) and line == f" {' '.join(listed)} "
            assert len(set(listed)) == len(listed) or len(words.values) == 1


@needs_helper
def test_compiled_lookup_refuses_a_list_that_is_not_ascii() -> None:
    words = sorted_words(["ab cé"], array("B", [0, 0]), (1.0,), {})
    with pytest.raises(ValueError, match="ASCII"):
        _BUILT.lookup(words, "cé", BLOCK)  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="ASCII"):
        _BUILT.lookup(words, "ca", BLOCK)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def featurizer() -> Featurizer:
    """A featurizer keeping a few hundred of the features the test words have, numbered."""
    words = ["Smith", "ann", "BOSTON", "of", "Mary's", "12", "1999", "hospital", "x", "Wife"]
    kept = {f for w in words for case in Case for f in _word_facts(w, case)[0]}
    kept |= {f"{o}{f}" for o in ("-2", "-1", "1", "2") for f in kept}
    return Featurizer(keep=kept)


_TOKEN = st.sampled_from(
    ["Smith", "SMITH", "smith", "Ann", "ann", "Boston", "of", "Mary's", "O'Neil", "12", "1999",
     "#", "hospital", "Hospital", "x", "Wife", "zosyn", "Núñez", "²", "q4h"]
) | st.text(min_size=1, max_size=8)  # fmt: skip


@needs_helper
@settings(max_examples=300, deadline=None)
@given(word=_TOKEN, case=st.sampled_from(list(Case)))
def test_compiled_entry_matches_the_python_packing(
    featurizer: Featurizer, word: str, case: Case
) -> None:
    fast = featurizer._made(case, word)
    with compiled.compiled(False):
        slow = featurizer._made(case, word)
    assert fast == slow
    assert type(fast) is tuple and len(fast) == 3


_ID = st.integers(min_value=-1, max_value=2**31 - 1)


@needs_helper
@settings(max_examples=300, deadline=None)
@given(
    table=st.dictionaries(st.text(alphabet="abc", max_size=2), st.tuples(*[_ID] * 5), max_size=6),
    features=st.lists(st.text(alphabet="abcd", max_size=2), max_size=8),
)
def test_compiled_entry_lists_each_kind_in_order(
    table: dict[str, tuple[int, ...]], features: list[str]
) -> None:
    found = [table[f] for f in features if f in table]
    kinds = [[i for i in column if i >= 0] for column in zip(*found, strict=True)] or [[]] * 5
    got = _BUILT.entry(tuple(features), table, "low", True)  # type: ignore[union-attr]
    assert got == _entry(kinds, "low", True)
    assert [list(k) for k in _kinds(got)] == kinds


@needs_helper
def test_compiled_entry_refuses_ids_that_are_not_five_ints() -> None:
    assert _BUILT is not None
    with pytest.raises(TypeError):
        _BUILT.entry(("a",), {"a": (1, 2)}, "low", True)
    with pytest.raises(TypeError):
        _BUILT.entry(("a",), {"a": (1, 2, 3, 4, "5")}, "low", True)
    with pytest.raises(OverflowError):
        _BUILT.entry(("a",), {"a": (1, 2, 3, 4, 2**31)}, "low", True)


@needs_helper
@settings(max_examples=100, deadline=None)
@given(listed=st.lists(_WORD, min_size=1, max_size=BLOCK), queries=st.lists(_QUERY, max_size=20))
def test_compiled_lookup_in_a_line_not_padded(listed: list[str], queries: list[str]) -> None:
    """A line without its spaces at either end (not one ``sorted_words`` makes) is searched
    from its start, as ``str.find`` does."""
    plain = sorted(listed)
    line = " ".join(plain) + " "
    buckets = array("B", [i % 3 for i in range(len(plain))])
    words = SortedWords([plain[0]], [line], buckets, (2.0, 3.0, 4.0), {})
    fast, slow = _both(words, [*queries, *listed])
    assert fast == slow
