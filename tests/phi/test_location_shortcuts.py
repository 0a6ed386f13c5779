"""The location recognizer's shortcuts give the answers of the plain tests they replace
(session 22): the hospital-acronym shapes read backwards (``facility_acronyms._shaped``), the
one-case note's common-word test on the common list only (``location_cues._common_words``),
the two-word state test asked only after a state's first word (``_two_word_state``), and the
movement verbs looked for only once the gap after the cue allows a place (``cue_context``;
the room-number case below still asks them), the words before a cue read from the note's
lower-case column (``Note.lowers``) and a building's floor asked after the word's length.
Each is checked against the plain version on invented words and notes, and
on invented places that a shortcut skipping too much would miss."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc
from pipelines.phi.passes import Case
from pipelines.phi.recognizers import facility_acronyms as fa
from pipelines.phi.recognizers import location_cues as lc
from pipelines.phi.recognizers import location_towns as towns
from pipelines.phi.recognizers.location_words import Note
from pipelines.phi.recognizers.locations import LocationRecognizer
from pipelines.phi.synthetic import generate
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category

_ENDINGS = sorted(word_set("hospital_acronyms"))
# letters and pieces an acronym is made of, so drawn words often have (or nearly have) its shape
_PIECES = st.sampled_from(
    [
        *_ENDINGS,
        *(e.upper() for e in _ENDINGS),
        "H",
        "h",
        "C",
        "c",
        "X",
        "q",
        "Z",
        "e",
        "é",
        "\u00c9",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.frozensets(st.lists(_PIECES, min_size=1, max_size=5).map("".join), max_size=12))
def test_the_backwards_scan_picks_the_words_the_plain_tests_pick(written: frozenset[str]) -> None:
    assert fa._shaped(written) == (fa._upper_shaped(written), fa._lower_shaped(written))


def test_the_backwards_scan_on_invented_acronyms() -> None:
    written = frozenset(
        {"XYZMC", "QRMC", "XH", "ZZZZGH", "xmh", "qvrmc", "ZZZZZMC", "MC", "HH", "Quillmc", "tach"}
    )
    upper, lower = fa._shaped(written)
    assert upper == {"XYZMC", "QRMC", "XH", "ZZZZGH", "HH"}
    assert lower == {"xmh", "qvrmc", "tach"}  # the shape only: "tach" is ruled out later
    assert (upper, lower) == (fa._upper_shaped(written), fa._lower_shaped(written))


def test_an_invented_acronym_read_backwards_is_found() -> None:
    text = "Labs were sent from XQRMC ER today."
    spans = LocationRecognizer({}).detect(Doc(text))
    assert {(s.category, text[s.start : s.end]) for s in spans} == {
        (Category.LOCATION_HOSPITAL, "XQRMC")
    }


def _plain_common_word(low: str) -> bool:
    if lx.zipf(low) < 5.0:
        return False
    return not (low in lx.city_first_words() or low in lx.countries() or low in towns.nicknames())


@pytest.mark.parametrize(
    "low", ["the", "with", "home", "quillbrook", "zzyzx", "italy", "la", "new", "pain", "of", ""]
)
def test_the_common_word_test_needs_no_rare_tail(low: str) -> None:
    assert (low in lc._common_words()) == _plain_common_word(low)


def _plain_two_word_state(words: tuple[lx.Token, ...], j: int) -> bool:
    return j + 1 < len(words) and f"{words[j].lower} {words[j + 1].lower}" in lx.us_states()


def _notes() -> list[str]:
    texts = [n.text for n in generate(200, 11, "dev")]
    return texts + [t.upper() for t in texts[:60]] + [t.lower() for t in texts[60:120]]


def test_the_shortcuts_answer_as_the_plain_tests_on_invented_notes() -> None:
    for text in _notes():
        toks = lx.tokens(Doc(text))
        words = toks.words
        for j in range(len(words)):
            assert lc._two_word_state(words, j) == _plain_two_word_state(words, j)
        for low in toks.lower_set:
            assert (low in lc._common_words()) == _plain_common_word(low)
    texts = [n.text for n in generate(50, 13, "dev")]
    for text in texts:
        written = lx.tokens(Doc(text)).written
        assert fa._shaped(written) == (fa._upper_shaped(written), fa._lower_shaped(written))


def test_every_state_of_two_words_stays_a_state_after_a_cue() -> None:
    two_words = sorted(name for name in lx.us_states() if name.count(" ") == 1)
    assert two_words  # "north carolina", "new mexico", …
    for name in two_words:
        words = lx.tokens(Doc(f"from {name.title()} today")).words
        assert lc._two_word_state(words, 1), name


@pytest.mark.parametrize(
    ("text", "found", "category"),
    [
        ("PT TRANSFERRED FROM XQZ ER FOR CATH.", "XQZ", Category.LOCATION_HOSPITAL),
        # one-case notes: a rare invented word after a cue passes the common-word test
        ("PT TRANSFERRED TO QUELLWARDINE 2 TODAY.", "QUELLWARDINE", Category.LOCATION_HOSPITAL),
        ("PT IS IN XQZ AND WILL RETURN", "XQZ", Category.LOCATION_HOSPITAL),
        ("pt was transferred to quellwardine 2 today.", "quellwardine", Category.LOCATION_HOSPITAL),
        # the room number before the ward: the movement verb is still asked
        ("Pt was transferred to 209 Quellwardine.", "Quellwardine", Category.LOCATION_HOSPITAL),
        ("Pt was seen at 209 Quellwardine.", None, None),
        # a movement verb and an acronym after the cue
        ("Pt was transferred from XQZ ER for cath.", "XQZ", Category.LOCATION_HOSPITAL),
        # a state of two words after a cue is kept; a town before it is not
        ("She moved to North Carolina last year.", None, None),
    ],
)
def test_invented_places_after_a_cue(text: str, found: str | None, category: Category) -> None:
    spans = LocationRecognizer({}).detect(Doc(text))
    got = [text[s.start : s.end] for s in spans]
    if found is None:
        assert got == []
        return
    assert (found, category) in [(text[s.start : s.end], s.category) for s in spans]


def test_a_note_reads_its_lower_case_forms_from_its_words_when_not_given() -> None:
    toks = lx.tokens(Doc("Moved from Quellbridge Heights to NEW HAVEN."))
    given_none = Note(toks.words, "", Case.MIXED, True)
    assert given_none.lowers == toks.lowers == tuple(w.lower for w in toks.words)
    assert Note(toks.words, "", Case.MIXED, True, toks.lowers[:2]).lowers == toks.lowers


def test_the_cue_rules_read_the_words_before_the_cue_from_the_lower_case_column() -> None:
    """A residence word and a movement verb before the cue, read from ``Note.lowers``: an
    invented town after "lives in", an acronym after "transferred from"."""
    text = "He lives in Quellbridge Heights. Transferred from XQZ ER. Blood sent from XQZ lab."
    spans = LocationRecognizer({}).detect(Doc(text))
    assert {text[s.start : s.end] for s in spans} >= {"Quellbridge Heights", "XQZ"}
    toks = lx.tokens(Doc(text))
    note = Note(toks.words, text, Case.of(toks), toks.mixed_case)
    sent = toks.lowers.index("sent")
    assert lc.after_cue(note, sent + 1) is None  # "sent from": a sample, not a patient, moves
