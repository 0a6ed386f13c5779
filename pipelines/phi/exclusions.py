"""Vetoes of false alarms: name and place spans that are devices, drugs, units or body parts.

Issue 26 ("False alarms"): device, procedure and drug brands and eponyms read as names or
places ("Passy-Muir valve", "Greenfield filter", "Toprol XL"), chemical formulas
("NaHCO3"), intensive care units and their typing slips ("TSICU", "SCIU"), planning words
before a facility head ("start rehab"), body parts read as places ("LLE", "Left Groin"),
misspelt common words ("to the flor") and nationality and language words; and (session 15)
a season before a year ("Spring 1998"), a hallway in a one-case note ("IN HALL"), a
specialty ("Family Practice") and a two-letter service before its noun ("MH team"). One pass over the
united spans of the rules and the tagger (``Detector.finish``), so both are vetoed alike.

The words come from the vocabulary files ``exclusion_*.txt`` (package lists of
nationalities and languages, written lists of devices, units, body parts) and the drug
dictionary of ``lexicons.drug_words``. A single word that is a census name never vetoes a
name span, and one that is a place never vetoes a place span, so no list here makes a
person or a city called like a device a miss; such an eponym is caught only before a device
head ("Penrose drain") or inside a device phrase ("Passy Muir"). A span after a title or a
role word ("Dr. Foley", "wife Ambien") is never vetoed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.exclusion_vocabulary import (
    Vocabulary,
    body_parts,
    care_units,
    residence_kinds,
    services,
    vocabulary,
)
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category, Span

_NAMES: Final = frozenset(c for c in Category if c.group == "NAME")
_PLACES: Final = frozenset(
    {Category.LOCATION_CITY, Category.LOCATION_HOSPITAL, Category.LOCATION_OTHER}
)
_WORD: Final = re.compile(r"[A-Za-z]+")
_BEFORE: Final = re.compile(r"([A-Za-z]+'?s?)[\s.,:]*$")  # the word before a span
_AFTER: Final = re.compile(r"(?:['’]s)?[\s-]+([A-Za-z]+)")  # the word after a span
# What stands before a surgical eponym written alone: "s/p Whipple", "underwent Nissen"
_PROCEDURE_CUE: Final = re.compile(r"(?i)\b(?:s/p|status[ -]post|underwent)\b")
_SIDES: Final = frozenset({"left", "right", "lt", "rt", "l", "r", "bilateral", "bilat"})
_AIDS: Final = frozenset({"walker", "walkers", "rollator", "cane", "crutches", "wheelchair"})
_AID_BEFORE: Final = frozenset({"rolling", "wheeled", "fww", "rw", "using", "uses", "with", "w"})
_WINDOW: Final = 40  # characters either side of a span searched for a device phrase
_SEASONS: Final = frozenset({"spring", "summer", "fall", "autumn", "winter"})
# a year after a season: "Spring 1998", "WINTER 99", "Fall '01", "spring of 2005" (not an
# age, a dose or a time: "Winter 99 yo", "99%", "10:30")
_YEAR_AFTER: Final = re.compile(
    r"[ \t,]*(?:of[ \t]+)?(?:(?:19|20)\d\d|['’]?\d\d)(?![\d:/%]|\.\d|[ \t]*(?:y\b|yo\b|yr|year|y/o))",
    re.IGNORECASE,
)
_HALLS: Final = frozenset({"hall", "halls", "hallway", "hallways", "corridor", "corridors"})
_HALL_BEFORE: Final = frozenset({"in", "into", "to", "down", "the", "from", "at", "through"})
# the word after a two-letter acronym: "MH team", "BH follow-up", "MH f/u"
_NOUN_AFTER: Final = re.compile(r"[ \t]+([A-Za-z]+(?:[-/][A-Za-z]+)?)")
# what a specialty's span may run on to: "Family Practice on Monday", "Internal Medicine clinic"
_RUN_ON: Final = frozenset({"on", "at", "in", "for", "with", "to", "today", "tomorrow"})


def veto(text: str, spans: Iterable[Span]) -> list[Span]:
    """``spans`` less the name and place spans that are no PHI (see the module)."""
    return [
        s
        for s in spans
        if not (s.category in _NAMES or s.category in _PLACES) or not (vetoed(text, s))
    ]


def vetoed(text: str, span: Span) -> bool:
    words = [w.lower() for w in _WORD.findall(text, span.start, span.end)]
    if not words:
        return False
    vocab = vocabulary()
    if _language(words, text, span, vocab) or _on_body(words, text, span):
        return True  # "Interpreter: Creole", "Left Temple": even after a role word
    if _walking_aid(words, text, span) or _no_one_here(words, text, span, vocab):
        return True
    if _name_context(text, span):
        return False  # a title or role word before keeps the span
    return _false_alarm(words, text, span, vocab)


def _false_alarm(words: list[str], text: str, span: Span, vocab: Vocabulary) -> bool:
    """The vetoes a title or a role word before the span overrides."""
    if _clinical(words, text, span, vocab) or _misread(words, text, span):
        return True
    if _role(words, text, span) or _facility_named(words, text, span):
        return True
    if span.category in _NAMES:
        return all(_name_word(w, vocab) for w in words)
    return _no_place(words, text, span, vocab)


def _no_one_here(words: list[str], text: str, span: Span, vocab: Vocabulary) -> bool:
    """Even after a role word: a hallway ("DAUGHTER [IN HALL]"), a facility head alone in a
    one-case note ("IN CLINIC"), a specialty ("PCP: Family Practice") or a two-letter service
    ("per MH team")."""
    if words[-1] in _HALLS and _hallway(words, text, span, _HALLS):
        return True
    heads = vocab.facility_heads
    if words[-1] in heads and span.category in _PLACES and _hallway(words, text, span, heads):
        return True  # "SEEN 4/19 IN CLINIC": a kind of place, no facility's name
    if span.category in _PLACES and _specialty(text, span, vocab):
        return True
    return _acronym_service(text, span, vocab)


def _misread(words: list[str], text: str, span: Span) -> bool:
    """Session 15's false alarms of names and places alike: a season before a year ("Spring
    1998"), a care unit or ward service ("to cvicu", "from CMED")."""
    if _season(words, text, span) or _as_a_job(words, text, span):
        return True
    return len(words) == 1 and words[0] in care_units() and not lx.is_name(words[0])


