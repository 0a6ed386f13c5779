"""crfsuite's ``set`` and its Viterbi and forward-backward passes called from the rows helper
in one C call each (``_rows_c.set_items``, ``_rows_c.tagged``, session 23) and through cffi
(the reference: ``compiled(False)`` for ``set``, ``CrfTagger._candidates`` for the
candidates): the same items scored, the same candidates to the last bit."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.phi.tagger import crf
from pipelines.phi.tagger.crf import ATTRIBUTE, CrfTagger
from pipelines.phi.tagger.features import tokenize
from pipelines.phi.tagger.model import Tagger

_BUILT = compiled.BUILT["rows"]
pytestmark = pytest.mark.skipif(
    _BUILT is None or not crf.C_API, reason="the rows helper or crfsuite's C API is missing"
)

_WORDS = st.sampled_from(
    [
        "Dr.", "Bea", "Quill", "Tarrow", "met", "the", "pt", "at", "Elmsbury", "North",
        "Vale", "Larkspur", "Clinic", "of", "husband", "phoned", "7/19", "2033", "MRN", "#",
        "90417", "\n", ",", "Rd", "Ave", "niece", "Oyelaran", "zzqx", "from", "St",
    ]
)  # fmt: skip
_TEXTS = st.lists(_WORDS, min_size=1, max_size=90).map(" ".join)
_LEAST = st.sampled_from([0.5, 0.3, 0.05, 1e-6, 1.0])


@pytest.fixture(scope="module")
def shipped() -> Tagger:
    return Tagger()


def _rows(tagger: Tagger, text: str) -> tuple[bytes, list[int]]:
    tokens = tokenize(text)
    featurizer = tagger.featurizer
    items = featurizer.items(text, tokens)
    rows = [featurizer.attributes.pack(row) for row in featurizer.features(text, tokens, items)]
    return b"".join(rows), [len(row) // ATTRIBUTE.size for row in rows]


def test_the_helper_reads_crfsuite_s_structs_as_cffi_declares_them() -> None:
    assert crf._LAID_OUT


@settings(max_examples=120, deadline=None)
@given(text=_TEXTS, least=_LEAST)
def test_a_note_set_and_read_in_one_call_each_is_the_cffi_s(
    shipped: Tagger, text: str, least: float
) -> None:
    tagger = shipped._open()
    assert isinstance(tagger, CrfTagger) and _BUILT is not None
    packed, counts = _rows(shipped, text)
    assume(counts)
    outside = shipped._outside
    tagger.set(packed, counts)  # set_items
    found = tagger.candidates(outside, least)  # tagged
    tagger.set(packed, counts)
    assert tagger._candidates(_BUILT, outside, least) == found  # cffi passes, C loop
    with compiled.compiled(False):
        tagger.set(packed, counts)  # cffi, items packed by struct
        path, p_out = tagger.viterbi(), tagger.marginals(outside)
    assert crf.likely_phi(path, p_out, outside, least) == found


def test_set_refuses_counts_that_do_not_add_up(shipped: Tagger) -> None:
    tagger = shipped._open()
    packed, counts = _rows(shipped, "Dr. Bea Quill met the pt at Larkspur Clinic.")
    with pytest.raises(crf.CrfError):
        tagger.set(packed, [*counts[:-1], counts[-1] + 1])
    with pytest.raises(crf.CrfError):
        tagger.set(packed + ATTRIBUTE.pack(0, 1.0), counts)
    with pytest.raises(crf.CrfError), compiled.compiled(False):
        tagger.set(packed, [*counts[:-1], counts[-1] + 1])


def test_the_helper_refuses_a_count_outside_an_int(shipped: Tagger) -> None:
    assert _BUILT is not None
    calls = shipped._open()._calls  # type: ignore[attr-defined]
    for bad in ([-1], [2**31]):
        with pytest.raises(OverflowError):
            _BUILT.set_items(calls[0], calls[1], b"", bad, ATTRIBUTE.size)


def test_the_helper_refuses_no_items_or_no_such_label(shipped: Tagger) -> None:
    assert _BUILT is not None
    tagger, _, viterbi, marginal = shipped._open()._calls  # type: ignore[attr-defined]
    for n, outside in ((0, 0), (3, -1)):
        with pytest.raises(ValueError):
            _BUILT.tagged(tagger, viterbi, marginal, n, outside, 0.5)


def test_a_bytearray_goes_the_cffi_way_with_the_same_answer(shipped: Tagger) -> None:
    tagger = shipped._open()
    packed, counts = _rows(shipped, "Husband phoned from Elmsbury, niece Bea Oyelaran at 7/19.")
    outside = shipped._outside
    tagger.set(packed, counts)
    found = tagger.candidates(outside, 0.05)
    tagger.set(bytearray(packed), counts)
    assert tagger.candidates(outside, 0.05) == found
