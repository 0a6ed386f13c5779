"""The tagger's compiled rows (``pipelines/phi/tagger/_rows_c.pyx``) equal the Python code they
replace (``Featurizer.encode``, ``Featurizer._rows``, ``extras._after_breaks``): the same items,
lower cases, packed bytes and counts, with the helper on and off (``compiled.compiled``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.phi.lexicons import words_case_of
from pipelines.phi.tagger import extras
from pipelines.phi.tagger.features import Encoded, Featurizer, token_columns
from pipelines.phi.tagger.model import Tagger

_BUILT = compiled.BUILT["rows"]
pytestmark = pytest.mark.skipif(_BUILT is None, reason="the rows helper is not built here")

# words the shipped model knows, pair words, kinship words, line breaks at a token's start,
# between tokens and at either end, capitals and one-case runs, text that is not Latin-1
_PIECES = st.sampled_from(
    [
        "Dr.", "Mr", "Ann", "Lee", "Smith", "saw", "the", "pt", "in", "Boston", "New", "York",
        "Mercy", "Hospital", "of", "wife", "son", "called", "3/14", "2021", "|", ":", ",",
        "MRN", "#", "48213", "\n", "\n\n", "x\n", "\nx", "ann", "LEE", "St", "Mary's", "-",
        "O'Neil", "De", "La", "San", "Francisco", "Los", "Angeles", "General", "Medical",
        "Center", "Núñez", "José", "日本", "—", "\u2028", "by", "with", "at",
    ]
)  # fmt: skip
_NOTES = st.lists(_PIECES, max_size=40).map(" ".join) | st.lists(_PIECES, max_size=4).map("".join)


@pytest.fixture(scope="module")
def shipped() -> Featurizer:
    return Tagger().featurizer


def _encoded(featurizer: Featurizer, text: str, enabled: bool) -> Encoded:
    starts, _, words = token_columns(text)
    with compiled.compiled(enabled):
        return featurizer.encode(text, starts, words, words_case_of(text))


@settings(max_examples=300, deadline=None)
@given(text=_NOTES)
def test_compiled_rows_equal_the_python_rows(shipped: Featurizer, text: str) -> None:
    fast, plain = _encoded(shipped, text, True), _encoded(shipped, text, False)
    assert fast.items == plain.items
    assert fast.lowers == plain.lowers
    assert fast.rows.counts == plain.rows.counts
    assert fast.rows.packed == plain.rows.packed


@settings(max_examples=100, deadline=None)
@given(text=_NOTES, data=st.data())
def test_compiled_rows_equal_the_python_rows_of_any_kept_set(
    shipped: Featurizer, text: str, data: st.DataObject
) -> None:
    """A model that keeps a few of the shipped model's attributes: some records, pairs,
    gazetteer parts and line starts missing."""
    kept = shipped.attributes.kept()
    keep = data.draw(st.sets(st.sampled_from(kept), max_size=400))
    keep |= data.draw(st.sets(st.sampled_from(["bol", "kin<", "0pad", "-1pad", "1pad"])))
    featurizer = Featurizer(keep={a: i for i, a in enumerate(sorted(keep))})
    assert _encoded(featurizer, text, True) == _encoded(featurizer, text, False)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("ab \n\r\té日\U0001f600"), max_size=40))
def test_compiled_line_starts_equal_the_bisection(text: str) -> None:
    starts, _, _ = token_columns(text)
    assert _BUILT is not None
    assert _BUILT.line_starts(text, starts) == extras._after_breaks(text, starts)


@pytest.mark.parametrize(
    "text",
    ["", "\n", "Ann", "\nAnn\n", "Ann Lee", "Dr. Ann Lee\n\nwife Mary\n", "Núñez\nLee"],
)
def test_compiled_rows_on_short_notes(shipped: Featurizer, text: str) -> None:
    assert _encoded(shipped, text, True) == _encoded(shipped, text, False)


def test_compiled_rows_refuse_what_is_not_an_entry(shipped: Featurizer) -> None:
    assert _BUILT is not None
    pad = shipped._pad
    with pytest.raises(TypeError):
        _BUILT.scan([("a", "b")])
    with pytest.raises(IndexError):
        _BUILT.rows([pad], [1], [""], pad, {}, {}, {}, shipped._template)


@settings(max_examples=200, deadline=None)
@given(text=_NOTES)
def test_compiled_marked_tokens_equal_the_python_scan(text: str) -> None:
    """Phrase starts (one word alone, or a first word the next goes on from) and kinship
    words, with the gazetteers' own first and second words in the notes drawn."""
    lowers = [w.lower() for w in token_columns(text)[2]]
    assert _BUILT is not None
    fast = _BUILT.marked(
        lowers, extras._marked_words(), extras._second_words(), extras._ALONE, extras._KIN
    )
    assert fast == extras._marked(lowers)
