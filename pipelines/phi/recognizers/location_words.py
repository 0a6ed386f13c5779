"""The words the location passes read (``locations``): vocabulary files under
``pipelines/phi/data/vocabulary/`` and a few small closed sets, plus the word tests several
passes share. Nothing here loads a lexicon at import (``lx`` loads on first use)."""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import cache
from itertools import compress
from operator import attrgetter
from typing import Final, cast

from pipelines import compiled
from pipelines.phi import lexicons as lx
from pipelines.phi.lexicons import Token
from pipelines.phi.passes import Case
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category, Span

lower_of = attrgetter("lower")

HOSPITAL, CITY, OTHER = (
    Category.LOCATION_HOSPITAL,
    Category.LOCATION_CITY,
    Category.LOCATION_OTHER,
)

# Facility heads that close a name and are not part of the PHI ("Ashcott [Hospital]").
GENERIC_HEADS: Final = word_set("facility_heads_generic")
# Strong heads: a hospital for sure, so any non-function word before them is its name.
STRONG_HEADS: Final = word_set("facility_heads_strong")
# Words between a name and its head ("X [Medical] Center", "X [Nursing] Home").
HEAD_FILLERS: Final = word_set("facility_head_fillers")
# Heads that are part of the facility's name ("X Memorial", "X Health", "X House NH").
NAMED_HEADS: Final = word_set("facility_heads_named")
HEADS: Final = GENERIC_HEADS | NAMED_HEADS
# Movement / residence cues before a place ("transferred to X", "lives in X").
MOVE_VERBS: Final = word_set("place_move_verbs")
# Verbs of going back or commuting: a city may follow, but so may a ventilator mode
# ("returned to SIMV"), so only listed cities count after them.
RETURN_VERBS: Final = word_set("place_return_verbs")
RESIDENCE_VERBS: Final = word_set("place_residence_words")
# Travel verbs: a city after them may be a common word ("flying in from Rome").
TRAVEL_VERBS: Final = word_set("place_travel_verbs")
TRAVEL_OR_RETURN: Final = TRAVEL_VERBS | RETURN_VERBS
MOVE_OR_RETURN: Final = MOVE_VERBS | RETURN_VERBS
# Who comes from a place ("daughter from X", "he is from X").
PEOPLE: Final = word_set("place_people")
# Care units and departments: where a patient goes inside a hospital, not a facility name.
# Written by hand: generic hospital vocabulary that no package lists.
UNITS: Final = word_set("care_units")
# Adjectives that describe rather than name a hospital ("outside hospital").
GENERIC_MODIFIERS: Final = word_set("facility_generic_modifiers")
# Words that are no facility name after a cue: units, describing adjectives, heads, fillers.
NOT_NAMES: Final = UNITS | GENERIC_MODIFIERS | GENERIC_HEADS | HEAD_FILLERS
FUNCTION_ZIPF: Final = 5.6  # function words ("to", "from", "the", "at") are more frequent
SERVICES: Final = "facility_services"
# Staff of a place: "XYZ nurse", "XYZ attorneys" make the acronym before them a hospital.
STAFF: Final = word_set("place_staff")
# Acronyms of people and tests, never places; and clinical services, whose staff are people
# too ("pulm team", "nsg staff").
NOT_PLACES: Final = word_set("acronyms_not_places")
# Place prepositions and verbs a place follows ("to X", "leave X").
CUES: Final = frozenset({"to", "from", "at", "in", "of", "on", "leave", "near"})
# Emergency-department words after a hospital's acronym ("XYZ ER", "XYZ EW").
EMERGENCY: Final = frozenset({"er", "ew", "ed", "tcu"})
# Words after a compass word that name a region ("the Eastern Shore").
REGION_WORDS: Final = frozenset({"shore", "coast", "side", "end"})
COMPASS: Final = frozenset(
    {"eastern", "western", "northern", "southern", "east", "west", "north", "south"}
)
BEING: Final = frozenset({"is", "am", "i'm", "are", "was", "were"})
SAINTS: Final = frozenset({"st", "saint", "mt", "mount"})
UNIVERSITY: Final = frozenset({"university", "univ", "u"})
# Verbs of taking a sample: "sent from X" names a line or a site, not a place.
SAMPLED: Final = frozenset({"sent", "drawn", "obtained", "taken", "cultured"})
# Words after an acronym that make it a hospital ("XYZ ER", "XYZ cath lab", "XYZ TCU").
UNIT_AFTER: Final = word_set("facility_unit_after")
# Words after a number that make it a dose or a setting, not a floor ("lasix 20 iv").
DOSE_AFTER: Final = word_set("dose_after")
# Words that may follow a facility named after a movement cue ("sent to XYZ for cath").
CLAUSE_WORDS: Final = word_set("facility_clause_words")
# Words after a city that name a neighbouring place ("Frostburg Heights", "Severna Park").
# Written by hand: the generic words of US place names (USGS feature classes).
PLACE_SUFFIXES: Final = word_set("place_suffixes")
# What may follow a word that ends a clause ("at XYZ.", "to XYZ)").
CLAUSE_MARKS: Final = frozenset({",", ".", ";", ")", "\n", ""})

