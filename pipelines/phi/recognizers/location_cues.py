"""The places after a cue word ("to", "from", "at", "in", "of", "on", "leave", "near"), for the
cue passes of ``locations``: a city after a movement, residence or travel verb ("lives in
Frostburg"), a facility or an acronym after a movement ("sent to XYZ ER"), a ward glued to its
floor ("to Xyzward3"), a lower-case city of a mixed-case note ("returned to new haven").

``after_cue`` is judged once per stretch of text of its declared window (six words before the
cue: the travel verbs; five after it: an article, a city of three words and the word after
it); what it reads past a word (a floor number, a clause mark) comes before the fifth word's
end. ``tests/phi/test_location_windows.py`` checks it keeps to that window."""

from __future__ import annotations

from functools import cache
from typing import Final, NamedTuple

from pipelines.phi import lexicons as lx
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers import location_shapes as shape
from pipelines.phi.recognizers import location_towns as towns
from pipelines.phi.recognizers import location_wards as wards
from pipelines.phi.recognizers.location_words import (
    BEING,
    CITY,
    EMERGENCY,
    GENERIC_HEADS,
    HEADS,
    MOVE_OR_RETURN,
    MOVE_VERBS,
    NAMED_HEADS,
    OTHER,
    PLACE_SUFFIXES,
    RESIDENCE_VERBS,
    SAINTS,
    SAMPLED,
    UNITS,
    Note,
    capital,
    lower_of,
    people,
    travelled,
)
from pipelines.phi.wordlists import word_set
from pipelines.spans import Span

_KIN: Final = word_set("place_kin")
_TITLES: Final = frozenset({"dr", "mr", "mrs", "ms", "prof"})
LOWER_CITY_CUES: Final = frozenset({"to", "from", "in"})
WARD_CUES: Final = frozenset({"to", "from", "on", "at"})
_FLOOR_CUES: Final = WARD_CUES


def after_cue(note: Note, c: int) -> Span | None:
    """A place right after "to/from/at/in/of" when a movement verb or place shape says so:
    a ward glued to its floor ("to Xyzward3"), a lower-case city in a mixed-case note
    ("returned to new haven"), or what the words around the cue tell (``cue_context``)."""
    words, lowers = note.words, note.lowers
    j = c + 1
    if j >= len(words):
        return None
    if lowers[j] == "the":
        j += 1  # the place word, past an article (none when "the" ends the note)
    k = j if j < len(words) else c + 1  # the word read: "the" when it ends the note
    low = lowers[k]
    # every rule below wants a capitalised word in a mixed-case note, and a rare word, a city
    # or a country in a one-case note; none wants a care unit
    if low in UNITS:
        return None
    nxt, text, mixed = words[k], note.text, note.mixed
    if lowers[c] in WARD_CUES and text[nxt.end : nxt.end + 1].isdigit():
        glued = wards.ward_glued_to_digit(nxt, text, mixed)  # "to Xyzward3", "on xyzward4"
        if glued is not None:
            return glued
    if mixed and not nxt.text[0].isupper():
        # "returned to new haven": a lower-case city of two or more words, after a verb (a
        # common word is none: the small set of common words answers most words here)
        if low in _common_words() or low not in lx.city_first_words():
            return None
        return lower_city(words, c, text)
    if not mixed and low in _common_words():
        return None  # a common word of a one-case note: no city, no country
    return cue_context(words, c, j, text, mixed, lowers)


@cache
def _common_words() -> frozenset[str]:
    """The words of a one-case note too common to name a place after a cue (Zipf >= 5.0, no
    city's first word, no country, no nickname such as "la"), worked out once: some 900
    words, a set small enough to stay in the caches where the look-ups it replaces (the
    common list, the cities' first words) went to cold memory for most cues
    (bench/README.md, "Session 23")."""
    places = lx.city_first_words() | lx.countries() | towns.nicknames()
    return lx.common_words(5.0) - places


class _Cue(NamedTuple):
    """A cue at ``c`` and the place word ``j`` after it (past an article), with what the
    words before the cue say: a movement verb (``moved``), a residence word (``resident``)."""

    words: tuple[Token, ...]
    text: str
    mixed: bool
    c: int
    j: int
    low: str  # the lower-case form of the word ``j``
    cue: str
    prev: str
    before: tuple[str, ...]  # the lower-case forms of the three words before the cue
    moved: bool
    resident: bool


_new_cue = tuple.__new__  # ``_Cue(...)`` without the Python-level ``__new__``


