"""A hospital named by a place's name and a facility modifier, with no head noun: "transferred
from Oakdale Regional today", "came from Xyz General last night", "seen at Xyz Community
yesterday" (issue 26). The pass starts at the modifier (``facility_modifiers_alone``) and reads
back to a place cue ("to", "from", "at") past one or two name words; the clause must end after
the modifier, so that a modifier that describes a noun ("regional anesthesia", "General
surgery", "community acquired") names nothing."""

from __future__ import annotations

from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers.location_words import (
    CLAUSE_WORDS,
    HOSPITAL,
    NOT_NAMES,
    Note,
    ends_clause,
)
from pipelines.phi.wordlists import word_set
from pipelines.spans import Span

MODIFIERS: Final = word_set("facility_modifiers_alone")
# The place prepositions before the name.
_CUES: Final = frozenset({"to", "from", "at"})
# Time words that may end the clause after the name, besides ``facility_clause_words``
_TIMES: Final = frozenset({"last", "overnight", "earlier", "tonight", "recently"})


def modifier_alone(note: Note, h: int) -> Span | None:
    """ "from Oakdale Regional today": the name words before the modifier at ``h``, a place
    cue before them, the end of the clause after the modifier."""
    words, text, mixed = note.words, note.text, note.mixed
    mod = words[h]
    if mod.lower not in MODIFIERS or not _cased(mod, mixed) or not _clause_after(words, h, text):
        return None
    first = h
    while first > 0 and h - first < 2 and _name_word(words[first - 1], mixed):
        if text[words[first - 1].end : words[first].start] != " ":
            break
        first -= 1
    if first == h or not _cued(words, first, text):
        return None
    if not any(_rare(w, mixed) for w in words[first:h]):
        return None
    return Span(words[first].start, mod.end, HOSPITAL, 0.7, "locations")


def _cased(tok: Token, mixed: bool) -> bool:
    """Written as a name: Title case or capitals in a mixed-case note."""
    return not mixed or tok.is_title or tok.is_upper


def _name_word(tok: Token, mixed: bool) -> bool:
    """A word of a place's name: written as one, no unit, modifier, head, state or country."""
    low = tok.lower
    return (
        _cased(tok, mixed)
        and tok.text.isalpha()
        and len(low) > 2
        and low not in NOT_NAMES
        and low not in word_set("facility_modifiers")
        and low not in lx.us_states()
        and low not in lx.countries()
        and lx.zipf(low) < 4.5
    )


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
    """The clause ends after the modifier: a clause mark, or a word that may follow a place
    ("for", "today", "last night")."""
    if ends_clause(text, words[h]):
        return True
    if h + 1 >= len(words) or text[words[h].end : words[h + 1].start] != " ":
        return False
    nxt = words[h + 1].lower
    return nxt in CLAUSE_WORDS or nxt in _TIMES
