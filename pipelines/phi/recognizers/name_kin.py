"""Shapes of the name after a role word: an initial then a surname ("per d ross", "wife E.
Welsh"); first names newer than the census after a kin word ("her son Liam visited"), and
the shapes that are no name there ("son Tylenol'd him", "Son Notified"): issue 26."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Final

from pipelines.phi import lexicons as lx
from pipelines.phi.recognizers.name_cues import OTHER, R
from pipelines.phi.recognizers.name_words import (
    _initial_word_after,
    _is_initial,
    _tight,
    surname_letter,
)
from pipelines.phi.wordlists import word_list, word_set
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
    1990 census the name lists come from (Liam, Aria, Jaxon). In a note in one case
    (``_one_case_newer``) the kin word must follow a possessive ("HER SON LIAM CALLED")."""
    word = note.words[j]
    if role is not R or not (j == i + 1 and note.gap(i, j) == " "):
        return False
    if not note.mixed:
        return _one_case_newer(note, i, j)
    if not word.is_title:
        return False
    low = word.lower
    return _little_used(low) and not (
        low in note.cues.cue_words or low in note.lowered or low in note.eponyms
    )


_POSSESSIVES: Final = frozenset({"her", "his", "their", "pt's", "pts", "patient's", "pt’s"})


def _one_case_newer(note: _Note, i: int, j: int) -> bool:
    """ "HER SON LIAM CALLED", "his wife zara at bedside": in a note in one case, where no
    capital tells a name, a word of four letters or more after a possessive and a kin word,
    that English uses little and is no clinical abbreviation or care unit, no plural or verb in "-s", no
    typing slip of a common word, nor a word of mood or an irregular past form
    (``name_kin_not_names``: "HER SON RANG", "HIS WIFE IRATE")."""
    if i == 0 or note.words[i - 1].lower not in _POSSESSIVES or note.gap(i - 1, i) != " ":
        return False
    low = note.words[j].lower
    return (
        len(low) >= 4
        and not low.endswith("s")
        and _little_used(low)
        and low not in note.cues.cue_words
        and low not in note.eponyms
        and low not in _not_names()
        and not _slip_of_common(low)
    )


@cache
def _not_names() -> frozenset[str]:
    """Words after a kin word in a one-case note that are no name: words of mood, irregular
    past forms, clinical abbreviations, care units ("HER SON TELE"), units of measure, staff
    roles ("HER SON CLERK")."""
    lists = (
        "name_kin_not_names",
        "exclusion_clinical_abbreviations",
        "care_units",
        "exclusion_roles",
    )
    return frozenset().union(*map(word_set, (*lists, "exclusion_units")))


def _slip_of_common(low: str) -> bool:
    """A typing slip of a common word ("UPDATD", "WFIE", "AWRE"); a word of five letters or
    fewer is one slip from many words ("liam": "lima"), so only from a very common one."""
    if len(low) > 5:
        return lx.near_english(low)
    return lx.may_slip_common(low) and any(lx.zipf(v) >= 5.0 for v in lx.slips(low))


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


def initial_forms(note: _Note, i: int, j: int, role: Category) -> int | None:
    """The name from word ``j`` (after the role word ``i``) when it opens with an initial
    (lower-case, or dotted, or a capital alone after a kin word: ``kin_initial``)."""
    if role is R and j == i + 1 and kin_initial(note, i, j):
        return j + 1  # "Son V. called": the initial (and "Son", maybe a first name) taken
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


def kin_initial(note: _Note, i: int, j: int) -> bool:
    """ "Son V. called", "DAUGHTER K. AT BEDSIDE": right after a kin word, a capital with its
    period standing for a name (``surname_letter``), no name after it: the initial is the
    relative's, taken. A kin word that is a census first name as well ("Son"), capitalised
    and with no possessive or article before it, may be that first name with its initial:
    taken too (an uncovered first name leaks; a covered kin word costs one word)."""
    tok, kin = note.words[j], note.words[i]
    if not (
        note.gap(i, j) == " "
        and tok.text.isupper()
        and _is_initial(tok, note.text)
        and surname_letter(tok, note.text)
        and tok.lower not in {"a", "i"}
    ):
        return False
    if tok.lower in note.cues.clinical_letters and not _initial_word_after(note.text, tok.end + 1):
        return False  # "Son L. arm pain", "Wife R. hip": a side, unless "Son L. called"
    if kin.lower in lx.first_names() and not kin.text.islower() and not _owned(note, i):
        note.take(i, OTHER, 0.6)
        note.take(j, OTHER, 0.6)
    else:
        note.take(j, R, 0.7)
    return True


_OWNERS: Final = _POSSESSIVES | {"a", "the", "and", "her", "his", "your", "my", "our"}


def _owned(note: _Note, i: int) -> bool:
    """A possessive, an article or "and" right before word ``i`` ("her son", "the son"): a
    kin word there is no first name."""
    return i > 0 and note.words[i - 1].lower in _OWNERS