def cue_context(
    words: tuple[Token, ...], c: int, j: int, text: str, mixed: bool, lowers: tuple[str, ...]
) -> Span | None:
    """The rules behind a cue that read the words around it: the movement verbs before it,
    the city, facility or acronym after it (``j``: the word after the cue, past an article;
    ``lowers``: the words' lower-case forms)."""
    cue = lowers[c]
    before = lowers[max(0, c - 3) : c]
    resident = not RESIDENCE_VERBS.isdisjoint(before)
    if j >= len(words) or (cue == "of" and not resident and not _of_person(words, c, mixed)):
        return None
    gap = _cue_gap(words, c, j, text)
    if gap is None:
        return None
    if cue in {"to", "from"} and gap.strip().isdigit() and gap[:1] == gap[-1:] == " ":
        # "transferred to 209 Xward.": a room number, then the ward or building
        return wards.ward_after_room(words, j, text) if _moved(words, c, before) else None
    if gap.strip() not in {"", ":"}:
        return None
    moved = _moved(words, c, before)
    prev = lowers[c - 1] if c > 0 else ""
    low = lowers[j]
    ctx = _new_cue(_Cue, (words, text, mixed, c, j, low, cue, prev, before, moved, resident))
    # a city, or a town opened by a word many cities open with, starts with a city's first
    # word (``city_at``, ``towns.prefixed_town``): most words after a cue are none
    found = _city_after_cue(ctx) if low in lx.city_first_words() else None
    return found or _after_cue_rest(ctx)


def _moved(words: tuple[Token, ...], c: int, before: tuple[str, ...]) -> bool:
    """A movement verb among the three words before the cue at ``c`` (``before``), or the
    verb of a "from ... to" pair before it."""
    return not MOVE_VERBS.isdisjoint(before) or (words[c].lower == "to" and _moved_from(words, c))


def _moved_from(words: tuple[Token, ...], c: int) -> bool:
    """ "transferred from X Memorial Hospital to XYZ": the "to" of a "from ... to" pair whose
    "from" a movement verb opens, before an acronym; the pair's verb may stand six words back
    (the pass's window), past a facility's name of up to three words."""
    nxt = words[c + 1] if c + 1 < len(words) else None
    if nxt is None or not (nxt.is_upper and len(nxt.lower) <= 5):
        return False  # an acronym only: a named place has its head or its cue
    for f in range(c - 2, max(0, c - 5) - 1, -1):
        if words[f].lower == "from":
            return not MOVE_VERBS.isdisjoint(map(lower_of, words[max(0, c - 6, f - 2) : f]))
    return False


def _cue_gap(words: tuple[Token, ...], c: int, j: int, text: str) -> str | None:
    """What stands between the cue and the place word ``j`` (an article counts as a space);
    None across a line break."""
    gap = text[words[c].end : words[j].start]
    if j == c + 2:  # "from the XYZ": the article is no gap
        gap = gap.replace(words[c + 1].text, " ", 1)
    return None if "\n" in gap else gap


def _of_person(words: tuple[Token, ...], c: int, mixed: bool) -> bool:
    """ "Neil Smith of Elkbridge", "Dr. Okafor of KDH": a surname (or any word after a title)
    before "of" (a place may follow)."""
    if c > 1 and words[c - 2].lower in _TITLES and capital(words[c - 1], mixed):
        return True
    return c > 0 and _person_before(words[c - 1], mixed)


def _person_before(tok: Token, mixed: bool) -> bool:
    """ "Neil Smith of Elkbridge": the word before "of" looks like a surname."""
    if tok.is_title and (lx.name_score(tok.lower) > -9.0 or lx.zipf(tok.lower) < 2.5):
        return True
    return not mixed and lx.name_score(tok.lower) >= 1.5


def _city_after_cue(ctx: _Cue) -> Span | None:
    """A city from the zipcodes list (longest first, up to three words) where the cue and
    the words before it say a place follows."""
    words, j = ctx.words, ctx.j
    city_end = city_at(words, j, ctx.text, ctx.mixed)
    if city_end is None:
        return _prefixed_town(ctx)
    phrase = " ".join(w.lower for w in words[j : city_end + 1])
    single = city_end == j
    if not _city_cued(ctx, single, lx.zipf(phrase)):
        return None
    if phrase in lx.us_states() or (single and words[j].lower in UNITS):
        return None
    if single and _two_word_state(words, j):
        return None  # "North" of "North Carolina"
    if _facility_follows(words, city_end):
        return None
    last = city_end
    if _suffix_follows(ctx, last):
        last += 1  # "Frostburg Heights", "Glen Burnie Heights": a neighbouring place
    return Span(words[j].start, words[last].end, CITY, 0.75, "locations")


