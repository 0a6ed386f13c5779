"""Whole facility names and hospital acronyms, for ``locations``.

A facility's name is written as name words, then a head: "Sacred Heart Memorial Hospital",
"Lam-Locklear Community Hospital", "St. Agnes Medical Center", "candler county hospital".
The heads, the saint/religious openers, the in-name modifiers ("Regional", "Community") and the
services that are no name ("Pain Clinic") are data files under ``pipelines/phi/data/vocabulary/``. A
phrase is reported whole, head included, when it holds at least one word that names: an
opener, a listed city, a census surname, or (in a one-case note) a rare word.

Hospital acronyms ("XYZMC", "XRMC", "XMH") are read by ``facility_acronyms``.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from itertools import compress
from operator import attrgetter
from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers.location_words import RELIGIOUS_KIN, kin_words
from pipelines.phi.wordlists import phrases, word_set
from pipelines.spans import Category, Span

HOSPITAL: Final = Category.LOCATION_HOSPITAL
_lower = attrgetter("lower")
_MAX_NAME_WORDS: Final = 5
_FUNCTION_ZIPF: Final = 5.6
PHRASE: Final = "locations.facility_phrase"


@cache
def _heads() -> dict[str, tuple[tuple[str, ...], ...]]:
    """First word -> head phrases starting with it, longest first."""
    out: dict[str, list[tuple[str, ...]]] = {}
    for phrase in phrases("facility_heads"):
        out.setdefault(phrase[0], []).append(phrase)
    return {k: tuple(sorted(v, key=len, reverse=True)) for k, v in out.items()}


@cache
def head_words() -> frozenset[str]:
    return frozenset(_heads())


def _head_at(words: tuple[Token, ...], lowers: tuple[str, ...], i: int, text: str) -> int | None:
    """Index of the last word of the longest head phrase starting at word ``i`` (``lowers``:
    the words' lower-case forms, compared with a phrase as one slice)."""
    for phrase in _heads().get(lowers[i], ()):
        k = i + len(phrase)
        if k > len(words):
            continue
        part = words[i:k]
        if lowers[i:k] == phrase and all(
            text[a.end : b.start] == " " for a, b in zip(part, part[1:], strict=False)
        ):
            return k - 1
    return None


def _same_case(tok: Token, head: Token, mixed: bool) -> bool:
    if not mixed:
        return True
    if head.is_upper:
        return tok.is_upper
    if head.is_title:
        return tok.is_title or tok.is_upper or tok.lower in {"of", "and"}
    return tok.text.islower()


def _names(tok: Token, cased: bool) -> bool:
    """A word that can be the naming part of a facility ("Calvert", "Newhall", "Candler")."""
    return _names_word(tok.lower, cased)


def _names_word(low: str, cased: bool) -> bool:
    """``_names`` of a lower-case word."""
    if len(low) < 2 or not low.replace("'", "").isalpha():
        return False
    if low in word_set("facility_services") or _not_naming(low):
        return False
    place = low in lx.us_cities() or low in lx.us_states()
    if _clinical_only(low, place):
        return False  # a drug or a disease, unless a common surname too ("Rocha")
    f = lx.zipf(low)
    if f >= _FUNCTION_ZIPF and not place:
        return False
    if cased:  # capitalised before a capitalised head in a mixed-case note ("Roxbury Crossing")
        return True
    if low.endswith(("ing", "ed")) and lx.name_score(low) < 1.0:
        return False
    # a one-case note, or a lower-case name in a mixed note: a place, a surname or a rare word
    return place or lx.name_score(low.removesuffix("'s")) >= 0.5 or (f < 2.5 and len(low) > 3)


def _not_naming(low: str) -> bool:
    """A verb of contacting or choosing ("WILL CALL CLINIC") or a service's initialism
    ("COPD CLINIC"): no word of a facility's name, though a town may be called so ("Call")."""
    if low in kin_words():
        return True  # "Son Hospice worker called": a relative, no facility's name
    return low in word_set("facility_stop_verbs") or low in word_set("clinic_service_initialisms")


def _relative_before(words: tuple[Token, ...], first: int, h: int) -> bool:
    """A name of one religious kin word right before the head is a relative and a service
    ("Sister Hospice aware"; "Sister Kenny Institute" is a name)."""
    return first == h - 1 and words[first].lower in RELIGIOUS_KIN


def _clinical_only(low: str, place: bool) -> bool:
    """A clinical word and no common surname; a listed city that only a medical ending makes
    look clinical ("Sonoma", "Tacoma"; no drug of the dictionary) is none."""
    if not lx.clinical_word(low) or lx.name_score(low) >= 1.0:
        return False
    return not (place and not lx.drug_words().get(low))


def _gap_ok(text: str, left: Token, right: Token) -> bool:
    gap = text[left.end : right.start]
    if gap in {" ", "-"}:
        return True
    return gap == ". " and left.lower in {"st", "mt", "ste"}


def _name_start(
    words: tuple[Token, ...], h: int, text: str, mixed: bool, stops: frozenset[str]
) -> tuple[int, bool]:
    """First word of the facility name ending before the head at ``h`` (``h`` when none), and
    whether a word of it names (not only "Regional", "Community", "Pain")."""
    head = words[h]
    cased = mixed and not head.text.islower()
    first: int | None = None
    named = False
    j = h - 1
    while j >= 0 and h - j <= _MAX_NAME_WORDS and _gap_ok(text, words[j], words[j + 1]):
        tok = words[j]
        if tok.lower == "of" and j > 0 and words[j - 1].lower in {"lady", "university", "sisters"}:
            j -= 1
            continue
        if tok.lower in stops or not _same_case(tok, head, mixed):
            break
        names = _name_word(tok, cased)
        if names is None:
            break
        named = named or names
        first = j
        j -= 1
    if first is None:
        return h, False
    while first < h and words[first].lower in {"of", "and"}:
        first += 1
    return first, named


def _named_start(
    words: tuple[Token, ...], h: int, text: str, mixed: bool, stops: frozenset[str]
) -> tuple[int, bool]:
    """``_name_start``, and when no word of the name names: two modifiers with a region's
    ("Regional West"), or a lower-case name after a place cue ("at york vision clinic")."""
    first, named = _name_start(words, h, text, mixed, stops)
    if _relative_before(words, first, h):
        return h, False
    if named:
        return first, named
    if mixed and not words[h].text.islower() and _compass_pair(words[first:h]):
        return first, True
    if not words[h].text.islower():
        return first, False
    cued = _lower_cued_name(words, h, text, stops)
    # a lower-case note: two words at least ("at qxv clinic" is the head pass's)
    if cued is not None and (mixed or h - cued >= 2):
        return cued, True
    return first, False


# Words of a region that name a facility with another modifier ("Regional West", "Central
# Valley"), though neither names alone ("the West Wing", "Regional Medical Center").
_REGION_MODIFIERS: Final = frozenset({"north", "south", "east", "west", "central", "valley"})


def _compass_pair(name: tuple[Token, ...]) -> bool:
    """Two or more name words of which one is a region's: "Regional West", "Central Valley"."""
    return len(name) >= 2 and any(t.lower in _REGION_MODIFIERS for t in name)


def _name_word(tok: Token, cased: bool) -> bool | None:
    """Is ``tok`` a word of a facility's name, and does it name (True: "Calvert", "Saint";
    False: "Regional", "Pain", "Our"), or no word of a name (None)?"""
    low = tok.lower
    if low in word_set("facility_prefixes"):
        return low not in {"our", "good"}
    if low in _modifiers():
        return False
    return True if _names(tok, cased) else None


@cache
def _modifiers() -> frozenset[str]:
    """In-name modifiers and services: words a facility name may hold that name nothing."""
    return word_set("facility_modifiers") | word_set("facility_services")


def _more_heads(
    words: tuple[Token, ...], lowers: tuple[str, ...], end: int, text: str, mixed: bool
) -> int:
    """Heads that follow a head: "X Medical Center Nursing Home", "X Hospital and Medical
    Center". In a mixed-case note a head written in another case is none of the name's: "X
    Medical Center clinic since May" ends at "Center"."""
    heads = _heads()
    while end + 1 < len(words):
        k = end + 1
        if words[k].lower == "and" and text[words[end].end : words[k].start] == " ":
            k += 1
        if k >= len(words) or words[k].lower not in heads:
            break
        if not _same_case(words[k], words[end], mixed):
            break
        if not _gap_ok(text, words[k - 1], words[k]):
            break
        more = _head_at(words, lowers, k, text)
        if more is None:
            break
        end = more
    return end


@cache
def _places() -> frozenset[str]:
    return lx.us_cities() | frozenset(lx.us_states())


def _of_place(words: tuple[Token, ...], end: int, text: str, mixed: bool) -> int | None:
    """ "Hospital of Michigan", "Community Hospital of Chula Vista": the last word of a listed
    city or state after "of" behind the head, or None."""
    k = end + 1
    if (
        k + 1 >= len(words)
        or words[k].lower != "of"
        or text[words[end].end : words[k].start] != " "
    ):
        return None
    places = _places()
    best = None
    phrase = ""
    for m in range(k + 1, min(k + 4, len(words))):
        tok = words[m]
        if text[words[m - 1].end : tok.start] != " " or (
            mixed and not (tok.is_title or tok.is_upper)
        ):
            break
        phrase = f"{phrase} {tok.lower}".strip()
        if phrase in places and len(phrase) > 2:
            best = m
    return best


def facility_phrases(
    words: tuple[Token, ...], lowers: tuple[str, ...], text: str, mixed: bool,
    stops: frozenset[str], with_head: bool = True, at: Iterable[int] | None = None,
) -> list[Span]:  # fmt: skip
    """Whole facility names: name words, then one or more head phrases (``with_head=False``:
    the name words only, as corpora that leave the generic head out annotate them). ``at``:
    the indices of the words in ``head_words()``, in order, when the caller has picked them."""
    heads = _heads()
    out: list[Span] = []
    done = 0
    n = len(words)
    # only head words start the work (picked in C: no Python call per word of the note)
    if at is None:
        at = compress(range(n), map(heads.__contains__, lowers))
    for i in at:
        if i < done:
            continue  # inside a phrase already reported
        end = _head_at(words, lowers, i, text)
        if end is None:
            continue
        end = _more_heads(words, lowers, end, text, mixed)
        first, named = _named_start(words, i, text, mixed, stops)
        place_end = _of_place(words, end, text, mixed)
        if (named or place_end is not None) and _same_case(words[end], words[i], mixed):
            conf = 0.8 if words[i].lower != "memorial" else 0.7
            if place_end is not None:
                end = place_end  # "Children's Hospital of Michigan": the place is the name
            last = words[end] if with_head or place_end else words[max(first, i - 1)]
            out.append(Span(words[first].start, last.end, HOSPITAL, conf, PHRASE))
        done = end + 1
    return out


_LOWER_NAME_CUES: Final = frozenset({"at", "to", "from", "in"})


def _lower_cued_name(
    words: tuple[Token, ...], h: int, text: str, stops: frozenset[str]
) -> int | None:
    """ "seen at york vision clinic": a lower-case name (in a mixed-case or a lower-case note)
    of one to three lower-case words between a place cue (and "the") and a lower-case head, one of them a
    listed place, a surname or a word rarer than most; services, modifiers and describing
    words are no name alone ("at the pain clinic", "to community hospital", "at an outside
    hospital"). The index of its first word, or None."""
    j = h - 1
    naming = False
    while j >= 0 and words[j].lower not in _LOWER_NAME_CUES | {"the"}:
        if h - j > 3 or text[words[j].end : words[j + 1].start] not in {" ", "-"}:
            return None
        names = _lower_name_word(words[j], stops)
        if names is None:
            return None
        naming = naming or names
        j -= 1
    if not naming or j < 0 or text[words[j].end : words[j + 1].start] != " ":
        return None
    if words[j].lower == "the" and (j == 0 or words[j - 1].lower not in _LOWER_NAME_CUES):
        return None
    return j + 1


def _lower_name_word(tok: Token, stops: frozenset[str]) -> bool | None:
    """A lower-case word of a name that names (True), a modifier or a service (False), or no
    word of a name (None: a stop word, a clinical word, a capitalised word)."""
    low = tok.lower
    if not tok.text.islower() or low in stops or not low.replace("'", "").isalpha():
        return None
    if low in _modifiers():
        return False
    if lx.clinical_word(low) and lx.name_score(low) < 1.0:
        return None
    return _rare_or_named(low)


def _rare_or_named(low: str) -> bool:
    """A listed place, a surname, or a word rarer than most ("york", "legion", "belvoir")."""
    return low in _places() or lx.name_score(low) >= 1.0 or (len(low) > 2 and lx.zipf(low) < 4.0)
