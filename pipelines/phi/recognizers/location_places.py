"""Places told by the word after them (``locations``): a city before its state ("Middle River,
MD"), a hospital's acronym before its emergency department or staff ("XYZ ER", "XYZ nurse"),
a university's hospital ("University of Vermont"); and the note-level steps: wards glued to
their floor (a place found once spreads to its other occurrences in the detector's
propagation step, ``pipelines.phi.propagate``)."""

from __future__ import annotations

from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers.location_wards import ward_glued_to_digit
from pipelines.phi.recognizers.location_words import (
    CITY,
    COMPASS,
    GENERIC_MODIFIERS,
    HOSPITAL,
    OTHER,
    UNITS,
    UNIVERSITY,
    capital,
    named,
    people,
    spaced,
)
from pipelines.phi.scan import compile_words, finditer
from pipelines.phi.wordlists import word_set
from pipelines.spans import Span

WARD: Final = "locations.ward_number"


def acronym_before_unit(
    words: tuple[Token, ...], h: int, text: str, mixed: bool, staff: bool = False
) -> Span | None:
    """ "XYZ ER": an unknown acronym right before an emergency department is a hospital."""
    tok = words[h - 1]
    low = tok.lower
    if text[tok.end : words[h].start] != " " or low in UNITS or low in GENERIC_MODIFIERS:
        return None
    if not (2 <= len(low) <= 5) or (mixed and not tok.is_upper) or lx.zipf(low) >= 4.0:
        return None
    if mixed and not words[h].is_upper and words[h].lower != "cath" and not staff:
        return None
    return Span(tok.start, tok.end, HOSPITAL, 0.7, "locations")


def university_of(words: tuple[Token, ...], c: int, text: str, mixed: bool) -> Span | None:
    """ "University of X", "U of X": the university's (hospital's) name."""
    uni = words[c - 1]
    if uni.lower not in UNIVERSITY or c + 1 >= len(words):
        return None
    nxt = words[c + 1]
    if "\n" in text[uni.end : nxt.start] or not capital(nxt, mixed):
        return None
    if nxt.lower not in lx.us_states() and nxt.lower not in lx.us_cities():
        return None
    return Span(uni.start, nxt.end, HOSPITAL, 0.75, "locations")


def city_before_state(words: tuple[Token, ...], h: int, text: str, mixed: bool) -> Span | None:
    """ "Middle River, MD", "Frostburg Maryland": a listed city right before a state; also
    "U Maryland" (a state university's hospital)."""
    state = words[h]
    uni = words[h - 1]
    if _state_university(uni, state, text, mixed):
        return Span(uni.start, state.end, HOSPITAL, 0.7, "locations")
    if text[uni.end : state.start] == " " and len(state.lower) <= 2:
        return None  # "X MD" without a comma: a doctor, not a state
    if not capital(state, mixed):
        return None
    for size in (3, 2, 1):
        if h - size >= 0 and _city_phrase(words[h - size : h], text, mixed):
            parts = words[h - size : h]
            return Span(parts[0].start, parts[-1].end, CITY, 0.75, "locations")
    return None


def _state_university(uni: Token, state: Token, text: str, mixed: bool) -> bool:
    """ "U Maryland", "Univ Vermont": a state university."""
    return (
        uni.lower in {"u", "uof", "univ", "university"}
        and text[uni.end : state.start] == " "
        and len(state.lower) > 2
        and capital(state, mixed)
    )


def _city_phrase(parts: tuple[Token, ...], text: str, mixed: bool) -> bool:
    """The words, one space apart and written as a name, are a listed city (a common word
    alone is not: "Mobile" needs more than a state after it)."""
    if not spaced(text, parts):
        return False
    if mixed and not all(p.is_title or p.is_upper for p in parts):
        return False
    phrase = " ".join(p.lower for p in parts)
    return phrase in lx.us_cities() and (len(parts) > 1 or lx.zipf(phrase) < 4.5)


def compass_state(words: tuple[Token, ...], h: int, text: str, mixed: bool) -> Span | None:
    """ "western Maryland", "NORTHERN VIRGINIA": a part of a state is a region, smaller than
    a state (states alone are kept under Safe Harbor)."""
    if h < 1:
        return None
    compass = words[h - 1]
    if compass.lower not in COMPASS or text[compass.end : words[h].start] != " ":
        return None
    state = words[h]
    if len(state.lower) <= 2:
        return None  # "west MD": a doctor or an abbreviation
    if f"{compass.lower} {state.lower}" in lx.us_states():
        return None  # "West Virginia", "North Dakota": a state itself
    if not capital(state, mixed):
        return None
    return Span(compass.start, state.end, OTHER, 0.6, "locations")