def _city_cued(ctx: _Cue, single: bool, f: float) -> bool:
    """Do the cue and the words before it make the city at ``ctx.j`` (of word frequency
    ``f``) a place: a residence word, a movement or a loose cue before a rare city, a relative
    from it, or a travel verb before it."""
    words, c = ctx.words, ctx.c
    kin = people(ctx.prev) or (c > 1 and people(words[c - 2].lower))
    rare = not single or f < 3.5
    return (
        ctx.resident
        or ((ctx.moved or _loose(ctx, kin, f)) and rare)
        or (kin and ctx.cue == "from" and f < 5.0)  # "daughter from Miami"
        or (f < 5.0 and travelled(words, c))  # asked last: it looks back six words
    )


def _loose(ctx: _Cue, kin: bool, f: float) -> bool:
    """A cue that needs no verb before a rare city: "of", or "in"/"from" after a relative
    or before a rare word."""
    if ctx.cue == "of":
        return True
    return ctx.cue in {"in", "from"} and (kin or f < (3.0 if ctx.mixed else 2.5))


def _prefixed_town(ctx: _Cue) -> Span | None:
    """ "lives in New Bramford", "seen in East Hollis": a town opened by a word many US towns
    open with, where the cue says a place follows (as for a rare city of two words)."""
    words, j = ctx.words, ctx.j
    last = towns.prefixed_town(words, j, ctx.text, ctx.mixed)
    if last is None or not _city_cued(ctx, False, 0.0) or _facility_follows(words, last):
        return None
    if _suffix_follows(ctx, last):
        last += 1
    return Span(words[j].start, words[last].end, CITY, 0.7, "locations")


def _suffix_follows(ctx: _Cue, last: int) -> bool:
    words = ctx.words
    if last + 1 >= len(words) or words[last + 1].lower not in PLACE_SUFFIXES:
        return False
    nxt = words[last + 1]
    return ctx.text[words[last].end : nxt.start] == " " and (not ctx.mixed or nxt.text[0].isupper())


def _after_cue_rest(ctx: _Cue) -> Span | None:
    """The rules behind a cue after the city look-up, for the word ``ctx.j`` after the cue."""
    if ctx.low in _state_openers() and _two_word_state(ctx.words, ctx.j):
        return None  # "from North Carolina": a state, kept under Safe Harbor
    found = _near_cue(ctx)
    if found is not None or ctx.cue == "on":
        return found  # "on X 2" is a floor; "received on SIMV" is a ventilator mode
    found = _named_after_cue(ctx)
    if found is not None:
        return found
    words, j, text, mixed, cue = ctx.words, ctx.j, ctx.text, ctx.mixed, ctx.cue
    if cue in {"in", "of"} and not ctx.resident:
        if cue == "of":  # "Dr. Dale Brinkman of KDH.": a person's hospital
            return shape.bare_acronym(words, j, text, mixed)
        return shape.area(words, j, mixed)
    if not ctx.moved or (cue == "from" and not SAMPLED.isdisjoint(ctx.before)):
        return None  # "blood sent from the A-line": a sample, not a patient, moves
    return (
        shape.facility_after_cue(words, j, text, mixed)
        or shape.title_run(words, j, text, mixed)
        or (shape.title_place(words, j, text) if mixed else None)
    )


def _two_word_state(words: tuple[Token, ...], j: int) -> bool:
    """ "North Carolina", "NEW MEXICO": the word ``j`` and the next name a state."""
    if j + 1 >= len(words) or words[j].lower not in _state_openers():
        return False
    return f"{words[j].lower} {words[j + 1].lower}" in lx.us_states()


@cache
def _state_openers() -> frozenset[str]:
    """The first words of the states' names of two words or more ("north", "new")."""
    return frozenset(name.split(" ", 1)[0] for name in lx.us_states() if " " in name)


def _near_cue(ctx: _Cue) -> Span | None:
    """A town after a facility ("Medical Center in Marlowvale"), the District ("lives in
    DC"), an acronym after a being-verb ("he is in XYZ,"), a country after a residence or
    travel cue, a building and its floor ("to X 2")."""
    words, j, text, mixed, cue = ctx.words, ctx.j, ctx.text, ctx.mixed, ctx.cue
    tok = words[j]
    if cue == "in" and ctx.prev in HEADS and _rare_name(tok, mixed):
        return Span(tok.start, tok.end, CITY, 0.6, "locations")
    kin_from = cue == "from" and people(ctx.prev)
    if _resident_cue(ctx) and towns.town_abbreviation(words, j, text, mixed, kin_from):
        return Span(tok.start, tok.end, CITY, 0.7, "locations")  # "lives in WB", "in DC"
    if cue in {"in", "at"} and ctx.prev in BEING:
        where = shape.bare_acronym(words, j, text, mixed, clause=True)
        if where is not None:
            return where
    # a country after a residence or travel cue ("lives in Italy"): not identifying alone
    if ctx.low in lx.countries() and (ctx.resident or travelled(words, ctx.c)):
        return Span(tok.start, tok.end, OTHER, 0.55, "locations")
    if cue in _FLOOR_CUES:
        return wards.building_floor(words, j, text, mixed, cued=True)
    return None


