"""The cue pass's shortcuts of session 23 give the answers of the tests they stand for: the
common-word test as one small set (``location_cues._common_words``), the city look-up asked
only after a city's first word (``city_at`` and ``towns.prefixed_town`` want one), the saint
rule asked only where its first test can hold (``SAINTS``), a town abbreviation only after
"in", "near" or "from" (``_resident_cue``), and the word after the cue picked once by
``after_cue`` for ``cue_context`` (an article ending the note included). Checked on every common word, on
drawn words and on invented notes and places."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc
from pipelines.phi.passes import Case
from pipelines.phi.recognizers import location_cues as lc
from pipelines.phi.recognizers import location_shapes as shape
from pipelines.phi.recognizers import location_towns as towns
from pipelines.phi.recognizers.location_words import CUES, SAINTS, Note
from pipelines.phi.recognizers.locations import LocationRecognizer
from pipelines.phi.synthetic import generate
from pipelines.spans import Category
from tests.phi.test_location_shortcuts import _plain_common_word


def test_the_common_words_set_answers_as_the_plain_test_on_every_common_word() -> None:
    common = lx.common_words(3.3)
    assert len(common) > 10_000
    for low in common:
        assert (low in lc._common_words()) == _plain_common_word(low), low


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcdeilnorstuyz'", max_size=8))
def test_the_common_words_set_answers_as_the_plain_test_on_drawn_words(low: str) -> None:
    assert (low in lc._common_words()) == _plain_common_word(low)


def test_common_words_holds_the_words_of_that_zipf_or_more() -> None:
    five = lx.common_words(5.0)
    assert "the" in five and "with" in five and "quillbrook" not in five
    assert all(lx.zipf(w) >= 5.0 for w in five)
    assert five < lx.common_words(4.0)


def test_a_town_opener_is_a_city_first_word() -> None:
    # the premise of asking ``_city_after_cue`` only after a city's first word
    assert towns.town_openers() <= lx.city_first_words()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["St", "st", "Mt", "Saint", "Sam", "Mary's", ".", "to", "x"])))
def test_a_saint_starts_with_a_saint_word(parts: list[str]) -> None:
    text = " ".join(["to", *parts, "Hildegard"])
    words = lx.tokens(Doc(text)).words
    for j in range(len(words)):
        found = shape.saint(words, j, text, True)
        assert found is None or words[j].lower in SAINTS


def test_only_the_resident_cues_take_a_town_abbreviation() -> None:
    text = "son lives near WB"
    words = lx.tokens(Doc(text)).words
    for cue in CUES - {"in", "near", "from"}:
        ctx = lc._Cue(words, text, True, 2, 3, "wb", cue, "lives", ("son", "lives"), True, True)
        assert not lc._resident_cue(ctx)


def _after_cue_plain_word(note: Note, c: int) -> int | None:
    """The word the cue rules read after the cue at ``c`` (before session 23: a ``nxt`` in
    ``after_cue`` and a ``j`` in ``cue_context``, each worked out)."""
    words = note.words
    if c + 1 >= len(words):
        return None
    return c + 2 if words[c + 1].lower == "the" and c + 2 < len(words) else c + 1


@pytest.mark.parametrize("text", ["He was sent to the", "sent to the.", "TO THE", "to"])
def test_an_article_ending_the_note_finds_nothing(text: str) -> None:
    toks = lx.tokens(Doc(text))
    note = Note(toks.words, text, Case.of(toks), toks.mixed_case, toks.lowers)
    for c, low in enumerate(toks.lowers):
        if low in CUES:
            assert lc.after_cue(note, c) is None
            assert _after_cue_plain_word(note, c) in (None, c + 1)


def test_after_cue_on_invented_notes_finds_what_the_recognizer_finds() -> None:
    texts = [n.text for n in generate(120, 23, "dev")]
    for text in texts + [t.upper() for t in texts[:40]] + [t.lower() for t in texts[40:80]]:
        toks = lx.tokens(Doc(text))
        note = Note(toks.words, text, Case.of(toks), toks.mixed_case, toks.lowers)
        for c, low in enumerate(toks.lowers):
            if low in CUES:
                found = lc.after_cue(note, c)
                j = _after_cue_plain_word(note, c)
                assert found is None or (j is not None and found.start >= toks.words[j].start)


@pytest.mark.parametrize(
    ("text", "found", "category"),
    [
        # a town opened by a word many towns open with: the city look-up is still asked
        ("She lives in New Quellbrook with her son.", "New Quellbrook", Category.LOCATION_CITY),
        ("SHE LIVES IN NEW QUELLBROOK WITH HER SON.", "NEW QUELLBROOK", Category.LOCATION_CITY),
        # a saint's name after a cue
        ("Pt was transferred to St. Hildegard for rehab.", "St. Hildegard", None),
        # a town written short after a residence cue
        ("Her son lives in QX and visits.", "QX", Category.LOCATION_CITY),
        # a lower-case city of a mixed-case note: a common word is no city
        ("Pt returned to the floor and then to bed.", None, None),
    ],
)
def test_invented_places_after_a_cue(text: str, found: str | None, category: Category) -> None:
    spans = LocationRecognizer({}).detect(Doc(text))
    got = [(text[s.start : s.end], s.category) for s in spans]
    if found is None:
        assert got == []
        return
    assert found in [g for g, _ in got]
    if category is not None:
        assert (found, category) in got
