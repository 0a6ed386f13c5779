"""The items that may be PHI read off crfsuite's arrays in one C loop
(``_rows_c.candidates``, through ``crf.CrfTagger.candidates``) and in Python from the path and
the marginals (``crf.likely_phi`` under ``compiled(False)``, the reference): the same items,
path labels and probabilities to the last bit, and python-crfsuite's own answers too (session
22)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.phi.tagger.crf import ATTRIBUTE, CrfModel, CrfTagger, PublicTagger, c_api
from pipelines.phi.tagger.features import tokenize
from pipelines.phi.tagger.model import OUTSIDE, Tagger

_WORDS = st.sampled_from(
    [
        "Dr.", "Ann", "Lee", "Smith", "saw", "the", "pt", "in", "Boston", "New", "York",
        "Mercy", "Hospital", "of", "wife", "called", "3/14", "2021", "MRN", "#", "48213",
        "\n", ",", "St", "Mary's", "O'Neil", "De", "La", "Plan", "Hosp", "zzqx", "Qwerty",
        "HALL", "GREEN", "Rd", "Ave", "son", "Kim", "visited", "from",
    ]
)  # fmt: skip
_TEXTS = st.lists(_WORDS, min_size=1, max_size=80).map(" ".join)
_LEAST = st.sampled_from([0.5, 0.3, 0.05, 1e-6, 1.0])


@pytest.fixture(scope="module")
def shipped() -> Tagger:
    return Tagger()


def _scored(tagger: Tagger, crf: CrfTagger | PublicTagger, text: str) -> bool:
    """``crf`` set with ``text``'s rows; False when the note has no item."""
    tokens = tokenize(text)
    featurizer = tagger.featurizer
    items = featurizer.items(text, tokens)
    if not items:
        return False
    rows = [featurizer.attributes.pack(row) for row in featurizer.features(text, tokens, items)]
    crf.set(b"".join(rows), [len(row) // ATTRIBUTE.size for row in rows])
    return True


@settings(max_examples=150, deadline=None)
@given(text=_TEXTS, least=_LEAST)
def test_the_candidates_read_in_c_are_the_reference_s(
    shipped: Tagger, text: str, least: float
) -> None:
    crf = shipped._open()
    assert isinstance(crf, CrfTagger)
    assume(_scored(shipped, crf, text))
    outside = shipped._outside
    found = crf.candidates(outside, least)
    # once per note: crfsuite's Viterbi pass writes over the forward scores, so each
    # reading below starts from the note set again, as ``Tagger.tag`` does
    with compiled.compiled(False):
        _scored(shipped, crf, text)
        assert crf.candidates(outside, least) == found
    _scored(shipped, crf, text)
    path, p_out = crf.viterbi(), crf.marginals(outside)
    items, labels, probabilities = found
    assert labels == [path[i] for i in items]
    assert probabilities == [p_out[i] for i in items]
    assert [i for i in range(crf.length) if path[i] != outside or 1.0 - p_out[i] >= least] == items


@settings(max_examples=40, deadline=None)
@given(text=_TEXTS, least=_LEAST)
def test_python_crfsuite_s_tagger_gives_the_same_candidates(
    shipped: Tagger, text: str, least: float
) -> None:
    with c_api(False):
        public = CrfModel(shipped.model_path).tagger()
    assert isinstance(public, PublicTagger)
    fast = shipped._open()
    assume(_scored(shipped, public, text))
    expected = public.candidates(shipped._outside, least)
    assert _scored(shipped, fast, text)  # type: ignore[arg-type]
    assert fast.candidates(shipped._outside, least) == expected
    with compiled.compiled(False):
        assert _scored(shipped, fast, text)  # type: ignore[arg-type]
        assert fast.candidates(shipped._outside, least) == expected


def test_the_tagger_s_spans_are_the_same_either_way(shipped: Tagger) -> None:
    texts = [
        "Dr. Ann Lee saw the pt at Mercy Hospital in Boston.\nWife called, MRN # 48213.",
        "SON KIM VISITED FROM NEW YORK. DR HALL AND DR GREEN IN TO SEE PT",
        "pt seen by dr smith at st mary's, lives on plan ave with wife",
    ]
    for text in texts:
        found = shipped.tag(text)
        with compiled.compiled(False):
            assert shipped.tag(text) == found
        assert found
    assert shipped._model.labels[shipped._outside] == OUTSIDE


def test_no_item_no_candidate(shipped: Tagger) -> None:
    crf = shipped._open()
    crf.set(b"", [])
    assert crf.candidates(shipped._outside, 0.5) == ([], [], [])


@pytest.mark.skipif(compiled.BUILT["rows"] is None, reason="the rows helper is not built")
def test_the_compiled_candidates_refuse_a_label_outside_the_model() -> None:
    fast = compiled.BUILT["rows"]
    assert fast is not None
    with pytest.raises(ValueError):
        fast.candidates(0, 0, 0, 0, 1, 15, 15, 0.5)
    with pytest.raises(ValueError):
        fast.candidates(0, 0, 0, 0, -1, 15, 0, 0.5)
