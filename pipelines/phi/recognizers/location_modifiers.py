"""A hospital named by a place's name and a facility modifier, with no head noun: "transferred
from Oakdale Regional today", "came from Xyz General last night", "seen at Xyz Community
yesterday" (issue 26). The pass starts at the modifier (``facility_modifiers_alone``) and reads
back to a place cue ("to", "from", "at") past one or two name words; the clause must end after
the modifier, so that a modifier that describes a noun ("regional anesthesia", "General
surgery", "community acquired") names nothing. And a town named by a rare word and a generic place
word after a place cue, in any case and with one typing slip in the generic word ("from
brenvale hieghts"): ``suffixed_town``."""

from __future__ import annotations

from functools import cache
from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers.location_words import (
    CITY,
    CLAUSE_WORDS,
    HOSPITAL,
    MOVE_OR_RETURN,
    NOT_NAMES,
    PEOPLE,
    PLACE_SUFFIXES,
    RESIDENCE_VERBS,
    Note,
    ends_clause,
    lower_of,
)
from pipelines.phi.wordlists import word_set
from pipelines.spans import Span

MODIFIERS: Final = word_set("facility_modifiers_alone")
# Modifiers that name a hospital without a head only after a verb of moving and a rare word
WEAK_MODIFIERS: Final = word_set("facility_modifiers_alone_weak")
_MOVE_VERBS: Final = MOVE_OR_RETURN
# The place prepositions before the name.
_CUES: Final = frozenset({"to", "from", "at"})
# Time words that may end the clause after the name, besides ``facility_clause_words``
_TIMES: Final = frozenset({"last", "overnight", "earlier", "tonight", "recently"})
_UNITS_AFTER: Final = word_set("facility_unit_after")


def modifier_alone(note: Note, h: int) -> Span | None:
    """ "from Oakdale Regional today": the name words before the modifier at ``h``, a place
    cue before them, the end of the clause after the modifier or after a second modifier
    ("from Xyz Regional Medical today"). A weak modifier ("Health", "Family", "County") only
    after a verb of moving and a rare word ("came from Xyz Family yesterday")."""
    words, mixed = note.words, note.mixed
    mod = words[h]
    weak = mod.lower in WEAK_MODIFIERS
    if not (weak or mod.lower in MODIFIERS) or not _cased(mod, mixed):
        return None
    last = _modifiers_end(note, h)
    first = _name_start(note, h) if last is not None else None
    if first is None or last is None:
        return None
    if weak and not _moved(note, first, h):
        return None
    return Span(words[first].start, words[last].end, HOSPITAL, 0.85, "locations")


def _name_start(note: Note, h: int) -> int | None:
    """The first of the one or two name words before the modifier at ``h``, with a place cue
    before them and a word that names among them."""
    words, text, mixed = note.words, note.text, note.mixed
    first = h
    while first > 0 and h - first < 2 and _name_word(words[first - 1], mixed, first == h):
        if text[words[first - 1].end : words[first].start] != " ":
            break
        first -= 1
    if first == h or not _cued(words, first, text):
        return None
    return first if any(_rare(w, mixed) for w in words[first:h]) else None


def trailing_modifier(note: Note, h: int, span: Span) -> Span:
    """A facility span ending at a named head that is also a modifier ("Xyz Memorial"), with
    a second modifier after it before the clause's end: "from Xyz Memorial Medical today"."""
    words = note.words
    if span.end != words[h].end or words[h].lower not in MODIFIERS:
        return span
    if _clause_after(words, h, note.text) or _modifiers_end(note, h) != h + 1:
        return span
    return Span(span.start, words[h + 1].end, span.category, span.confidence, span.source)


def _modifiers_end(note: Note, h: int) -> int | None:
    """The last modifier of the name whose first modifier is at ``h``: ``h`` when the clause
    ends after it, the next word when that is a second modifier written as a name and the
    clause ends after it ("Xyz Regional Medical today"), else None."""
    words, text = note.words, note.text
    if _clause_after(words, h, text):
        return h
    k = h + 1
    if (
        k < len(words)
        and text[words[h].end : words[k].start] == " "
        and words[k].lower in word_set("facility_modifiers")
        and _cased(words[k], note.mixed)
        and _clause_after(words, k, text)
    ):
        return k
    return None


def _moved(note: Note, first: int, h: int) -> bool:
    """A verb of moving right before the place cue of the name ``first`` .. ``h - 1``
    ("transferred from", "came to"), and a name word English hardly uses."""
    words = note.words
    c = first - 1
    if c >= 0 and words[c].lower == "the":
        c -= 1
    if _MOVE_VERBS.isdisjoint(map(lower_of, words[max(0, c - 2) : c])):
        return False
    return any(lx.zipf(w.lower) < 3.0 for w in words[first:h])


