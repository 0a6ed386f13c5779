"""Facility names made of common words, told by the facility gazetteer, for ``locations``.

"seen at Community General", "transferred from Union Hospital", "records from Family
Clinic": no word of such a name names (no surname, no city, no rare word), so the facility
passes, which want one, leave it. A name written in capitals or Title case in a mixed-case
note, right after a place cue ("at", "from", "to" ...: ``hospital_acronym_cues``), that is a
whole entry of the facility gazetteer (MITRE MIST's ``hospitals.txt``), or such an entry
without its last word "Hospital" after "General" or "Memorial" ("Mercy General"), is a
facility. A name of services and heads only ("Urgent Care", "Medical Clinic", "VA Medical
Center") describes a kind of place and is left.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Final

from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers.location_words import positions_in
from pipelines.phi.tagger.gazetteers import facility_names
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category, Span

GAZETTEER: Final = "locations.gazetteer"
_MAX_WORDS: Final = 5
_SHORTENED: Final = frozenset({"general", "memorial"})


@cache
def _names() -> frozenset[tuple[str, ...]]:
    """The gazetteer's names of two words or more, lower-cased, and the shortened ones."""
    full = {tuple(n.lower().split()) for n in facility_names()}
    short = {n[:-1] for n in full if len(n) >= 3 and n[-1] == "hospital" and n[-2] in _SHORTENED}
    return frozenset(n for n in full | short if 2 <= len(n) <= _MAX_WORDS)


@cache
def last_words() -> frozenset[str]:
    """The words a gazetteer name ends with: where the look-up starts."""
    return frozenset(n[-1] for n in _names())


@cache
def _generic() -> frozenset[str]:
    """Words of a kind of place: services, heads, and their joining words."""
    return (
        word_set("facility_services")
        | word_set("facility_heads_generic")
        | word_set("clinic_service_initialisms")
        | {"of", "and", "the", "services", "service"}
    )


def gazetteer_names(
    words: tuple[Token, ...], lowers: tuple[str, ...], text: str, mixed: bool
) -> list[Span]:
    """The facilities of common words in a mixed-case note (see the module)."""
    if not mixed:
        return []
    ends = positions_in(last_words(), lowers)
    return [span for end in ends if (span := _name_ending(words, lowers, text, end)) is not None]


def _name_ending(
    words: tuple[Token, ...], lowers: tuple[str, ...], text: str, end: int
) -> Span | None:
    """The longest gazetteer name ending at word ``end`` after a place cue, or None."""
    names, cues = _names(), word_set("hospital_acronym_cues")
    for first in range(max(1, end - _MAX_WORDS + 1), end):
        part = words[first : end + 1]
        if lowers[first : end + 1] not in names or not _written_as_name(part, text):
            continue
        if lowers[first - 1] not in cues or text[words[first - 1].end : part[0].start] != " ":
            continue
        if all(low in _generic() for low in lowers[first : end + 1]):
            return None  # "at Urgent Care": a kind of place
        return Span(part[0].start, part[-1].end, Category.LOCATION_HOSPITAL, 0.7, GAZETTEER)
    return None


def _written_as_name(part: Iterable[Token], text: str) -> bool:
    """Every word capitalised ("Community General", "UNION HOSPITAL"), one space apart."""
    toks = list(part)
    if not all(t.is_title or t.is_upper for t in toks if t.lower not in {"of", "and", "the"}):
        return False
    return all(text[a.end : b.start] == " " for a, b in zip(toks, toks[1:], strict=False))
