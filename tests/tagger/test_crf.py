"""crfsuite through its C API (``pipelines.phi.tagger.crf``) gives what python-crfsuite's own
``Tagger`` gives for the same model and rows: the same attributes and labels, the same
Viterbi path, and the same marginals to the last bit."""

from __future__ import annotations

import threading
from pathlib import Path

import pycrfsuite
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pipelines.phi.tagger.crf import (
    ATTRIBUTE,
    CrfError,
    CrfModel,
    CrfTagger,
    ItemTagger,
    PublicTagger,
    c_api,
)
from pipelines.phi.tagger.features import Featurizer, tokenize
from pipelines.phi.tagger.model import Tagger

_WORDS = st.sampled_from(
    [
        "Dr.", "Ann", "Lee", "Smith", "saw", "the", "pt", "in", "Boston", "New", "York",
        "Mercy", "Hospital", "of", "wife", "called", "3/14", "2021", "MRN", "#", "48213",
        "\n", ",", "St", "Mary's", "O'Neil", "De", "La", "Plan", "Hosp", "zzqx", "Qwerty",
    ]
)  # fmt: skip
_TEXTS = st.lists(_WORDS, min_size=1, max_size=80).map(" ".join)


@pytest.fixture(scope="module")
def shipped() -> Tagger:
    return Tagger()


@pytest.fixture(scope="module")
def reference(shipped: Tagger) -> pycrfsuite.Tagger:
    tagger = pycrfsuite.Tagger()
    tagger.open(str(shipped.model_path))
    return tagger