def _resident_cue(ctx: _Cue) -> bool:
    """A cue that a town follows: "lives in", "resides near", "daughter from", "son in"."""
    if ctx.cue == "in" and ctx.prev in _KIN:
        return True  # "son in KC", "family in LA and SF"
    if ctx.cue in {"in", "near"}:
        return ctx.resident
    return ctx.cue == "from" and (people(ctx.prev) or ctx.resident)


def _rare_name(tok: Token, mixed: bool) -> bool:
    """A rare word written as a name, no care unit and no clinical word."""
    return (
        capital(tok, mixed)
        and lx.zipf(tok.lower) < 3.0
        and tok.lower not in UNITS
        and not lx.clinical_word(tok.lower)
    )


def _named_after_cue(ctx: _Cue) -> Span | None:
    """A saint's name ("to St. Mary's"), an acronym ending a clause ("at XYZ,", "leave XYZ.",
    "a consult from the XYZ."), Title-case words after "at"/"from" ("at Holy Cross")."""
    words, j, text, mixed, cue = ctx.words, ctx.j, ctx.text, ctx.mixed, ctx.cue
    if cue in {"to", "from", "at"} and ctx.low in SAINTS:  # ``shape.saint``'s first test
        found = shape.saint(words, j, text, mixed)
        if found is not None:
            return found
    if cue in {"at", "leave"} or (cue == "from" and j == ctx.c + 2):
        found = shape.bare_acronym(words, j, text, mixed)
        if found is not None:
            return found
    if mixed and cue in {"at", "from"} and not ctx.moved:
        return shape.title_place(words, j, text)
    return None


def city_at(words: tuple[Token, ...], j: int, text: str, mixed: bool) -> int | None:
    """Index of the last word of a city name starting at word ``j``, or None."""
    tok = words[j]
    if mixed and not tok.is_title and not (tok.is_upper and _caps_city(words, j, text)):
        return None  # an all-caps word in a mixed-case note is an abbreviation ("RA", "TLC")
    if tok.lower not in lx.city_first_words():
        return None
    cities = lx.us_cities()
    best = None
    phrase = tok.lower
    if phrase in cities:
        best = j
    for k in range(j + 1, min(j + 3, len(words))):
        gap = text[words[k - 1].end : words[k].start]
        if gap != " ":
            break
        phrase = phrase + " " + words[k].lower
        if phrase in cities:
            best = k
    return best


def _caps_city(words: tuple[Token, ...], j: int, text: str) -> bool:
    """ "lives in COOKEVILLE", "from SILVER SPRINGS": a city in capitals in a mixed-case note,
    when long enough not to be an abbreviation (five letters, or two capitalised words)."""
    tok = words[j]
    if len(tok.lower) >= 5:
        return True
    nxt = words[j + 1] if j + 1 < len(words) else None
    return nxt is not None and nxt.is_upper and text[tok.end : nxt.start] == " "


def _facility_follows(words: tuple[Token, ...], k: int) -> bool:
    """A facility head or an emergency department after the words: a hospital, not a city."""
    if k + 1 >= len(words):
        return False
    nxt = words[k + 1].lower
    return nxt in GENERIC_HEADS or nxt in NAMED_HEADS or nxt in EMERGENCY


def lower_city(words: tuple[Token, ...], c: int, text: str) -> Span | None:
    """ "returned to new haven", "lives in frostburg": in a mixed-case note a lower-case city
    counts after a movement or residence verb when it has two or more words, or is one word
    English hardly uses (after "lives in" / "from" a relative)."""
    if words[c].lower not in LOWER_CITY_CUES:
        return None
    before = {w.lower for w in words[max(0, c - 3) : c]}
    resident = not before.isdisjoint(RESIDENCE_VERBS)
    kin = c > 0 and people(words[c - 1].lower)
    if before.isdisjoint(MOVE_OR_RETURN) and not resident and not kin:
        return None
    j = c + 1
    end = city_at(words, j, text, False)
    if end is None:
        return None
    if end == j and not _lone_city(words[j].lower, resident or (kin and words[c].lower == "from")):
        return None
    return Span(words[j].start, words[end].end, CITY, 0.65, "locations")


def _lone_city(low: str, cued: bool) -> bool:
    """A one-word lower-case city: after a residence word or a relative "from", and a word
    English hardly uses (no unit, no state, no clinical word)."""
    if not cued or lx.zipf(low) >= 3.0:
        return False
    return not (low in UNITS or low in lx.us_states() or lx.clinical_word(low))
