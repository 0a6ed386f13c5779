"""Lists of names around a plural title ("Drs. Baker, Ward and Hill", "Oda Vranje and Drs
Lindqvist and Hanlon") and names wrapped onto the next line after their cue ("spoke
with\nGreta Q."): helpers of the cue passes (``name_cue_passes``), split from there."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pipelines.phi.recognizers.name_cues import P
from pipelines.phi.recognizers.name_words import _tight

if TYPE_CHECKING:
    from pipelines.phi.recognizers.names import _Note
    from pipelines.spans import Category

# Titles of more than one person: "Smith and Drs Jones and Lee"
PLURAL_TITLES: Final = frozenset({"drs", "doctors"})


def comma_list(note: _Note, j: int, title: Category) -> int:
    """ "Drs. Baker, Ward and Hill": after a plural title, a name after a comma is one of
    the doctors' when the list goes on after it (another comma or a joiner)."""
    words, n = note.words, note.n
    while j + 1 < n and note.gap(j - 1, j).strip(" \t") == "," and note.ok(j, 3):
        nxt, gap = words[j + 1].lower, note.gap(j, j + 1).strip(" \t")
        if not (gap == "," or (gap == "" and nxt in note.cues.joiners)):
            break
        j = note.run_right(j, title, 0.9, 3)
    return j


def and_list(note: _Note, j: int, title: Category) -> int:
    """ "DRS HALE AND GLASS": in a one-case note, after a plural title, the word after "and"
    is one of the doctors' though it is a common word (``one_case_surname``)."""
    words, n = note.words, note.n
    while (
        j + 1 < n
        and words[j].lower in note.cues.joiners
        and note.gap(j - 1, j) == " "
        and note.gap(j, j + 1) == " "
        and note.one_case_surname(words[j + 1])
    ):
        note.take(j + 1, title, 0.85)
        j += 2
    return j


def list_before_title(note: _Note, i: int) -> None:
    """ "Oda Vranje and Drs Lindqvist and Hanlon", "ODA VRANJE, DRS LINDQVIST AND HANLON": a
    name right before "and Drs" or ", Drs" is a doctor's too (a list whose title comes after
    its first name)."""
    words = note.words
    if not (words[i].lower in PLURAL_TITLES and 2 <= i < note.n - 1 and note.ok(i + 1, 3)):
        return
    # a list of doctors: a word before "and Drs" is as sure as one before a credential
    if (
        words[i - 1].lower in note.cues.joiners
        and _tight(note.gap(i - 1, i))
        and note.gap(i - 2, i - 1) == " "
    ):
        note.run_left(i - 1, P, 0.8, words[i].lower)
    elif note.gap(i - 1, i) == ", " and _list_goes_on(note, i + 1):
        note.run_left(i, P, 0.8, words[i].lower)


def _list_goes_on(note: _Note, j: int) -> bool:
    """The name after a plural title at ``j - 1`` is followed by another ("Drs Lindqvist and
    Hanlon"): the title is the list's, so a name before its comma is one of them."""
    words, n = note.words, note.n
    k = j + 1
    while k < n and k - j < 3 and _tight(note.gap(k - 1, k), words[k - 1]):
        if words[k].lower in note.cues.joiners:
            return True
        k += 1
    return k < n and note.gap(k - 1, k).strip(" \t") == ","


# Words that never end a sentence, after which a line break is a wrapped line ("spoke
# with\nGreta Q.", "per\nDr Hanlon")
WRAP_LINKS: Final = frozenset({"with", "w", "by", "to", "for", "per"})


def line_wrap(note: _Note, i: int) -> bool:
    """Word ``i`` ends its line and the name goes on at the next one's start: one line break
    and blanks (or a title's period) between, and the next word opens no labelled line
    ("Dr.\nHanlon", not "Dr.\nHEENT: normal")."""
    gap = note.gap(i, i + 1)
    if gap.count("\n") != 1 or gap.strip(" \t\r\n.") or i + 2 > note.n:
        return False
    after = note.text[note.words[i + 1].end : note.words[i + 1].end + 2].strip(" \t")
    return not after.startswith((":", "-"))
