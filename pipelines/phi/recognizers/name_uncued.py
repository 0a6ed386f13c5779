"""The uncued passes of the name recognizer: a name with no cue word next to it, found by its
capitals (where the note's case tells something) and the census name lists.

Each pass comes with its gate: what it asks of the word it starts at, and of nothing else (not
its neighbours, the note's eponyms or the names taken so far). The driver tries a pass only
where its gate holds; the pass asks the same again, so tried anywhere else it takes nothing."""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Final

from pipelines.phi import lexicons as lx
from pipelines.phi.lexicons import Token
from pipelines.phi.passes import Case
from pipelines.phi.recognizers.name_cues import OTHER, cues
from pipelines.phi.recognizers.name_words import (
    _base,
    _common_first_name,
    _lower_full_name,
    _namey,
    _rare_unknown,
    _sentence_start,
    _surname_after_first,
    _tight,
    name_before_age,
    namey_zipf,
    person_after,
    surname_letter,
)
from pipelines.phi.wordlists import word_set

if TYPE_CHECKING:
    from pipelines.phi.recognizers.names import _Note

UNITS = word_set("care_units")


@cache
def first_name_words() -> frozenset[str]:
    """The census first names (lower-case): the lexicon of the passes whose gate asks for one
    as written, so the driver asks no gate of the other words."""
    return frozenset(lx.first_names())


def title_pair_gate(tok: Token, case: Case) -> bool:
    """A Title-case word more a name than a word, where capitals tell something."""
    if case is Case.UPPER or not lx.is_title(tok.text):
        return False
    low = tok.lower
    base = _base(low)
    f = namey_zipf(base)  # ``_namey``
    if f is None:
        return False
    # a rare unknown word (``_rare_unknown``) is one in no census list of Zipf under 1.5:
    # without a possessive, one of Zipf under 2.5 already passes
    return (
        low in lx.first_names() or (f if base == low else lx.zipf(low)) < 2.5 or _rare_unknown(tok)
    )


def _pair_head(note: _Note, i: int) -> bool:
    """Word ``i`` may open a Title-case pair: a census first name, a rare unknown word, or a
    rare word inside a sentence (a capital at a sentence's start says nothing)."""
    tok = note.words[i]
    low = tok.lower
    return (
        low in note.first_names
        or _rare_unknown(tok)
        or (lx.zipf(low) < 2.5 and not _sentence_start(note.text, tok.start))
    )


def title_case_pair(note: _Note, i: int) -> int | None:
    """No cue: two Title-case words that are each a name or rare ("Oriel Vantmoor")."""
    words, tok = note.words, note.words[i]
    if not (
        (note.mixed or note.lower_note)
        and lx.is_title(tok.text)
        and i + 1 < note.n
        and i not in note.taken
        and lx.is_title(words[i + 1].text)
        and _tight(note.gap(i, i + 1), tok)
    ):
        return None
    if (
        _namey(tok)
        and _namey(words[i + 1])
        and _pair_head(note, i)
        and tok.lower not in note.eponyms
        and _base(words[i + 1].lower) not in note.eponyms
        and note.ok(i, 2)
        and note.ok(i + 1, 2)
    ):
        note.take(i, OTHER, 0.6)
        return note.run_right(i + 1, OTHER, 0.6, 2)
    return None


def capital_initial_gate(tok: Token, case: Case) -> bool:
    """A bare capital letter that is no clinical shorthand ("L", "R")."""
    return len(tok.text) == 1 and tok.text.isupper() and tok.lower not in cues().clinical_letters


def capital_initial_surname(note: _Note, i: int) -> int | None:
    """ "J SMITH": a bare capital initial and a surname that is far more a name than a word."""
    words, text, tok = note.words, note.text, note.words[i]
    if not (capital_initial_gate(tok, note.case) and i + 1 < note.n):
        return None
    sur = words[i + 1]
    if (
        (tok.start == 0 or text[tok.start - 1] in " \n\t(")
        and note.gap(i, i + 1) == " "
        and lx.name_score(sur.lower) >= 1.8
        and lx.zipf(sur.lower) < 5.0
        and (sur.is_upper or sur.is_title)
    ):
        note.take(i, OTHER, 0.6)
        return note.run_right(i + 1, OTHER, 0.6, 2)
    return None


