"""``Doc.artifacts``: the recognizers' shared work on a text is computed on first use, once
per document, and a ``Doc`` cannot be changed under it (frozen)."""

from __future__ import annotations

import dataclasses

import pytest

from pipelines.document import Identifiers, PersonName
from pipelines.phi import lexicons as lx
from pipelines.phi import scan
from pipelines.phi.base import Doc
from pipelines.phi.recognizers import dates
from pipelines.phi.recognizers.known import known_name_forms
from pipelines.spans import Category


def test_artifacts_are_computed_on_first_use_and_kept() -> None:
    ids = Identifiers(patient_names=(PersonName(family="Quellmark", given=("Odalys",)),))
    doc = Doc("Seen on 3/4/2021 by Odalys QUELLMARK.", ids)
    arts = doc.artifacts
    assert (arts.tokens, arts.lower, arts.present, arts.known_names) == (None,) * 4
    toks = lx.tokens(doc)
    assert arts.tokens is toks and lx.tokens(doc) is toks
    assert scan.lower(doc) == doc.text.lower() and arts.lower is scan.lower(doc)
    assert scan.may_match(doc, dates._NUMERIC_SHAPE) and arts.present is not None
    forms = known_name_forms(doc)
    assert forms["quellmark"] is Category.NAME_PATIENT and arts.known_names is forms
    assert arts.known_nicknames is not None


def test_each_doc_has_its_own_artifacts_and_cannot_change() -> None:
    a, b = Doc("alpha beta"), Doc("alpha beta")
    assert a == b and a.artifacts is not b.artifacts
    lx.tokens(a)
    assert b.artifacts.tokens is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.text = "gamma"  # type: ignore[misc]


# Notes where a count of capital letters and a count of words disagree: a lower-case note
# whose sentences start with capitals (more than 2 % capital letters, 85 % lower-case words),
# and one in capitals with a few lower-case words.
_CASE_NOTES = (
    "Pt resting. vitals stable overnight, tolerating diet well. Family in to visit, "
    "plan to continue current regimen and reassess in am. Denies pain at this time.",
    "PT RESTING COMFORTABLY. VS STABLE, TOLERATING PO. FAMILY IN TO VISIT pm. PLAN: "
    "CONTINUE REGIMEN, REASSESS IN AM. NO COMPLAINTS OF PAIN AT THIS TIME.",
    "Seen by Dr. Odalys Quellmark in clinic today; doing well, plan follow-up in Oakdale.",
    "pt seen today, doing well. wife at bedside. plan to d/c home tomorrow if stable.",
)


@pytest.mark.parametrize("text", _CASE_NOTES)
def test_the_tagger_reads_the_analysed_documents_case_model(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One case model per note (issue 25): the case the tagger featurizes a note in is
    ``Case.of_words`` of its analysed document's tokens (the rules' ``Case``, a lower-case
    note with common capitals read as mixed), whether the caller hands it over (the
    detector) or the tagger works it out (training, tests), never a second count."""
    from pipelines.phi.tagger.model import Tagger

    doc = Doc(text)
    case = lx.Case.of_words(lx.tokens(doc))
    tagger = Tagger()
    seen: list[lx.Case] = []
    encode = tagger.featurizer.encode

    def spy(text: str, starts: list[int], words: list[str], case: lx.Case) -> object:
        seen.append(case)
        return encode(text, starts, words, case)

    monkeypatch.setattr(tagger.featurizer, "encode", spy)
    tagger.tag(text, lx.tokens(doc).columns, case)
    tagger.tag(text)
    assert lx.words_case_of(text) is case and seen == [case, case]


def test_a_lower_case_note_with_common_capitals_reads_as_mixed_to_the_tagger() -> None:
    """The rules' case and the tagger's come from the same tokens: a lower-case note whose
    sentences start with capitals (2 % of its letters or more) is LOWER to the rules and
    mixed to the tagger; one with hardly a capital, or in capitals, is one case to both."""
    sentences, upper, mixed, bare = (lx.tokens(Doc(t)) for t in _CASE_NOTES)
    assert lx.Case.of(sentences) is lx.Case.LOWER and sentences.capitals_common
    assert lx.Case.of_words(sentences) is lx.Case.MIXED
    assert lx.Case.of(upper) is lx.Case.UPPER is lx.Case.of_words(upper)
    assert lx.Case.of(mixed) is lx.Case.MIXED is lx.Case.of_words(mixed)
    assert lx.Case.of(bare) is lx.Case.LOWER is lx.Case.of_words(bare)
    assert not bare.capitals_common