_A: Final = ("a ", "an ", "a\t", "an\t")
_AS_A: Final = re.compile(r"(?i)\bas[ \t]+an?[ \t]+$")
_CLAUSE_GOES_ON: Final = re.compile(r"[ \t]*(?:[A-Za-z]|-)")
_CLAUSE_AFTER: Final = re.compile(r"[ \t]+(?i:for|at|in|with|and|since|until|on|by)\b")


def _as_a_job(words: list[str], text: str, span: Span) -> bool:
    """One common English word after "as a" that ends its clause: a job ("works as a
    driver", "worked as a Cook for 20 years"), no town nor name ("as a Boston cop" goes on)."""
    if len(words) != 1 or not text[max(0, span.start - 4) : span.start].lower().endswith(_A):
        return False  # most spans: no article before, no regex nor word frequency asked
    if not _AS_A.search(text, max(0, span.start - 8), span.start) or lx.zipf(words[0]) < 3.0:
        return False
    goes_on = _CLAUSE_GOES_ON.match(text, span.end)
    return goes_on is None or _CLAUSE_AFTER.match(text, span.end) is not None


@cache
def _roles() -> tuple[frozenset[str], frozenset[str]]:
    """Staff roles, trades and services (``exclusion_roles``): for names, and for places
    less the words that are places too."""
    roles = word_set("exclusion_roles")
    return roles, roles - lx.us_cities() - lx.countries()


def _role(words: list[str], text: str, span: Span) -> bool:
    """A span of role, trade or service words only ("Home Health [Aide]", "UNIT [CLERK]",
    "retired [Marine]"), with no title or role word before (asked first); a place span of
    such words that are places too, unless a place's preposition comes before ("RETIRED
    [MARINE]", "ex-[marine]"; not "lives in Marine")."""
    names, places = _roles()
    if span.category in _NAMES:
        return all(w in names for w in words)
    if all(w in places for w in words):
        return True
    if not all(w in names for w in words):
        return False
    before = _BEFORE.search(text, max(0, span.start - 20), span.start)
    return before is None or before.group(1).lower() not in _PLACE_BEFORE


_PLACE_BEFORE: Final = frozenset({"in", "from", "to", "at", "near", "of", "outside", "around"})