def first_name_initial(note: _Note, i: int) -> int | None:
    """No cue: "a 61-year-old man, Hal Q., asks", "Greta Q. called": a census first name in
    Title case more a name than a word, then a capital with its period (a surname initial)."""
    tok = note.words[i]
    if not (
        (note.mixed or note.lower_note)
        and lx.is_title(tok.text)
        and tok.lower in note.first_names
        and i not in note.taken
        and i + 1 < note.n
        and note.gap(i, i + 1) == " "
    ):
        return None
    low = tok.lower
    if (
        _initial_with_period(note, i + 1)
        and lx.name_score(low) >= (-0.5 if _apposition(note, i) else 0.0)
        and low not in note.cues.cue_words
        and low not in note.eponyms
        and _not_clinical_first(low)
    ):
        note.take(i, OTHER, 0.6)
        return note.run_right(i + 1, OTHER, 0.6, 2)
    return None


def _initial_with_period(note: _Note, j: int) -> bool:
    """Word ``j`` is a capital standing for a surname, written with its period ("Q.")."""
    letter = note.words[j]
    return surname_letter(letter, note.text) and note.text[letter.end : letter.end + 1] == "."


def _apposition(note: _Note, i: int) -> bool:
    """Words ``i`` and ``i + 1`` ("Hal Q.") stand between commas, set apart as a person is
    in "a 61-year-old man, Hal Q., asks": the comma before, and one right after the period."""
    tok, letter = note.words[i], note.words[i + 1]
    before = note.text[max(0, tok.start - 3) : tok.start].rstrip(" ")
    return before.endswith(",") and note.text[letter.end : letter.end + 2] == ".,"


def _not_clinical_first(low: str) -> bool:
    """A first name that does not look like clinical vocabulary, or is far more a name than
    a word all the same ("Thomas", "Josephine": a drug list's or a suffix's false friends)."""
    return not lx.clinical_word(low) or lx.name_score(low) >= 1.5


def one_case_first_gate(tok: Token, case: Case) -> bool:
    """In a note written in capitals, a census first name at least as much a name as a word,
    no care unit ("WARD C.") and no clinical word."""
    low = tok.lower
    return (
        case is Case.UPPER
        and low in lx.first_names()
        and lx.name_score(low) >= 0.0
        and low not in UNITS
        and _not_clinical_first(low)
    )


def _strong_first(low: str) -> bool:
    """A first name far more a name than a word, and no very common word ("MAY", "MARK",
    "WILL" are words first)."""
    return lx.name_score(low) >= 1.0 and lx.zipf(low) < 5.0


def one_case_first_initial(note: _Note, i: int) -> int | None:
    """No cue, note in capitals: "LYDIA T. CALLED BACK", "A 61-YEAR-OLD MAN, GUY Q., ASKS": a
    first name, then a capital with its period; the name far more a name than a word, or
    set apart between commas."""
    tok = note.words[i]
    if not (
        one_case_first_gate(tok, note.case)
        and i not in note.taken
        and i + 1 < note.n
        and (_strong_first(tok.lower) or _apposition(note, i))
        and i + 1 < note.n
        and note.gap(i, i + 1) == " "
        and tok.lower not in note.cues.cue_words
        and tok.lower not in note.eponyms
        and _initial_with_period(note, i + 1)
    ):
        return None
    note.take(i, OTHER, 0.6)
    note.take(i + 1, OTHER, 0.6)
    return i + 2


def lone_first_gate(tok: Token, case: Case) -> bool:
    """A census first name in Title case ("Eliza", "Eliza's") or in capitals ("BRENT, 99,"),
    where capitals tell something."""
    return (
        case is not Case.UPPER
        and (lx.is_title(tok.text) or tok.text.isupper())
        and _base(tok.lower) in lx.first_names()
    )


def lone_first_name(note: _Note, i: int) -> int | None:
    """No cue: a rare census first name in Title case, maybe with its last name."""
    tok = note.words[i]
    if not (
        (note.mixed or note.lower_note)
        and i not in note.taken
        and _base(tok.lower) in note.first_names
    ):
        return None
    if not lx.is_title(tok.text):
        # in capitals only before an age set apart: "BRENT, 99, lives alone"
        if tok.is_upper and len(tok.text) >= 3 and _age_set_apart(note.text, tok):
            note.take(i, OTHER, 0.6)
            return i + 1
        return None
    if (
        note.ok(i, 1)
        or _common_first_name(tok, note.text, note.lowered, note.eponyms)
        or _age_set_apart(note.text, tok)
    ):
        return note.run_right(i, OTHER, 0.6, 2)
    return None


