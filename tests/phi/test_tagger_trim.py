"""A tagger name loses the grammar words it starts with (recognizers/tagger.py, _trimmed)."""

from __future__ import annotations

import pytest

from pipelines.phi import lexicons
from pipelines.phi.recognizers.tagger import _trimmed
from pipelines.phi.tagger.model import Label, TaggedSpan
from pipelines.phi.wordlists import word_set


def _span(text: str, phrase: str, label: Label = Label.NAME) -> TaggedSpan:
    start = text.index(phrase)
    return TaggedSpan(start, start + len(phrase), label, 0.9)


def test_no_never_word_is_a_census_name() -> None:
    """None has a census share above zero (the lists round to 3 decimals; some grammar words,
    "then", "later", are listed as surnames at 0.000)."""
    never = word_set("name_never_words")
    assert len(never) > 40
    first, last = lexicons.first_names(), lexicons.last_names()
    held = sorted(w for w in never if first.get(w, 0.0) > 0.0 or last.get(w, 0.0) > 0.0)
    assert held == [], "a word census lists hold as a name may start one"


@pytest.mark.parametrize(
    ("text", "tagged", "left"),
    [
        ("Later Orla Quillfeather visited.", "Later Orla Quillfeather", "Orla Quillfeather"),
        ("And then Orla called.", "And then Orla", "Orla"),
        ("Then  Orla called.", "Then  Orla", "Orla"),
        ("Thebes Orla called.", "Thebes Orla", "Thebes Orla"),  # letters run on: no grammar word
        ("Orla Then called.", "Orla Then", "Orla Then"),  # only the start is trimmed
        ("ROLAND IN TO SEE PT.", "ROLAND IN TO", "ROLAND"),  # and the end of prepositions
    ],
)
def test_leading_grammar_words_leave_a_name(text: str, tagged: str, left: str) -> None:
    out = _trimmed(text, _span(text, tagged))
    assert out is not None
    assert text[out.start : out.end] == left


def test_a_name_of_grammar_words_only_is_dropped() -> None:
    text = "Later, the nurse called."
    assert _trimmed(text, _span(text, "Later")) is None


def test_places_are_left_alone() -> None:
    text = "The Hague clinic"
    tagged = _span(text, "The Hague", Label.LOCATION)
    assert _trimmed(text, tagged) == tagged
