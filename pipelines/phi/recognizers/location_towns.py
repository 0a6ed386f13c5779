"""Towns told by their shape after a place cue (``locations.after_cue``): a town named with one
of the words US place names most often open with ("New Bramford", "East Hollis", "Fort
Quill"), and a town written as a two- or three-letter abbreviation after a residence cue
("lives in WB", "daughter from NB"), as notes shorten the towns near a hospital.

The opening words are not listed by hand: they are the words that open at least
``_PREFIX_CITIES`` multi-word city names of the zip-code database (compass words, "new",
"fort", "lake", "port"...)."""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers.location_words import (
    CITY,
    CLAUSE_WORDS,
    NOT_PLACES,
    UNITS,
    capital,
    ends_clause,
)
from pipelines.phi.wordlists import word_set
from pipelines.spans import Span

_AND: Final = frozenset({"and", "or", "&"})

_PREFIX_CITIES: Final = 60  # a word opening this many US city names opens a town's name
_RARE_TOWN_WORD: Final = 3.0  # the word after the opener: rarer than this, or a listed city
_CITY_TOWN_WORD: Final = 3.5
_RARE_ABBREVIATION: Final = 3.6  # a one-case note's abbreviation: rarer than this ("nb")
_COMMON_CAPITALS: Final = 4.5  # capitals this common are a word ("AM", "US"), no town


@cache
def town_openers() -> frozenset[str]:
    """Words of three letters or more that open many multi-word US city names ("new", "west",
    "fort", "lake"): computed from the zip-code database."""
    counts = Counter(city.split(" ", 1)[0] for city in lx.us_cities() if " " in city)
    return frozenset(w for w, n in counts.items() if n >= _PREFIX_CITIES and len(w) >= 3)


def prefixed_town(words: tuple[Token, ...], j: int, text: str, mixed: bool) -> int | None:
    """ "New Bramford", "EAST HOLLIS": the index of the town word after an opener at ``j``, or
    None. The town word is written as a name, rare or a listed city, no state, no care unit
    and no clinical word ("new onset", "new LBBB" name no town)."""
    if j + 1 >= len(words) or words[j].lower not in town_openers():
        return None
    opener, tok = words[j], words[j + 1]
    if text[opener.end : tok.start] != " " or not (capital(opener, mixed) and capital(tok, mixed)):
        return None
    if f"{opener.lower} {tok.lower}" in lx.us_states():
        return None  # "North Carolina": a state
    return j + 1 if _town_word(tok.lower) else None


def _town_word(low: str) -> bool:
    """A word that may name a town after an opener: a word of four letters or more with a
    vowel, rare or a listed city, no care unit and no clinical word."""
    if len(low) < 4 or not low.isalpha() or not any(v in low for v in "aeiouy"):
        return False
    if low in UNITS or lx.clinical_word(low):
        return False
    f = lx.zipf(low)
    return f < _RARE_TOWN_WORD or (low in lx.us_cities() and f < _CITY_TOWN_WORD)


@cache
def _not_towns() -> frozenset[str]:
    """Short words after a residence cue that are no town: care units, people's and services'
    acronyms, kinds of residence ("ALF", "SNF"), clinical initialisms."""
    return (
        UNITS
        | NOT_PLACES
        | word_set("residence_acronyms")
        | word_set("clinic_service_initialisms")
        | word_set("clinical_acronyms")
    )


def town_abbreviation(
    words: tuple[Token, ...], j: int, text: str, mixed: bool, kin_from: bool = False
) -> bool:
    """ "lives in WB", "LIVES IN NB WITH WIFE", "daughter from NB is here": two or three
    letters after a residence cue, in capitals in a mixed-case note (a rare word in a one-case
    note), ending the clause or followed by a clause word (after a relative's "from", any
    word); no state (Safe Harbor keeps states), no residence kind, no care unit or clinical
    initialism."""
    tok = words[j]
    if not _abbreviation_word(tok, mixed):
        return False
    if kin_from or ends_clause(text, tok):
        return True
    nxt = words[j + 1] if j + 1 < len(words) else None
    return nxt is not None and nxt.lower in CLAUSE_WORDS and text[tok.end : nxt.start] == " "


@cache
def nicknames() -> frozenset[str]:
    """Short forms of large cities ("LA", "KC", "philly"): towns after a residence cue."""
    return word_set("city_nicknames")


def _abbreviation_word(tok: Token, mixed: bool) -> bool:
    """Two or three letters that may shorten a town's name ("WB"; "DC" is the District), or
    a large city's short form ("LA", "Philly"; in a mixed-case note as a name)."""
    low = tok.lower
    if low in nicknames():
        return not mixed or tok.is_upper or tok.is_title
    if not (2 <= len(low) <= 3 and low.isalpha()) or low in _not_towns():
        return False
    if mixed and not tok.is_upper:
        return False
    if low == "dc":
        return True
    if low in lx.us_states():
        return False
    # in capitals in a mixed-case note an abbreviation, unless a common word ("AM", "US")
    return lx.zipf(low) < (_COMMON_CAPITALS if mixed else _RARE_ABBREVIATION)


def town_after_and(words: tuple[Token, ...], k: int, text: str, mixed: bool) -> Span | None:
    """The second of two towns written short after a cue: "family in LA and SF", "lives in
    WB or NB" (the first, word ``k``, was found as one); the second ends the clause too."""
    if k + 2 >= len(words) or words[k + 1].lower not in _AND:
        return None
    tok = words[k + 2]
    if text[words[k].end : tok.start] != f" {words[k + 1].text} ":
        return None
    if not towns_alike(words[k], tok, mixed) or not town_abbreviation(words, k + 2, text, mixed):
        return None
    return Span(tok.start, tok.end, CITY, 0.65, "locations")


def towns_alike(first: Token, second: Token, mixed: bool) -> bool:
    """Two words written alike: both in capitals in a mixed-case note, or both short forms."""
    short = len(first.lower) <= 3 and len(second.lower) <= 3
    return short and (not mixed or first.is_upper == second.is_upper)
