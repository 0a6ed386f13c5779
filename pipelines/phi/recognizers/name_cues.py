"""Cue tables of the name recognizer: titles, credentials, role words, verbs of talking,
eponym heads and services — the words that make the next or previous word a name (and tell
its role), written as spaced word lists so they are easy to read and extend."""

from __future__ import annotations

from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.spans import Category

P, R, PT, OTHER = (
    Category.NAME_PROVIDER,
    Category.NAME_RELATIVE,
    Category.NAME_PATIENT,
    Category.NAME_OTHER,
)


def _words(spaced: str) -> list[str]:
    """A word list written as one spaced string (easier to read and extend)."""
    return spaced.split()


# Titles: the next word is a name whatever it looks like (unless it is a plain English word).
TITLES: Final = {
    "dr": P,
    "drs": P,
    "doctor": P,
    "dr's": P,
    "drs'": P,
    "mr": PT,
    "mrs": PT,
    "ms": PT,
    "miss": PT,
    "mister": PT,
}
# Credentials written after a name ("Jane Doe, RN").
CREDENTIALS: Final = frozenset(
    _words("rn md np pa rrt bsn msn lpn cna crna phd pharmd rph np-c aprn licsw msw lcsw")
)
# Role words before a name ("daughter Jane", "per Smith", "spoke with Jones").
ROLE_BEFORE: Final = {
    **dict.fromkeys(
        _words(
            "wife husband daughter daughters dtr dtrs son sons sister sisters sis brother brothers "
            "bro mother mom father dad friend friends niece nephew grandson granddaughter "
            "grandaughter granddtr grandchild grandmother grandfather aunt uncle cousin fiance "
            "fiancee boyfriend girlfriend partner companion proxy hcp neighbor neighbour "
            "son-in-law daughter-in-law sister-in-law brother-in-law stepson stepdaughter "
            "spouse children child relative"
        ),
        R,
    ),
    **dict.fromkeys(
        _words(
            "per attending resident fellow intern nurse np rn md pa rrt surgeon cardiologist "
            "covering paged notified oncall physician physicians neurologist pcp"
        ),
        P,
    ),
    **dict.fromkeys(
        _words(
            "contact contacts contacted caseworker chaplain rabbi priest pastor reverend rev "
            "meet reach reached "
            "caregiver sitter aide "
            "lawyer attorney guardian interpreter"
        ),
        OTHER,
    ),
}
# Kinship words written with one slip ("daugher", "husabnd"); a form that is an English word
# ("bother") is checked away where it is used (``_role_slip``).
ROLE_SLIPS: Final = {
    slip: R
    for word, cat in ROLE_BEFORE.items()
    if cat is R and len(word) >= 7 and "-" not in word  # shorter ones slip into words
    for slip in lx.slips(word)
}
# Possessive kinship words: "daughter's name is Ann", "wife's (Mary)".
ROLE_POSSESSIVE: Final = {
    f"{word}{mark}": R for word, cat in ROLE_BEFORE.items() if cat is R for mark in ("'s", "’s")
}
# "with" / "by" / "to" cue a name only after a verb of talking or seeing ("spoke with Jones").
VERB_THEN_NAME: Final = {
    **dict.fromkeys(
        _words(
            "spoke spoken speak speaking talked talk talking met meet discussed discussion conversation "
            "conversed updated update called call contacted contact visit visited accompanied "
            "work working consult consulting meet meeting explained explain reach reached"
        ),
        OTHER,
    ),
    **dict.fromkeys(_words("seen evaluated examined consulted followed"), P),
}
# Words after a name that make it a provider ("Smith aware", "J. Smith notified").
ROLE_AFTER: Final = {
    **dict.fromkeys(_words("aware notified paged informed consulted"), P),
}
# Device, disease and sign heads that make the word before them an eponym, not a person.
EPONYM_HEADS: Final = frozenset(
    _words(
        "catheter cath catheters disease diseases sign signs syndrome line lines test maneuver "
        "manuever reflex score scale criteria tube drain bag stocking stockings boots boot collar "
        "procedure operation repair ulcer lymphoma palsy fracture balloon pump valve shunt "
        "classification phenomenon respiration breathing position dressing mask tip "
        "needle dementia chorea aneurysm tumor tumour ring "
        # what is done to a device, not to a person: "X placed", "X d/c'd", "X site"
        "placed inserted removed pulled dc'd discontinued intact flushed draining clamped "
        "sutured site sites insertion insertions correlating waveform dampened"
    )
)
# Grammar words that may sit between a role word and the name ("son is Jim", "dtr named Ann").
_SKIPPABLE: Final = frozenset(_words("is was named name in law ho person"))
# Clinical services that are "seen by" / "per" like people ("per Neuro", "Renal consulted").
# Written by hand: the usual hospital service names, which no package lists.
SERVICES: Final = frozenset(
    _words(
        "neuro neurology nsurg neurosurg neurosurgery csurg cardiology cards renal nephrology "
        "pulm pulmonary gi surgery surg ortho ortho's id psych psychiatry team service heme "
        "onc oncology derm ent urology uro vascular ctsurg hepatology micu sicu ccu ns"
    )
)
# Words that are cues themselves are never the name ("updated by MD, Husband called").
_CUE_WORDS: Final = frozenset(
    {*TITLES, *CREDENTIALS, *ROLE_BEFORE, *ROLE_AFTER, *VERB_THEN_NAME, *SERVICES}
)
# Words that may start a rule wherever they stand.
_TRIGGERS: Final = frozenset(
    {
        *TITLES,
        *CREDENTIALS,
        *ROLE_BEFORE,
        *ROLE_AFTER,
        *ROLE_SLIPS,
        *ROLE_POSSESSIVE,
        "with",
        "w",
        "by",
        "to",
        "other",
        "r",
        "m",
        "is",
    }
)
# Single letters that are clinical shorthand, not initials: right, left, with (c-bar),
# without (s-bar), after (p-bar), times, every, discontinue, and the pronoun/article.
_CLINICAL_LETTERS: Final = frozenset(_words("a i o r l c s p x q w d e"))
# Joiners inside a list of names ("Drs. Smith and Jones", "sons Al, Bob and Carl").
_JOINERS: Final = frozenset({"and", "&", "or"})

_VERY_COMMON = 5.0  # Zipf: a word this frequent is a name only after a title, in Title case
_COMMON = 4.3  # Zipf: above this a lexicon name after a weak cue needs Title case
_RARE = 2.6  # Zipf: an unknown word this rare after a strong cue is taken as a name