@cache
def _facility_words() -> frozenset[str]:
    return word_set("facility_modifiers_alone") | word_set("facility_heads_named")


_WORD_AFTER: Final = re.compile(r"[ \t]+([A-Za-z]+)")
_AFTER_NAME: Final = frozenset({"regional", "memorial"})


def _facility_named(words: list[str], text: str, span: Span) -> bool:
    """A name span that is a facility's first word ("[Chad] Regional", "[Chad Regional]",
    "[Jordan] Memorial"): a place's modifier or named head ends it, or "Regional" or
    "Memorial" follows it, in capitals (no title or role word before, asked first: "Dr.
    Chad" stays)."""
    if span.category not in _NAMES or not text[span.start : span.start + 1].isupper():
        return False
    facility = _facility_words()
    if len(words) > 1 and words[-1] in facility:
        return True
    after = _WORD_AFTER.match(text, span.end)  # not "General" ("Jones General Surgery")
    return (
        after is not None and after.group(1).lower() in _AFTER_NAME and after.group(1)[0].isupper()
    )


def _hallway(words: list[str], text: str, span: Span, nouns: frozenset[str]) -> bool:
    """ "IN HALL", "in hallway": a hallway (of ``nouns``) after a preposition (before the
    span or as its first words: the tagger's "[IN HALL]") in a one-case span, no one's name
    nor a town; so a facility head alone ("SEEN 4/19 IN CLINIC", "TO HOSPITAL")."""
    written = text[span.start : span.end]
    if not (written.isupper() or written.islower()):
        return False
    k = 0
    while k < len(words) and words[k] in _HALL_BEFORE:
        k += 1
    if k == len(words) or not all(w in nouns for w in words[k:]):
        return False
    before = _BEFORE.search(text, max(0, span.start - 12), span.start)
    return k > 0 or (before is not None and before.group(1).lower() in _HALL_BEFORE)


def _season(words: list[str], text: str, span: Span) -> bool:
    """A season before a year ("since Spring 1998", "SURGERY WINTER 99"): a time, no place
    and no one's name; the span may hold an acronym before it ("MI Spring of 2005")."""
    if words[-1] not in _SEASONS or _YEAR_AFTER.match(text, span.end) is None:
        return False
    before = _WORD.findall(text, span.start, span.end)[:-1]
    return all(w.lower() in _SEASONS or (w.isupper() and len(w) <= 3) for w in before)


def _acronym_service(text: str, span: Span, vocab: Vocabulary) -> bool:
    """ "MH team", "BH clinic", "MH follow-up": a two-letter acronym before a service's noun
    is a service (mental, behavioural health), not a hospital ("transferred from MH")."""
    written = text[span.start : span.end]
    if span.category not in _PLACES or len(written) != 2 or not written.isalpha():
        return False
    if not (written.isupper() or written.islower()):
        return False
    after = _NOUN_AFTER.match(text, span.end)
    return after is not None and after.group(1).lower() in vocab.service_nouns


def _clinical(words: list[str], text: str, span: Span, vocab: Vocabulary) -> bool:
    """A chemical formula, a device phrase, a device or procedure head after the span or
    inside it, or a procedure done."""
    if _formula(text, span, vocab) or (
        not vocab.phrase_words.isdisjoint(words) and _in_device_phrase(text, span, vocab)
    ):
        return True
    if _head_after(text, span.end, vocab.heads):
        return True
    if words[-1] not in vocab.facility_heads and any(w in vocab.heads for w in words[1:]):
        return True  # "Jackson-Pratt drain"; not "Bay Port General Hospital": a facility's name
    return _procedure_done(words, text, span, vocab)


def _procedure_done(words: list[str], text: str, span: Span, vocab: Vocabulary) -> bool:
    """A procedure done ("s/p Whipple", "underwent Nissen")."""
    start = span.start
    if text[start - 2 : start + 1].lower() == "s/p":  # "S/P HELLER" read as "P HELLER"
        start, words = start + 1, words[1:]
    return (
        bool(words)
        and all(w in vocab.procedures for w in words)
        and _after_procedure_cue(text, start, vocab)
    )


