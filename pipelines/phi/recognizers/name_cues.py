"""Cue tables of the name recognizer: titles, credentials, role words, verbs of talking,
eponym heads and services — the words that make the next or previous word a name (and tell
its role). The lists live in ``pipelines/phi/data/vocabulary/name_*.txt``; ``cues()`` reads
them on first use and derives the rest (typing slips, possessives, the cue set). Which passes
a word starts is declared with the passes (``names.name_passes``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.wordlists import role_map, word_set
from pipelines.spans import Category

P, R, PT, OTHER = (
    Category.NAME_PROVIDER,
    Category.NAME_RELATIVE,
    Category.NAME_PATIENT,
    Category.NAME_OTHER,
)

_RARE: Final = 2.6  # Zipf: an unknown word this rare after a strong cue is taken as a name


@dataclass(frozen=True, slots=True)
class Cues:
    """Every word table of the name recognizer, read once."""

    titles: Mapping[str, Category]  # the next word is a name ("Dr.", "Mrs.")
    title_slips: Mapping[str, Category]  # long titles with one typing slip ("doctr")
    credentials: frozenset[str]  # written after a name ("Jane Doe, RN")
    role_before: Mapping[str, Category]  # before a name ("daughter Jane", "per Smith")
    role_slips: Mapping[str, Category]  # kinship words with one typing slip ("daugher")
    role_possessive: Mapping[str, Category]  # "daughter's name is Ann"
    verb_then_name: Mapping[str, Category]  # "spoke with X", "seen by X"
    role_after: Mapping[str, Category]  # "Smith aware", "J. Smith notified"
    people_labels: Mapping[str, Category]  # "Visitors: hal", "NOK: greta" (with the colon)
    eponym_heads: frozenset[str]  # "X catheter", "X's disease"
    skippable: frozenset[str]  # between a role word and the name ("son is Jim")
    services: frozenset[str]  # "per Neuro", "Renal consulted": services, not people
    cue_words: frozenset[str]  # cues themselves are never the name
    clinical_letters: frozenset[str]  # one-letter shorthand, not initials ("r", "l", "c")
    joiners: frozenset[str]  # inside a list of names ("Drs. Smith and Jones")
    presence_after: frozenset[str]  # "Visitors: drew stayed": a person was there
    particles: frozenset[str]  # inside a surname ("van der Berg", "de la Cruz")


def _slips(role_before: Mapping[str, Category]) -> dict[str, Category]:
    """Kinship words written with one slip ("daugher", "husabnd"); a form that is an English
    word ("bother") is checked away where it is used (``_role_slip``). Shorter words and
    hyphenated ones slip into other words, so only words of seven letters or more count."""
    return {
        slip: R
        for word, cat in role_before.items()
        if cat is R and len(word) >= 7 and "-" not in word
        for slip in lx.slips(word)
    }


def _title_slips(titles: Mapping[str, Category]) -> dict[str, Category]:
    """Titles written with one slip ("doctr", "dcotor", "mistr"), as kinship words are: a form
    that is an English word ("miser") is checked away where it is used. Only titles of six
    letters or more: "dr", "mrs", "ms" slip into other words (and are mostly abbreviated)."""
    return {
        slip: cat
        for word, cat in titles.items()
        if len(word) >= 6 and word.isalpha()
        for slip in lx.slips(word)
        if slip not in titles
    }


@cache
def cues() -> Cues:
    """The cue tables, read from the data files on first use."""
    titles = role_map("name_titles")
    credentials = word_set("name_credentials")
    role_before = role_map("name_role_before")
    role_after = role_map("name_role_after")
    verb_then_name = role_map("name_verbs_then_name")
    services = word_set("name_services")
    slips = _slips(role_before)
    possessive = {
        f"{word}{mark}": R for word, cat in role_before.items() if cat is R for mark in ("'s", "’s")
    }
    return Cues(
        titles=titles,
        title_slips=_title_slips(titles),
        credentials=credentials,
        role_before=role_before,
        role_slips=slips,
        role_possessive=possessive,
        verb_then_name=verb_then_name,
        role_after=role_after,
        people_labels=role_map("name_people_labels"),
        eponym_heads=word_set("name_eponym_heads"),
        skippable=word_set("name_skippable"),
        services=services,
        cue_words=frozenset(
            {*titles, *credentials, *role_before, *role_after, *verb_then_name, *services}
        ),
        clinical_letters=word_set("name_clinical_letters"),
        joiners=word_set("name_joiners"),
        presence_after=word_set("name_presence_after"),
        particles=word_set("name_particles"),
    )