def region(words: tuple[Token, ...], h: int, text: str, mixed: bool) -> Span | None:
    """ "the Eastern Shore", "the west coast": a region named by a compass word."""
    if h < 2 or words[h - 2].lower != "the":
        return None
    compass = words[h - 1]
    if compass.lower not in COMPASS or text[compass.end : words[h].start] != " ":
        return None
    if not capital(compass, mixed):
        return None
    return Span(compass.start, words[h].end, OTHER, 0.6, "locations")


# A word of 5+ letters glued to a one- or two-digit number ("Xyzward3"): re2 finds the few
# candidates in a note in a microsecond or two; the rules judge them.
GLUED_NUMBER: Final = compile_words(r"\b[A-Za-z]{4,}[A-WYZa-wyz]\d{1,2}\b")


def wards_with_numbers(doc: Doc, mixed: bool) -> list[Span]:
    """ "XYZWARD3 DEVELOPED CHEST PAIN": a ward glued to its floor needs no cue before it
    (but "CABGX2", "stoolsx2" are counts: a glued "x" means times)."""
    out: list[Span] = []
    text = doc.text
    for match in finditer(doc, GLUED_NUMBER):
        start, end = match.span()
        while end > start and text[end - 1].isdigit():
            end -= 1
        word = text[start:end]
        span = named(ward_glued_to_digit(Token(start, end, word, word.lower()), text, mixed), WARD)
        if span is not None:
            out.append(span)
    return out


_OFFER_VERBS: Final = frozenset({"has", "have", "had", "offered", "offers", "offering"})
_TITLES: Final = frozenset({"dr", "mr", "mrs", "ms", "miss"})
# words before "has a bed" that name no facility: the patient, pronouns, services
_NOT_BED_NAMES: Final = word_set("care_units") | word_set("facility_services")
_BED_NAME_WORDS: Final = 3  # words of a name before "has a bed"


def bed_offer(words: tuple[Token, ...], h: int, text: str, mixed: bool) -> Span | None:
    """ "Oakvale has a bed for him", "Maple Crest offered a bed": a facility named with no
    head noun before it offers a bed (word ``h``); the name written as a name (in a mixed-case
    note), a word of it rare or a listed city, no person (a title before, a relative, a first
    name alone) and no unit ("ICU has a bed")."""
    last = _before_offer(words, h, text)
    if last is None:
        return None
    first = _bed_name_start(words, last, text, mixed)
    run = words[first : last + 1]
    if not all(_bed_name_word(t, mixed) for t in run):
        return None
    if first > 0 and words[first - 1].lower in _TITLES:
        return None  # "Dr. Oakes has a bed": a person
    lows = [t.lower for t in run]
    if len(run) == 1 and lx.is_first_name(lows[0]):
        return None  # "Hilda has a bed": a person, as likely
    if not any(lx.zipf(w) < 3.0 or w in lx.us_cities() for w in lows):
        return None
    return Span(run[0].start, run[-1].end, HOSPITAL, 0.6, "locations")


def _before_offer(words: tuple[Token, ...], h: int, text: str) -> int | None:
    """The last word before "has a bed", "has offered a bed" (``h``: "bed"), one space before
    the verb; None where no offer verb and article stand before the bed."""
    if h < 3 or words[h - 1].lower not in {"a", "the"} or words[h - 2].lower not in _OFFER_VERBS:
        return None
    last = h - 3
    if words[last].lower in _OFFER_VERBS and last > 0:
        last -= 1  # "Oakvale has offered a bed"
    return last if text[words[last].end : words[last + 1].start] == " " else None


def _bed_name_start(words: tuple[Token, ...], last: int, text: str, mixed: bool) -> int:
    """The first word of the name that ends at ``last`` (up to ``_BED_NAME_WORDS`` words)."""
    first = last
    while first > 0 and last - first + 1 < _BED_NAME_WORDS:
        prev = words[first - 1]
        if not spaced(text, words[first - 1 : first + 1]) or not _bed_name_word(prev, mixed):
            break
        first -= 1
    return first


def _bed_name_word(tok: Token, mixed: bool) -> bool:
    """A word that may name a facility before "has a bed": written as a name, no unit, no
    service, no person's word."""
    low = tok.lower
    if not (capital(tok, mixed) and tok.text[0].isalpha()):
        return False
    return not (low in UNITS or low in _NOT_BED_NAMES or low in _OFFER_VERBS or people(low))