# an age set apart after a word, then the sentence goes on: ", 95, lives", " (91) seen"
_AGE_APART: Final = re.compile(r"(?:(,)[ \t]?\d{2,3}[ \t]?,|[ \t]?\(\d{2,3}\))[ \t]+[A-Za-z]")


def _age_set_apart(text: str, tok: Token) -> bool:
    """A census first name far more a name than a word, then an age set apart ("Amy, 95, lives
    alone", "Hollis (91) seen", "Harry (97) seen", "Walker (92) seen"): a person and her age."""
    m = _AGE_APART.match(text, tok.end)
    if m is None:
        return False
    brackets = not m.group(1)
    lax = tok.text.islower() is False and person_after(text, m.end() - 1)
    return name_before_age(_base(tok.lower), brackets and not lax)


def _full_name_first(low: str) -> bool:
    """A census first name used far more as a name than as a word (a one-case full name's)."""
    if low not in lx.first_names():
        return False
    ns, f = lx.name_score(low), lx.zipf(low)
    return (ns >= 1.5 and f < 4.5) or (ns >= 2.0 and f < 5.5)


def one_case_full_gate(tok: Token, case: Case) -> bool:
    """In a one-case note, a first name that may open a full name."""
    low = tok.lower
    return (
        case is not Case.MIXED
        and low in lx.first_names()
        and (_full_name_first(low) or name_before_age(low, False))
    )


def one_case_full_name(note: _Note, i: int) -> int | None:
    """No cue, one-case note: "HAZEL PELLWORTH" (first name + census surname). A first name
    alone is not enough here: "MAE", "PERLA", "ALINE" are clinical abbreviations too."""
    words, tok = note.words, note.words[i]
    low = tok.lower
    if note.mixed or i in note.taken or low in note.eponyms:
        return None
    if _age_set_apart(note.text, tok):  # "OPAL, 99, LIVES ALONE", "HARRY (97) SEEN"
        note.take(i, OTHER, 0.6)
        return i + 1
    if (
        _full_name_first(low)
        and i + 1 < note.n
        and _tight(note.gap(i, i + 1))
        and lx.name_score(_base(words[i + 1].lower)) >= 1.5
        and _surname_after_first(tok, words[i + 1], note.mixed)
    ):
        note.take(i, OTHER, 0.6)
        return note.run_right(i + 1, OTHER, 0.6, 2)
    return None


def lower_full_gate(tok: Token, case: Case) -> bool:
    """In a mixed-case note, a lower-case census first name that is no common word."""
    low = tok.lower
    if not (case is Case.MIXED and tok.text.islower() and len(low) >= 3):
        return False
    if low not in lx.first_names():
        return False
    ns, f = lx.name_score(low), lx.zipf(low)
    return (ns >= 1.0 and f < 4.5) or (ns >= 2.0 and f < 5.5)


def lower_full_name(note: _Note, i: int) -> int | None:
    """ "john kowalski in to visit": a lower-case full name in a mixed-case note, no cue."""
    tok = note.words[i]
    if (
        note.mixed
        and tok.lower in note.first_names
        and i not in note.taken
        and i + 1 < note.n
        and _lower_full_name(tok, note.words[i + 1], note.text, note.eponyms)
    ):
        note.take(i, OTHER, 0.6)
        return note.run_right(i + 1, OTHER, 0.6, 3)
    return None


def surname_age_gate(tok: Token, case: Case) -> bool:
    """A capitalised census name far more a name than a word ("Evans", "WALKER") where
    capitals tell something: its name score says it is in a census list (no look-up in the
    lists themselves, dear per word). Not in a note in capitals, where every word would be
    asked (a first name there is ``one_case_full_name``'s)."""
    return (
        case is not Case.UPPER
        and (lx.is_title(tok.text) or tok.is_upper)
        and name_before_age(tok.lower, False)
    )


def surname_before_age(note: _Note, i: int) -> int | None:
    """No cue: a capitalised census name before an age set apart ("Evans (98) is here",
    "Walker (92) seen"; not "Walker (92) ordered": the age's own
    judgment, ``_age_set_apart``): a person and her age."""
    tok = note.words[i]
    if not (
        surname_age_gate(tok, note.case)
        and i not in note.taken
        and tok.lower not in note.eponyms
        and tok.lower not in note.cues.cue_words
        and _age_set_apart(note.text, tok)
    ):
        return None
    note.take(i, OTHER, 0.6)
    return i + 1
