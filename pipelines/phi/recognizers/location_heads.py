"""Facility names read back from their head word ("Ashcott Hospital", "Univ of X Medical"),
for the ``locations.facility_head`` pass, and the note-level steps that find a facility by
its head alone: a name glued to its head ("XyzBuilding") and a name joined to a found facility
by "and" ("X Rehab and Y")."""

from __future__ import annotations

from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers.location_words import (
    FUNCTION_ZIPF,
    GENERIC_HEADS,
    GENERIC_MODIFIERS,
    HEAD_FILLERS,
    HOSPITAL,
    NAMED_HEADS,
    NOT_PLACES,
    RELIGIOUS_KIN,
    SERVICES,
    STRONG_HEADS,
    UNITS,
    capital,
    ends_clause,
    kin_words,
)
from pipelines.phi.wordlists import word_set
from pipelines.spans import Span

_NAME_WORDS: Final = 4  # name words read back from a head at most
# Words before "of" inside a facility's name ("University of X Medical Center").
_OF_OPENERS: Final = frozenset({"university", "univ", "u", "college", "sisters"})
_GAPS: Final = frozenset({"", "-", "'", "."})
DESCRIPTORS: Final = "facility_descriptors"


def facility(words: tuple[Token, ...], h: int, text: str, mixed: bool) -> Span | None:
    """The name words before a facility head: "Ashcott Hospital", "Univ of X Medical".
    Reads four name words before the head and the word before them ("University of"), and
    the word after the head; nothing else of the note but ``mixed``."""
    if mixed and _lower_name_before(words, h, text):
        mixed = False  # "prefers gentle lamb memorial": read back as in a one-case note
    head = words[h]
    named_head = head.lower in NAMED_HEADS
    strong = _head_strength(words, h, text, mixed)
    if strong is None:
        return None
    first = _first_name_word(words, h, text, mixed, strong)
    if first is None or (named_head and _general_alone(words, h)):
        return None
    end_tok = h if named_head else _last_name_word(words, first, h)
    start, end = words[first].start, words[end_tok].end
    if start >= end:
        return None
    return Span(start, end, HOSPITAL, 0.8, "locations")


def _head_strength(words: tuple[Token, ...], h: int, text: str, mixed: bool) -> bool | None:
    """Is the head at ``h`` strong (any non-function word before it names: "X Hospital", a head
    written as a name in a mixed-case note, "Gentle Lamb memorial"), weak, or no head here
    (None: "general hospital", "good health" in lower case, "house diet")?"""
    head = words[h]
    named_head = head.lower in NAMED_HEADS
    trailing = named_head and _trailing_lower_head(words, h, text, mixed)
    if named_head and not capital(head, mixed) and not trailing:
        return None  # "general hospital", "good health" written in lower case
    strong = head.lower in STRONG_HEADS or (mixed and head.is_title) or trailing
    if named_head and not strong and not head_closes(words, h, text, mixed):
        return None
    return strong


def _first_name_word(
    words: tuple[Token, ...], h: int, text: str, mixed: bool, strong: bool
) -> int | None:
    """The first of the name words read back from the head at ``h`` (fillers and generic heads
    right before it skipped: "X Medical Center"), or None."""
    first = None
    j = h - 1
    while j >= 0 and h - j <= _NAME_WORDS and _joined(text, words[j], words[j + 1]):
        tok = words[j]
        skip = (
            tok.lower == "of" and first is not None and j > 0 and words[j - 1].lower in _OF_OPENERS
        ) or (first is None and _between_name_and_head(tok.lower))
        if not skip:
            if not namelike(tok, mixed, strong) or tok.lower in GENERIC_MODIFIERS:
                break
            if first is None and tok.lower in RELIGIOUS_KIN:
                break  # "Sister Hospice aware": a relative and a service
            first = j
        j -= 1
    return first


def _between_name_and_head(low: str) -> bool:
    """A word between a facility's name and its head: a filler or another head ("X [Medical]
    Center") or a word of the site's kind ("our X [satellite] clinic", "X [walk-in] clinic")."""
    return low in HEAD_FILLERS or low in GENERIC_HEADS or low in word_set(DESCRIPTORS)


# Name-part heads written in lower case after a Title-case name ("Gentle Lamb memorial").
_TRAILING_HEADS: Final = frozenset({"memorial", "manor"})


def _trailing_lower_head(words: tuple[Token, ...], h: int, text: str, mixed: bool) -> bool:
    """ "Family prefers Gentle Lamb memorial": in a mixed-case note a name-part head written in
    lower case right after a Title-case word (one space apart) still closes the name."""
    if not mixed or h == 0 or words[h].lower not in _TRAILING_HEADS:
        return False
    prev = words[h - 1]
    return prev.is_title and text[prev.end : words[h].start] == " "


def _lower_name_before(words: tuple[Token, ...], h: int, text: str) -> bool:
    """ "gentle lamb memorial" in a mixed-case note: a lower-case name-part head right after a
    lower-case word that names (a surname, a city, a rare word; no clinical word)."""
    head = words[h]
    if h == 0 or head.lower not in _TRAILING_HEADS or not head.text.islower():
        return False
    prev = words[h - 1]
    low = prev.lower
    if not prev.text.islower() or text[prev.end : head.start] != " " or lx.clinical_word(low):
        return False
    f = lx.zipf(low)
    return lx.name_score(low) >= 1.0 or low in lx.us_cities() or (f < 2.5 and len(low) > 3)