def _cased(tok: Token, mixed: bool) -> bool:
    """Written as a name: Title case or capitals in a mixed-case note."""
    return not mixed or tok.is_title or tok.is_upper


def _name_word(tok: Token, mixed: bool, next_to_modifier: bool = False) -> bool:
    """A word of a place's name: written as one, no unit, modifier, head or state; a country
    only right before the modifier ("from Jordan Regional", "FROM ANGUILLA REGIONAL")."""
    low = tok.lower
    if not (
        _cased(tok, mixed)
        and tok.text.isalpha()
        and len(low) > 2
        and low not in NOT_NAMES
        and low not in word_set("facility_modifiers")
        and low not in lx.us_states()
    ):
        return False
    if low in lx.countries():
        return next_to_modifier
    return lx.zipf(low) < 4.5


def _rare(tok: Token, mixed: bool) -> bool:
    """A name word that names: a rare word, a listed city or a census name (in a one-case
    note a rarer word or a surname English hardly uses)."""
    low = tok.lower
    f = lx.zipf(low)
    if low in lx.us_cities() or f < (3.5 if mixed else 3.0):
        return True
    return lx.name_score(low) >= (1.0 if mixed else 1.5)


def _cued(words: tuple[Token, ...], first: int, text: str) -> bool:
    """A place cue right before the name (past "the"), on the same line."""
    c = first - 1
    if c >= 0 and words[c].lower == "the":
        c -= 1
    if c < 0 or words[c].lower not in _CUES:
        return False
    return "\n" not in text[words[c].end : words[first].start]


def _clause_after(words: tuple[Token, ...], h: int, text: str) -> bool:
    """The clause ends after the modifier: a clause mark, a word that may follow a place
    ("for", "today", "last night") or a unit of the facility ("from Xyz Regional ED")."""
    if ends_clause(text, words[h]):
        return True
    if h + 1 >= len(words) or text[words[h].end : words[h + 1].start] != " ":
        return False
    nxt = words[h + 1].lower
    return nxt in CLAUSE_WORDS or nxt in _TIMES or nxt in _UNITS_AFTER


# The place cues before a town and its suffix ("lives in Xyz Heights", "from xyz hieghts").
TOWN_CUES: Final = frozenset({"in", "from", "near"})
_TOWN_VERBS: Final = RESIDENCE_VERBS | MOVE_OR_RETURN | PEOPLE


def suffixed_town(note: Note, c: int) -> Span | None:
    """ "from brenvale hieghts", "lives in Xyz Heights": after a place cue, a rare word and a
    generic word of US place names (``place_suffixes``), also with one typing slip, name a
    town in any case; the rare word alone is no city of the list, so the city rules miss it."""
    words, mixed = note.words, note.mixed
    if words[c].lower not in TOWN_CUES or c + 2 >= len(words):
        return None
    name, suffix = words[c + 1], words[c + 2]
    text = note.text
    if text[words[c].end : name.start] != " " or text[name.end : suffix.start] != " ":
        return None
    if not (_town_word(name, mixed) and _suffix(suffix.lower)):
        return None
    if words[c].lower != "from" and _TOWN_VERBS.isdisjoint(map(lower_of, words[max(0, c - 3) : c])):
        return None  # "pain in mcburney point": "in" needs a verb of living or moving
    if (
        mixed
        and not (name.is_title and suffix.is_title)
        and not (name.is_upper and suffix.is_upper)
    ):
        return None  # a mixed-case note writes a town's name as a name
    return Span(name.start, suffix.end, CITY, 0.7, "locations")


def _town_word(tok: Token, mixed: bool) -> bool:
    """A word English hardly uses that may name a town: letters only, no unit, no clinical
    word, no eponym's possessive."""
    low = tok.lower
    return (
        tok.text.isalpha()
        and len(low) > 3
        and lx.zipf(low) < 3.0
        and low not in NOT_NAMES
        and low not in lx.us_states()
        and not lx.clinical_word(low)
    )


def _suffix(low: str) -> bool:
    """A generic word of US place names ("Heights", "Springs"), or one typing slip of a long
    one that is no English word ("hieghts", "sprngs")."""
    if low in PLACE_SUFFIXES:
        return True
    if len(low) < 4 or lx.zipf(low) >= 3.0:
        return False
    return low in _suffix_slips() or not _LONG_SUFFIXES.isdisjoint(lx.slips(low))


_LONG_SUFFIXES: Final = frozenset(s for s in PLACE_SUFFIXES if len(s) >= 5)


@cache
def _suffix_slips() -> frozenset[str]:
    """The long place suffixes with a letter dropped or two neighbours swapped."""
    return frozenset(v for s in _LONG_SUFFIXES for v in lx.slips(s))
