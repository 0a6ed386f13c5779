"""The label pass of the name recognizer: after a label that lists people and its colon
("Visitors:", "Family:", "NOK:", "Wife:"), a first name in any case is a name. Split from
``name_cue_passes`` (the same pass shape: ``run(note, i)`` takes the words it finds)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pipelines.phi import lexicons as lx
from pipelines.phi.recognizers.name_cue_passes import _role_word
from pipelines.phi.recognizers.name_words import _lower_full_name, _tight

if TYPE_CHECKING:
    from pipelines.phi.recognizers.names import _Note
    from pipelines.spans import Category


def after_label(note: _Note, i: int) -> int | None:
    """ "Visitors: hal stayed", "NOK: greta", "Wife: ann kowalski": after a label that lists
    people and its colon, a census first name more a name than a word, in any case (a
    mixed-case note's lower-case words are names nowhere else without a title)."""
    words, n = note.words, note.n
    role = note.cues.people_labels.get(words[i].lower) or _role_word(note, i)
    j = _after_mark(note, i)
    if role is None or j is None or j in note.taken:
        return None
    first = words[j]
    if not _label_first_name(note, first):
        return _label_word_names(note, j, role)
    if j + 1 < n and _lower_full_name(first, words[j + 1], note.text, note.eponyms):
        note.take(j, role, 0.7)  # "ann kowalski"
        return note.run_right(j + 1, role, 0.7, 3)
    return _label_list(note, note.run_right(j, role, 0.7, 2), role)


# What stands between a label and its first name: a colon, or a dash or an equals sign set
# off by blanks ("Visitors - hal", "Visitors= hal"); the colon may end the line.
_LABEL_MARKS: Final = frozenset({":", "-", "=", ":-"})


def _after_mark(note: _Note, i: int) -> int | None:
    """The word after the label at ``i`` and its mark ("Visitors: hal", "Visitors:\nhal",
    "Visitor(s): hal", "Visitors - hal"), or None when no mark follows the label."""
    words, n, j = note.words, note.n, i + 1
    if j + 1 < n and words[j].text == "s" and note.gap(i, j) == "(":
        j += 1  # "Visitor(s):"
    if j >= n:
        return None
    gap = note.gap(j - 1, j).lstrip(")")
    mark = gap.strip(" \t\r\n")
    if mark not in _LABEL_MARKS or gap.count("\n") > 1 or ("\n" in gap and mark != ":"):
        return None
    if mark != ":" and not (gap[:1].isspace() or mark == "="):
        return None  # "Family-centred", "visitors-only": a word joined by a hyphen
    return j


def _label_list(note: _Note, k: int, role: Category) -> int:
    """ "Visitors: greta and hal": after the first name, a further first name after "and",
    judged as the first (``_label_first_name``), on the same line."""
    words, n = note.words, note.n
    while k + 1 < n and words[k].lower in note.cues.joiners:
        if "\n" in note.gap(k - 1, k + 1) or not _label_first_name(note, words[k + 1]):
            break
        note.take(k + 1, role, 0.7)
        k += 2
    return k


def _label_word_names(note: _Note, j: int, role: Category) -> int | None:
    """ "Visitors: drew stayed", "Family: will and faith at bedside": census first names
    that are common words too, one or a list, then a word saying they were there."""
    words, n = note.words, note.n
    found = [j]
    k = j + 1
    while k + 1 < n and words[k].lower in note.cues.joiners and _tight(note.gap(k - 1, k)):
        found.append(k + 1)
        k += 2
    if k >= n or words[k].lower not in note.cues.presence_after or "\n" in note.gap(j, k):
        return None
    if not all(_word_first_name(note, words[m]) for m in found):
        return None
    for m in found:
        note.take(m, role, 0.7)
    return k


# How far a first name's census share may fall below its English use ("name_score")
_WORD_NAME_FLOOR: Final = -1.2


def _word_first_name(note: _Note, tok: lx.Token) -> bool:
    """A census first name that may be a word, written in lower or Title case, no cue word
    and no eponym of this note."""
    low = tok.lower
    return (
        low in note.first_names
        and low not in note.cues.cue_words
        and low not in note.eponyms
        and (tok.text.islower() or tok.is_title or not note.mixed)
        # "will" (-1.19) and "hope" are names here; "many", "man", "see" far more words
        and lx.name_score(low) > _WORD_NAME_FLOOR
    )


def _label_first_name(note: _Note, tok: lx.Token) -> bool:
    """A census first name used more as a name than as a word ("hal", "greta"; not "will",
    "mark"), no cue word and no eponym of this note."""
    low = tok.lower
    if low in note.cues.cue_words or low in note.eponyms or low not in note.first_names:
        return False
    ns, f = lx.name_score(low), lx.zipf(low)
    return (ns >= 1.0 and f < 4.5) or (ns >= 2.0 and f < 5.5)