def _language(words: list[str], text: str, span: Span, vocab: Vocabulary) -> bool:
    """A nationality or a language next to a language cue ("Creole speaking", "Interpreter:
    Creole")."""
    return all(w in vocab.peoples for w in words) and _spoken(text, span, vocab)


def _on_body(words: list[str], text: str, span: Span) -> bool:
    """A site on the body after a side ("Left Temple", "R Flank"): the side written before
    the span or as its first word, and every other word a body part."""
    sided = words[0] in _SIDES
    parts = words[1:] if sided else words
    if not parts or not all(w in body_parts() for w in parts):
        return False  # most spans: no body part, no regex asked
    if sided:
        return True
    before = _BEFORE.search(text, max(0, span.start - 12), span.start)
    return before is not None and before.group(1).lower() in _SIDES


def _walking_aid(words: list[str], text: str, span: Span) -> bool:
    """ "AMBULATED WITH ROLLING WALKER", "using cane": a walking aid in a word of one case
    after a word that comes before one (a surname written so after "with" is lost: in a
    one-case note the aid is the likelier)."""
    written = text[span.start : span.end]
    if len(words) != 1 or words[0] not in _AIDS or not (written.isupper() or written.islower()):
        return False
    before = _BEFORE.search(text, max(0, span.start - 12), span.start)
    return before is not None and before.group(1).lower() in _AID_BEFORE


def _after_cue(text: str, start: int) -> bool:
    before = _BEFORE.search(text, max(0, start - 20), start)
    return before is not None and before.group(1).lower() in vocabulary().cues


def _name_context(text: str, span: Span) -> bool:
    """A title or role word before the span, or (for a name) a credential after it."""
    if _after_cue(text, span.start):
        return True
    return span.category in _NAMES and _before_credential(text, span.end)


def _before_credential(text: str, end: int) -> bool:
    """ "Foley RN", "Ambien, PA": a credential after a name makes it a provider's."""
    after = _CREDENTIAL_AFTER.match(text, end)
    return after is not None and after.group(1).lower() in vocabulary().credentials


_CREDENTIAL_AFTER: Final = re.compile(r"[ \t]*,?[ \t]*([A-Za-z][A-Za-z-]*)")


def _formula(text: str, span: Span, vocab: Vocabulary) -> bool:
    """The span lies in a chemical formula ("NaHCO3", "MgSO4"): its whole word is element
    symbols with counts, two capitals at least and a digit or a small letter."""
    word = _alnum_run(text, span)
    if not word.isalpha() and any(map(str.isdigit, word)):  # "NaHCO3", "nahco3", "MgSO4"
        return vocab.formula_any_case.fullmatch(word) is not None
    if word.isupper() or word[1:].islower():
        return False  # "SMITH", "Smith": no small letter, or one capital at most
    return (  # "KCl", "NaCl": no digit, so two capitals and a small letter
        sum(map(str.isupper, word)) >= 2
        and any(map(str.islower, word))
        and vocab.formula.fullmatch(word) is not None
    )


def _alnum_run(text: str, span: Span) -> str:
    """The run of letters and digits the span lies in ("NaHCO3" around "Na")."""
    start, end = span.start, span.end
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    while end < len(text) and text[end].isalnum():
        end += 1
    return text[start:end]


def _after_procedure_cue(text: str, start: int, vocab: Vocabulary) -> bool:
    """ "s/p Whipple", "s/p Whipple, Nissen": a procedure cue before the span on its line,
    with only other procedure eponyms (and "and") between."""
    line = text.rfind("\n", 0, start) + 1
    cues = list(_PROCEDURE_CUE.finditer(text, max(line, start - _WINDOW), start))
    if not cues:
        return False
    between = _WORD.findall(text, cues[-1].end(), start)
    return all(w.lower() in vocab.procedures or w.lower() == "and" for w in between)


def _in_device_phrase(text: str, span: Span, vocab: Vocabulary) -> bool:
    low = max(0, span.start - _WINDOW)
    for found in vocab.phrase.finditer(text, low, min(len(text), span.end + _WINDOW)):
        if found.start() <= span.start and span.end <= found.end():
            return True
    return False


def _head_after(text: str, end: int, heads: frozenset[str]) -> bool:
    after = _AFTER.match(text, end)
    return after is not None and after.group(1).lower() in heads