# Kinship words with one typing slip ("daugher from X"), English words left out at use.
_PEOPLE_SLIPS: Final = frozenset(
    slip for word in PEOPLE if len(word) >= 6 for slip in lx.slips(word)
)


@cache
def stops() -> frozenset[str]:
    """Words that end a facility name read backwards from its head: care units, articles and
    describing adjectives ("the", "outside"), less the words facility names are made of."""
    kept = word_set("facility_prefixes") | word_set("facility_modifiers")
    return (UNITS | GENERIC_MODIFIERS | word_set("facility_stop_function_words")) - kept


def people(low: str) -> bool:
    """A word for a person or a relative, also with one typing slip ("daugher")."""
    return low in PEOPLE or (low in _PEOPLE_SLIPS and lx.zipf(low) < 2.0)


def travelled(words: tuple[Token, ...], c: int) -> bool:
    """A travel or return verb among the six words before the cue at ``c``. Asked only where a
    city or a country follows (most cues end earlier, so it is not worked out up front)."""
    return not TRAVEL_OR_RETURN.isdisjoint(map(lower_of, words[max(0, c - 6) : c]))


def capital(tok: Token, mixed: bool) -> bool:
    """Written as a name where case tells: capitalised or in capitals in a mixed-case note."""
    return not mixed or tok.is_title or tok.is_upper


def next_char(text: str, tok: Token) -> str:
    """The first character after ``tok`` past at most one space ("" at the end)."""
    return text[tok.end : tok.end + 2].lstrip(" ")[:1]


def ends_clause(text: str, tok: Token) -> bool:
    """ "at XYZ.", "at XYZ" at the end: a clause mark (or nothing) right after the word."""
    return next_char(text, tok) in CLAUSE_MARKS


def positions_in(
    words: AbstractSet[str], column: tuple[str, ...], among: list[int] | None = None
) -> list[int]:
    """Indices, ascending, of the items of ``column`` (a note's lower-case words) that
    ``words`` holds, of the indices ``among`` (ascending) when given: where the passes start,
    where a gazetteer name may end. The compiled helper "words" loops in C (no call per word:
    bench/README.md "Session 23"); this code is its reference."""
    fast = compiled.helper("words")
    if fast is not None and isinstance(words, (set, frozenset)):
        return cast("list[int]", fast.positions_in(words, column, among))
    if among is None:
        return list(compress(range(len(column)), map(words.__contains__, column)))
    return list(compress(among, map(words.__contains__, map(column.__getitem__, among))))


def spaced(text: str, parts: tuple[Token, ...]) -> bool:
    """The words are separated by one space each."""
    return all(text[a.end : b.start] == " " for a, b in zip(parts, parts[1:], strict=False))


@dataclass(frozen=True, slots=True)
class Note:
    """What the location passes read of a note: its words, its text and its case (and the
    words' lower-case forms as a plain tuple: a rule that reads the words before a cue slices
    it, without touching each word's token)."""

    words: tuple[Token, ...]
    text: str
    case: Case
    mixed: bool  # ``case is Case.MIXED``, asked by most rules
    lowers: tuple[str, ...] = ()  # ``Tokens.lowers``; filled from ``words`` when not given

    def __post_init__(self) -> None:
        if len(self.lowers) != len(self.words):
            object.__setattr__(self, "lowers", tuple(map(lower_of, self.words)))


def named(span: Span | None, source: str) -> Span | None:
    """``span`` with ``source`` naming what made it."""
    if span is None or span.source == source:
        return span
    return Span(span.start, span.end, span.category, span.confidence, source)


# Kin words that are religious titles as well ("Mother Frances Hospital", "Sister Kenny
# Institute"): a facility's name word before another name word, never right before the head.
RELIGIOUS_KIN: Final = frozenset({"mother", "father", "sister", "brother"})


@cache
def kin_words() -> frozenset[str]:
    """Kin words, no word of a place's name ("Son Hospice worker called": no facility "Son"),
    less the religious titles (``RELIGIOUS_KIN``)."""
    return word_set("tagger_cues_kin") - RELIGIOUS_KIN
