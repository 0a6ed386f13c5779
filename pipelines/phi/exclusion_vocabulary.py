"""The words of the false-alarm vetoes (``pipelines.phi.exclusions``), loaded once: the
vocabulary files ``exclusion_*.txt`` and the lists they are filtered by (census names,
places), as sets and compiled phrase patterns."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.wordlists import phrases, role_map, word_list, word_set

_PEOPLES: Final = ("exclusion_nationalities", "exclusion_languages")
_DEVICES: Final = ("exclusion_devices", "exclusion_nutrition")  # and feeds: "Glucerna"


@dataclass(frozen=True, slots=True)
class Vocabulary:
    name_words: frozenset[str]  # a name span of these words only is no name
    place_words: frozenset[str]  # a place span of these words only is no place
    heads: frozenset[str]  # device and procedure heads ("X catheter", "X procedure")
    procedures: frozenset[str]  # procedure eponyms ("s/p Whipple")
    facility_heads: frozenset[str]
    verbs: frozenset[str]  # planning words before a facility head ("start rehab")
    peoples: frozenset[str]  # every word of the nationality and language lists, unfiltered
    language_cues: frozenset[str]  # "speaking", "interpreter"
    cues: frozenset[str]  # titles and role words before a name
    credentials: frozenset[str]  # credentials after a name ("X RN")
    phrase: re.Pattern[str]  # the multi-word device names
    phrase_words: frozenset[str]  # their words: a span holds one, or it is in none
    formula: re.Pattern[str]  # a word of two or more element symbols
    formula_any_case: re.Pattern[str]  # the same in any case ("nahco3")
    specialty: re.Pattern[str]  # "Family Practice", "Internal Medicine"
    # each last word of a specialty, lower case, with the first words of its phrases: a
    # match holds both
    specialty_words: tuple[tuple[str, tuple[str, ...]], ...]
    service_nouns: frozenset[str]  # "MH team", "BH clinic"


@cache
def vocabulary() -> Vocabulary:
    # a multi-word name is a phrase; of a nationality or language its last word counts alone
    # ("Cape Verdean": "verdean"), of a device none ("Passy Muir")
    devices = _device_names()
    peoples = [" ".join(p).lower() for n in _PEOPLES for p in phrases(n)]
    lasts = {p.rsplit(" ", 1)[-1] for p in peoples}
    single = {d for d in devices if " " not in d} | lasts | word_set("exclusion_drug_suffixes")
    places = lx.us_cities() | lx.countries() | lx.us_states().keys()
    multi = [p.split() for p in devices + peoples if " " in p]
    elements = "|".join(sorted(word_list("chemical_elements"), key=len, reverse=True))
    specialties = phrases("exclusion_specialties")
    return Vocabulary(
        name_words=frozenset(w for w in single if not lx.is_name(w)),
        place_words=frozenset(
            single | care_units() | body_parts() | residence_kinds() | word_set("care_units")
        )
        - places,
        heads=word_set("exclusion_device_heads") | word_set("exclusion_procedure_heads"),
        procedures=word_set("exclusion_procedure_eponyms"),
        facility_heads=word_set("facility_heads_generic"),
        verbs=word_set("exclusion_verbs"),
        peoples=frozenset(w for p in peoples for w in p.split()),
        language_cues=word_set("exclusion_language_cues"),
        cues=frozenset(role_map("name_titles").keys() | role_map("name_role_before").keys()),
        credentials=word_set("name_credentials"),
        phrase_words=frozenset(w for words in multi for w in words),
        phrase=_phrase_pattern(multi),
        formula=re.compile(rf"(?:(?:{elements})\d*){{2,}}"),
        formula_any_case=re.compile(rf"(?:(?:{elements})\d*){{2,}}", re.IGNORECASE),
        specialty=_phrase_pattern(list(map(list, specialties))),
        specialty_words=_first_by_last(specialties),
        service_nouns=word_set("exclusion_service_nouns"),
    )


def _device_names() -> list[str]:
    """Devices and nutrition products, lower case, a phrase's words joined by one space."""
    return [" ".join(p).lower() for name in _DEVICES for p in phrases(name)]


def _first_by_last(
    phrases: Iterable[tuple[str, ...]],
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each last word of ``phrases`` (lower case) with the first words of its phrases."""
    firsts: dict[str, set[str]] = {}
    for words in phrases:
        firsts.setdefault(words[-1].lower(), set()).add(words[0].lower())
    return tuple((last, tuple(sorted(f))) for last, f in sorted(firsts.items()))


def _phrase_pattern(multi: list[list[str]]) -> re.Pattern[str]:
    """Any of the phrases, a hyphen or spaces (or nothing) between their words."""
    joined = "|".join(r"[\s-]*".join(map(re.escape, words)) for words in multi)
    return re.compile(rf"(?<![A-Za-z])(?:{joined})(?![A-Za-z])", re.IGNORECASE)


@cache
def residence_kinds() -> frozenset[str]:
    """Kinds of residence of three letters or more and clinic services of four: a place
    span of them alone names no place ("lives in ALF", "from SNF", "at DEXA center");
    shorter ones may shorten a town's or a hospital's name."""
    homes = (w for w in word_set("residence_acronyms") if len(w) >= 3)
    services = (w for w in word_set("clinic_service_initialisms") if len(w) >= 4)
    return frozenset((*homes, *services))


# Services that name a hospital alone ("Children's"), kept out of ``services``.
_NAMING_SERVICES: Final = frozenset({"children's", "women's", "veterans", "va", "shriners"})


@cache
def services() -> frozenset[str]:
    """Services and specialties: a place span of these only is a department or a kind of
    care ("Physical Therapy", "Senior"), never a facility's name."""
    extra = {"therapy", "therapies", "practice", "management", "medicine"}
    return (word_set("facility_services") | extra) - _NAMING_SERVICES


@cache
def body_parts() -> frozenset[str]:
    return word_set("exclusion_body")


@cache
def care_units() -> frozenset[str]:
    """The care unit acronyms and their slips: two neighbouring letters swapped ("SCIU")."""
    units = word_set("exclusion_units")
    return units | {u[:i] + u[i + 1] + u[i] + u[i + 2 :] for u in units for i in range(len(u) - 1)}
