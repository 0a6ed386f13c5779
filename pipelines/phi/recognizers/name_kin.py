"""Shapes of the name after a role word: an initial then a surname ("per d ross", "wife E.
Welsh"); first names newer than the census after a kin word ("her son Liam visited"), and
the shapes that are no name there ("son Tylenol'd him", "Son Notified"): issue 26."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.phi import lexicons as lx
from pipelines.phi.recognizers.name_cues import R
from pipelines.phi.recognizers.name_words import _is_initial, _tight
from pipelines.phi.wordlists import word_list
from pipelines.spans import Category

if TYPE_CHECKING:
    from pipelines.phi.recognizers.names import _Note


def clinical_stem(low: str) -> bool:
    """ "tylenol'd", "lasix'ed": a clinical word with a verb ending after an apostrophe."""
    stem, mark, _ = low.replace("’", "'").partition("'")
    return bool(mark) and lx.clinical_word(stem)


def _word_ending(low: str) -> bool:
    """A word with a verb, adjective or abstract-noun ending that no census name has."""
    # name_word_endings: verb, adjective and abstract-noun endings ("Son Notified");
    # word_list caches the tuple str.endswith takes
    return low.endswith(word_list("name_word_endings")) and not lx.is_name(low)


def newer_first_name(note: _Note, i: int, j: int, role: Category) -> bool:
    """ "her son Liam visited": right after a kin word, a Title-case word in a mixed-case note
    that English uses little (Zipf under 4.2), with no verb or adjective ending, no clinical,
    cue or eponym word, nor one this note writes in lower case: a first name newer than the
    1990 census the name lists come from (Liam, Aria, Jaxon)."""
    word = note.words[j]
    if role is not R or not (note.mixed and j == i + 1 and note.gap(i, j) == " "):
        return False
    if not word.is_title:
        return False
    low = word.lower
    return _little_used(low) and not (
        low in note.cues.cue_words or low in note.lowered or low in note.eponyms
    )


def _little_used(low: str) -> bool:
    """A word of three letters or more that English uses little, with no word ending, no
    clinical word."""
    return (
        low.isalpha()
        and len(low) >= 3
        and lx.zipf(low) < 4.2
        and not _word_ending(low)
        and not lx.clinical_word(low)
    )


def initial_forms(note: _Note, j: int, role: Category) -> int | None:
    """The name from word ``j`` when it opens with an initial (lower-case, or dotted)."""
    if _lower_initial_surname(note, j):
        note.take(j, role, 0.7)
        return note.run_right(j + 1, role, 0.7, 3)
    if _dotted_initial_name(note, j):
        note.take(j, role, 0.8)
        return note.run_right(j + 1, role, 0.8, 3)
    return None


def _lower_initial_surname(note: _Note, j: int) -> bool:
    """ "per d ross": a bare lower-case initial and a census surname."""
    words = note.words
    return (
        len(words[j].text) == 1
        and j + 1 < note.n
        and words[j].lower not in note.cues.clinical_letters - {"d", "s", "e", "p", "c"}
        and note.gap(j, j + 1) == " "
        and lx.name_score(words[j + 1].lower) >= 1.5
        and note.ok(j + 1, 3)
    )


def _dotted_initial_name(note: _Note, j: int) -> bool:
    """ "per E. Welsh": an initial, then a name."""
    return (
        _is_initial(note.words[j], note.text)
        and j + 1 < note.n
        and _tight(note.gap(j, j + 1))
        and note.ok(j + 1, 3)
    )