def _spoken(text: str, span: Span, vocab: Vocabulary) -> bool:
    """A language cue next to the span: "Creole speaking", "speaks Creole"."""
    before = _BEFORE.search(text, max(0, span.start - 20), span.start)
    return _head_after(text, span.end, vocab.language_cues) or (
        before is not None and before.group(1).lower() in vocab.language_cues
    )


def _name_word(word: str, vocab: Vocabulary) -> bool:
    return word in vocab.name_words or (bool(lx.drug_words().get(word)) and not lx.is_name(word))


def _no_place(words: list[str], text: str, span: Span, vocab: Vocabulary) -> bool:
    """A place span of excluded words only, a planning word before facility heads ("start
    rehab"), a service ("to Physical Therapy"), or one misspelt common word written in lower
    case ("to the flor")."""
    rest = [w for w in words if w not in vocab.facility_heads]
    if len(rest) < len(words) or _head_after(text, span.end, vocab.facility_heads):
        return _before_head(words, rest, vocab)
    if all(w in vocab.place_words or _place_drug(w) for w in words):
        return True
    if all(w in services() for w in words):
        return True  # "to Physical Therapy", "to Senior": a service, no place
    written = text[span.start : span.end]
    if len(words) == 1 and (written.isupper() or written.islower()):
        # "at CHURCH", "in HOUSE": a kind of place in a word of one case; "to the flor"
        return words[0] in word_set("exclusion_generic_places") or (
            written.islower() and _misspelt(words[0])
        )
    return False


def _specialty(text: str, span: Span, vocab: Vocabulary) -> bool:
    """A place span inside specialties' phrases ("Family Medicine", "FAMILY PRACTICE.
    INTERNAL MEDICINE"), or run on past them only by facility heads, function words and
    weekdays ("[Practice on Monday]" of "Family Practice on Monday")."""
    low, high = max(0, span.start - _WINDOW), min(len(text), span.end + _WINDOW)
    window = text[low:high]
    if window.isascii() and not _may_hold(window.lower(), vocab.specialty_words):
        return False  # most spans: no specialty's first and last words near, no regex run
    found = [
        m.span()
        for m in vocab.specialty.finditer(text, low, high)
        if m.start() < span.end and span.start < m.end()
    ]
    if not found or _named_before(text, found[0][0]):
        return False
    outside = (
        w.group().lower()
        for w in _WORD.finditer(text, span.start, span.end)
        if not any(a <= w.start() and w.end() <= b for a, b in found)
    )
    return all(_runs_on(w, vocab) for w in outside)


def _may_hold(lowered: str, words: tuple[tuple[str, tuple[str, ...]], ...]) -> bool:
    """Does ``lowered`` (ASCII) hold a last word and one of its first words?"""
    return any(last in lowered and any(f in lowered for f in firsts) for last, firsts in words)


_WORD_BEFORE: Final = re.compile(r"([A-Za-z]+) $")


def _named_before(text: str, start: int) -> bool:
    """A rare capitalised word right before a specialty makes it a practice's name
    ("Oakdale Family Practice", "QUONSET FAMILY MEDICINE"); a common one does not ("Consulted
    Internal Medicine", "BY FAMILY PRACTICE")."""
    before = _WORD_BEFORE.search(text, max(0, start - 30), start)
    return (
        before is not None
        and before.group(1)[0].isupper()
        and lx.zipf(before.group(1).lower()) < 4.0
    )


def _runs_on(word: str, vocab: Vocabulary) -> bool:
    return word in _RUN_ON or word in vocab.facility_heads or word in word_set("tagger_weekdays")


def _before_head(words: list[str], rest: list[str], vocab: Vocabulary) -> bool:
    """The words of a span with a facility head in or after it, ``rest`` those that are no
    head: "start rehab" (a planning word), "DEXA center" (a service's initialism), "Senior
    Center" (a service), "in SNF" (a kind of residence that is a head too)."""
    if not rest:
        return len(words) == 1 and words[0] in residence_kinds()
    return all(w in vocab.verbs or w in residence_kinds() or w in services() for w in rest)


def _place_drug(word: str) -> bool:
    return bool(lx.drug_words().get(word)) and word not in lx.us_cities()


def _misspelt(word: str) -> bool:
    return (
        lx.zipf(word) < 3.0
        and word not in lx.us_cities()
        and word not in lx.countries()
        and lx.near_english(word)
    )