def _set(crf: ItemTagger, rows: list[bytes]) -> None:
    crf.set(b"".join(rows), [len(row) // ATTRIBUTE.size for row in rows])


def _rows(tagger: Tagger, text: str) -> tuple[list[bytes], list[list[str]]]:
    """A note's rows, packed for the C API and as python-crfsuite's strings."""
    tokens = tokenize(text)
    featurizer = tagger.featurizer
    items = featurizer.items(text, tokens) or list(range(len(tokens)))
    strings = featurizer.features(text, tokens, items)
    return [featurizer.attributes.pack(row) for row in strings], strings


def test_the_model_s_attributes_and_labels_are_python_crfsuite_s(
    shipped: Tagger, reference: pycrfsuite.Tagger
) -> None:
    model = CrfModel(shipped.model_path)
    known = {attribute for attribute, _ in reference.info().state_features}
    assert set(model.attribute_ids) == known
    assert sorted(model.attribute_ids.values()) == list(range(len(known)))
    assert list(model.labels) == reference.labels()


@settings(max_examples=120, deadline=None)
@given(text=_TEXTS)
def test_path_and_marginals_equal_python_crfsuite_s(
    shipped: Tagger, reference: pycrfsuite.Tagger, text: str
) -> None:
    packed, strings = _rows(shipped, text)
    assume(strings)
    crf = shipped._open()
    _set(crf, packed)
    reference.set(strings)
    names = CrfModel(shipped.model_path).labels
    assert [names[label] for label in crf.viterbi()] == reference.tag()
    for label, name in enumerate(names):
        expected = [reference.marginal(name, t) for t in range(len(strings))]
        assert crf.marginals(label) == expected  # exactly: the same C code on the same scores
        assert [crf.marginal(label, t) for t in range(len(strings))] == expected


def test_an_unknown_attribute_is_dropped_as_python_crfsuite_drops_it(
    shipped: Tagger, reference: pycrfsuite.Tagger
) -> None:
    featurizer = shipped.featurizer
    known = sorted(CrfModel(shipped.model_path).attribute_ids)
    row = [known[0], "no-such-attribute", known[-1]]
    crf = shipped._open()
    _set(crf, [featurizer.attributes.pack(row)])
    reference.set([row])
    assert crf.marginals(0) == [reference.marginal("O", 0)]
    assert featurizer.attributes.names(featurizer.attributes.pack(row)) == [known[0], known[-1]]


def test_a_note_of_no_items_has_no_path(shipped: Tagger) -> None:
    crf = shipped._open()
    crf.set(b"", [])
    assert crf.viterbi() == []
    assert crf.marginals(0) == []


def test_a_file_that_is_no_model_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.crfsuite"
    bogus.write_bytes(b"not a crfsuite model at all" * 10)
    with pytest.raises(CrfError, match="not a crfsuite model"):
        CrfModel(bogus)
    bogus.write_bytes(b"lCRF" + b"\0" * 20)
    with pytest.raises(CrfError, match="header is incomplete"):
        CrfModel(bogus)


def test_threads_each_tag_with_their_own_tagger(shipped: Tagger) -> None:
    texts = [
        f"Dr. Ann Lee saw the pt in Boston {k} times, wife Mary Smith called." for k in range(8)
    ]
    alone = [shipped.tag(t * 30) for t in texts]
    found: dict[int, list[object]] = {}

    def run(k: int) -> None:
        found[k] = [shipped.tag(texts[k] * 30) for _ in range(5)]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(found[k] == [alone[k]] * 5 for k in range(len(texts)))


def test_a_featurizer_without_a_model_numbers_attributes_as_first_made() -> None:
    featurizer = Featurizer()
    rows = featurizer.features("Dr. Ann Lee", tokenize("Dr. Ann Lee"))
    again = featurizer.features("Dr. Ann Lee", tokenize("Dr. Ann Lee"))
    assert rows == again
    assert all(isinstance(a, str) for row in rows for a in row)
    assert "w=ann" in rows[2]  # Dr . Ann Lee


def test_counts_that_do_not_add_up_to_the_records_are_refused(shipped: Tagger) -> None:
    record = ATTRIBUTE.pack(0, 1.0)
    with pytest.raises(CrfError, match="do not add up"):
        shipped._open().set(record * 3, [1, 1])


@settings(max_examples=40, deadline=None)
@given(_TEXTS)
def test_the_public_api_fallback_gives_the_c_api_s_path_and_marginals(
    shipped: Tagger, text: str
) -> None:
    """python-crfsuite's public ``Tagger`` (the fallback when the C API is not usable)
    gives the same path and marginals for the same packed rows."""
    rows, _ = _rows(shipped, text)
    fast = CrfModel(shipped.model_path).tagger()
    with c_api(False):
        public = CrfModel(shipped.model_path).tagger()
    assert isinstance(public, PublicTagger) and isinstance(fast, CrfTagger)
    for tagger in (fast, public):
        _set(tagger, rows)
    assert fast.viterbi() == public.viterbi()
    for label in range(5):
        assert fast.marginals(label) == public.marginals(label)


def test_the_tagger_finds_the_same_spans_through_the_fallback(shipped: Tagger) -> None:
    notes = (
        "Seen by Dr. Ann Quellmark at Mercy Hospital in Boston; wife Tavilla called.",
        "PLAN: d/c to Oakdale Regional, f/u with Hanlon in 2 wks. Lives in New Bramford.",
    )
    with c_api(False):
        public = Tagger()
    assert not public._model.c_api and shipped._model.c_api
    for text in notes:
        assert public.tag(text) == shipped.tag(text)


def test_an_unchecked_python_crfsuite_release_turns_the_c_api_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from importlib import metadata

    from pipelines.phi.tagger import crf

    monkeypatch.setattr(metadata, "version", lambda name: "0.10.0")
    assert not crf._c_api_usable()
    monkeypatch.undo()
    assert crf._c_api_usable()


def test_the_built_cffi_module_equals_what_the_declarations_give() -> None:
    """Fails when ``crf_ffi.CDEF`` or cffi changed: run ``python -m pipelines.phi.tagger.crf_ffi``."""
    from pipelines.phi.tagger import crf_ffi

    assert crf_ffi.TARGET.read_text("utf-8") == crf_ffi.source()