def _joined(text: str, tok: Token, nxt: Token) -> bool:
    """Two words of one name: a space, a hyphen or an apostrophe between them, or a period
    after "St"/"Mt" ("St. Agnes"), on one line."""
    gap = text[tok.end : nxt.start]
    mark = gap.strip()
    if "\n" in gap or mark not in _GAPS:
        return False
    return mark != "." or tok.lower in {"st", "mt"}


def _general_alone(words: tuple[Token, ...], h: int) -> bool:
    """ "X General" with no generic head after it: "general" names no facility alone."""
    return (
        words[h].lower == "general"
        and h + 1 < len(words)
        and words[h + 1].lower not in GENERIC_HEADS
    )


def head_closes(words: tuple[Token, ...], h: int, text: str, mixed: bool) -> bool:
    """A name-part head ("House", "Health") ends a facility name only when a generic head or
    the end of the clause follows: "X House NH", "works for X health." — not "house diet"."""
    if not capital(words[h], mixed):
        return False
    if h + 1 < len(words) and words[h + 1].lower in GENERIC_HEADS:
        return True
    after = text[words[h].end : words[h].end + 2].lstrip(" ")[:1]
    return after == "" or after in ".,;)\n"


def namelike(tok: Token, mixed: bool, strong: bool = True) -> bool:
    """Could this word be part of a facility name? Before a weak head ("rehab", "center") a
    one-case note needs a city, a surname or a rare word ("cardiac rehab" is no name)."""
    low = tok.lower
    if _no_name_word(low) or not capital(tok, mixed):
        return False
    place = low in lx.us_cities() or (len(low) > 2 and low in lx.us_states())
    f = lx.zipf(low)
    if f >= FUNCTION_ZIPF and not place:
        return False
    if strong:
        return mixed or f < 5.2 or place
    # before a weak head ("rehab", "center") only a city, a surname or an initialism no
    # service has ("QXV clinic"; "cardiac rehab", "GI clinic" name none)
    return place or _weak_head_name(tok, mixed, f)


def _weak_head_name(tok: Token, mixed: bool, f: float) -> bool:
    """A word no city that names before a weak head: a surname, a rare word or an unknown
    initialism; no clinic service, however rare ("DEXA center", "INR clinic")."""
    low = tok.lower
    if low in word_set("clinic_service_initialisms"):
        return False
    return (
        lx.name_score(low) >= 1.0
        or (f < 2.0 and len(low) > 3 and low.isalpha())
        or _initialism(tok, mixed, f)
    )


def _initialism(tok: Token, mixed: bool, f: float) -> bool:
    """An unknown initialism (in capitals in a mixed-case note, a rare short word in a one-case
    note): no clinical service or condition ("PT", "CHF"), no state ("MD office"), no unit."""
    low = tok.lower
    if not (2 <= len(low) <= (5 if mixed else 4) and low.isalpha()):
        return False
    if (tok.is_upper and f < 4.0) if mixed else f < 2.5:
        return not (
            low in word_set("clinic_service_initialisms")
            or low in word_set("clinical_acronyms")
            or low in NOT_PLACES
            or low in lx.us_states()
            or lx.clinical_word(low)
        )
    return False


def _no_name_word(low: str) -> bool:
    """A care unit, a service ("Pain Clinic", "Cardiac Rehab"), a letter, or a verb form
    ("tolerating", "indicated"): never part of a facility's name."""
    if low in UNITS or (len(low) < 2 and low != "u") or low in word_set(SERVICES):
        return True
    if low in kin_words():
        return True  # "Son Hospice worker called"
    if low in word_set("facility_stop_verbs"):
        return True  # "FAMILY PREFERS X MEMORIAL": the name starts after the verb
    return low.endswith(("ing", "ed")) and lx.name_score(low) < 1.0


def _last_name_word(words: tuple[Token, ...], first: int, h: int) -> int:
    """The last word before the generic head(s) at ``h`` (skipping "Medical" in "X Medical Center")."""
    end = h - 1
    while end > first and _between_name_and_head(words[end].lower):
        end -= 1
    return end


# Facility heads written glued to the name before them ("XyzBuilding", "XyzHospital").
_GLUED_HEADS: Final = ("Building", "Hospital", "Center", "Pavilion", "Clinic")


def glued_heads(text: str) -> list[Span]:
    """ "(XyzBuilding)": a capitalised name glued to a facility head (a typing slip)."""
    out: list[Span] = []
    for head in _GLUED_HEADS:
        if head not in text:
            continue
        at = text.find(head)
        while at > 0:
            start = at
            while start > 0 and text[start - 1].isalpha():
                start -= 1
            if at - start >= 3 and text[start].isupper() and text[at - 1].islower():
                out.append(Span(start, at, HOSPITAL, 0.65, "locations.glued_head"))
            at = text.find(head, at + len(head))
    return out


def facility_list(words: tuple[Token, ...], h: int, text: str, mixed: bool) -> Span | None:
    """ "screened by X Rehab and Y.": a name joined to a facility names a facility too."""
    if h + 2 >= len(words) or words[h + 1].lower not in {"and", "or", "&"}:
        return None
    tok = words[h + 2]
    low = tok.lower
    if "\n" in text[words[h].end : tok.start] or low in UNITS or low in GENERIC_MODIFIERS:
        return None
    if not capital(tok, mixed) or not ends_clause(text, tok):
        return None
    if lx.zipf(low) >= 3.0 or len(low) < 3 or lx.clinical_word(low):
        return None
    return Span(tok.start, tok.end, HOSPITAL, 0.6, "locations.facility_list")
