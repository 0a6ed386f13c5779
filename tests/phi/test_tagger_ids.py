"""The tagger's identifiers (recognizers/tagger.py): the model labels a code's letters, the
recognizer reports the whole code, and drops what reads as a clinical number. Invented text."""

from __future__ import annotations

import pytest

from pipelines.phi.recognizers.tagger import _not_phi, _trimmed
from pipelines.phi.tagger.model import Label, TaggedSpan


def _id(text: str, letters: str) -> TaggedSpan:
    start = text.index(letters)
    return TaggedSpan(start, start + len(letters), Label.ID, 0.9)


@pytest.mark.parametrize(
    ("text", "letters", "code"),
    [
        ("Paperwork lists 7741-QM-08 for him.", "QM", "7741-QM-08"),
        ("Band reads 5520931-T, matched.", "T", "5520931-T"),
        ("Card: WX81220394 verified.", "WX81220394", "WX81220394"),
        ("Old chart (PR-44120) found.", "PR", "PR-44120"),
    ],
)
def test_an_id_span_becomes_the_whole_code(text: str, letters: str, code: str) -> None:
    widened = _trimmed(text, _id(text, letters))
    assert widened is not None
    assert text[widened.start : widened.end] == code
    assert not _not_phi(text, widened)


@pytest.mark.parametrize(
    ("text", "letters"),
    [
        ("MRI C5-C6 stenosis.", "C"),  # a spine level: two digits
        ("HLA-B27 positive.", "HLA"),
        ("COVID-19 PCR negative.", "COVID"),
        ("ICD-10 code pending.", "ICD"),
        ("Encounter #: 7741-QM-08", "Encounter"),  # a cue word, no digit in it
        ("Gave 1200 U heparin.", "U"),  # a unit after the number
    ],
)
def test_clinical_numbers_and_words_are_no_identifiers(text: str, letters: str) -> None:
    widened = _trimmed(text, _id(text, letters))
    assert widened is None or _not_phi(text, widened)


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("Gtt at 1400-1800 U/hr.", "1400-1800"),
        ("Shift 1900-0700 quiet.", "1900-0700"),
        ("K 3.4-4.1 today.", "3.4-4.1"),
        ("BP 120/80-140/90 overnight.", "120/80-140/90"),
        ("Seen at 1430 by team.", "1430"),
    ],
)
def test_values_ranges_and_times_are_no_identifiers(text: str, number: str) -> None:
    # as if the model had labelled the whole number (it reads no digits, but a retrained or
    # another model may)
    start = text.index(number)
    assert _not_phi(text, TaggedSpan(start, start + len(number), Label.ID, 0.9))


def test_the_policy_chooses_the_labels_reported() -> None:
    from pipelines.phi.base import Doc
    from pipelines.phi.recognizers.tagger import TaggerRecognizer

    text = "Paperwork lists 7741-QM-08 for him; copy in chart."
    found = TaggerRecognizer({"threshold": 0.2}).detect(Doc(text))
    assert [(text[s.start : s.end], s.category.value) for s in found] == [("7741-QM-08", "ID")]
    names_places = TaggerRecognizer({"threshold": 0.2, "labels": ["NAME", "LOCATION"]})
    assert names_places.detect(Doc(text)) == []
