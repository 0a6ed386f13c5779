"""Ages over 89 (HIPAA: ages 90 and above are PHI; ages up to 89 are not).

Expression classes of the NLM Scrubber paper: number + age unit ("93 yo", "93 y/o",
"93-year-old", "93 years of age"), cue + number ("age 93", "aged 93", "age of 93"), number
words ("ninety-three year old", "ninety-third birthday", "one hundred years old"), ordinal
birthdays ("93rd birthday") and decades ("in her late 90s", "nineties"); and the age and sex
that open a line of a clinician's note ("93 M with CHF", "101F, resident of ..."). Decades need a
person context ("his", "her", "in the late 90s" without a vital before it), because
"sats mid 90's" and "BP 90s" are everywhere in nursing notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from pipelines.phi import clinical
from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.passes import declare
from pipelines.phi.patterns import Found, PatternPass, PatternPasses
from pipelines.phi.recognizers.name_words import name_before_age, person_after
from pipelines.phi.registry import register
from pipelines.phi.scan import (
    compile_words,
    finditer,
    grab,
    next_char,
    stand_in,
    words_after,
    words_before,
)
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category, Span

# Number words 90-119 (the tens and units are plain English; no library parses them here).
_UNITS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
    "seventh": 7, "eighth": 8, "ninth": 9, "something": 0, "odd": 0,
}  # fmt: skip
_UNIT_RE = "|".join(sorted(_UNITS, key=len, reverse=True))
# One re2 scan for every age form (one scan costs about what each of four separate ones did).
_AGE_WORDS = (
    r"(?i)(?P<num>\d{2,3})(?:st|nd|rd|th|\+)?[ \t]*-?[ \t]*"
    r"(?P<unit>y/o|y\.o\.?|yo\b|yrs?\.?\b(?:[ \t-]*old)?|years?\b(?:[ \t-]*old|\s+of\s+age)?"
    r"|year-old|birthday|bday)"
    r"|\b(?:age[ds]?|aged)\b\s*(?::|=|of|is|was)?\s*(?P<cued>\d{2,3})\b"
    r"|\b(?P<head>ninety|ninetieth|(?:one|a)\s+hundred(?:\s+and)?|hundredth)"
    r"(?:[\s\-]+(?P<wunits>" + _UNIT_RE + r"))?"
    r"\b[\s\-]*(?P<wunit>years?[\s\-]*old|year-old|yrs?\.?[\s\-]*old|y/?o\b|y\.o\.?"
    r"|years?\s+of\s+age|birthday|bday)?"
    r"|\b(?:(?P<owner>his|her|their|pt'?s|patient'?s|the)\s+)?(?P<rel>early|mid|late)?[\s\-]*"
    r"(?P<decade>nineties|9\d'?s|hundreds)\b"
)
# Where ``_AGE_WORDS`` matches, for the prefilter's sets (``scan.stand_in``): each alternative
# without its optional ends (a number's third digit, a unit's "old", the words after "ninety",
# the owner before a decade); "year-old" starts with "year" at a word's end.
_AGE_WORDS_PRESENCE = (
    r"(?i)\d\d(?:st|nd|rd|th|\+)?[ \t]*-?[ \t]*(?:y/o|y\.o|yo\b|yrs?\.?\b|years?\b|birthday|bday)"
    r"|\b(?:age[ds]?|aged)\b\s*(?::|=|of|is|was)?\s*\d{2,3}\b"
    r"|\b(?:ninety|ninetieth|(?:one|a)\s+hundred|hundredth)\b"
    r"|\b(?:early|mid|late)?[\s\-]*(?:nineties|9\d'?s|hundreds)\b"
)
_AGE_LINES = (
    # a line that opens with age and sex: "93 M with CHF", "101F, resident of ..."
    r"|(?m:^)[ \t]*(?P<lead>\d{2,3})(?:[ \t]?(?:m|f|male|female|man|woman|gentleman|lady)\b"
    r"(?:,?[ \t]+(?:with|w/|who|presents|presenting|presented|s/p|h/o|c/o|pmh|hx|history"
    r"|admitted|brought|transferred|resident|from|is|was|here)\b)"
    # the sex written out needs no clinical word after it: "94, female,", "94 lady, fell"
    r"|(?:,[ \t]*|[ \t])(?:male|female|woman|gentleman|lady)[ \t]*[,;:\n])"
    # the patient is or turned an age: "pt is 92 and lives alone", "turned 95 in May"
    r"|\b(?:(?:pt|patient|she|he)[ \t]+(?:is|was)|turned|turns)[ \t]+(?:now[ \t]+)?"
    r"(?P<subj>\d{2,3})\b"
    # the bare age that opens a note: "94 s/p fall", "101 w/ CHF" (the note's first word only)
    # after "Pt" or a section label ("Pt 94 s/p fall", "HPI:\n94 s/p fall")
    r"|\A[ \t\r\n]*(?:(?:pt|patient)[ \t]+|[A-Za-z]{1,12}[ \t]*:[ \t\r\n]*)?"
    r"(?P<opening>\d{2,3})[ \t]+(?:w/|(?:s/p|h/o|c/o|with|who|presents|presenting"
    r"|presented|admitted|brought|transferred|found|here)\b)"
    # an age in apposition: "Mrs Quell, 96, lives alone", "pt (93) seen" (the person before
    # and the closing mark are checked in Python)
    r"|(?P<apopen>[,(])[ \t]*(?P<appo>\d{2,3})[ \t]*[,)]"
)
_AGES = compile_words(_AGE_WORDS + _AGE_LINES)
stand_in(_AGES, _AGE_WORDS_PRESENCE + _AGE_LINES)
_G = dict(_AGES.groupindex)  # numbers: re2 name lookups are slow
_AGE_UNITS = frozenset({"y", "yo", "yr", "yrs", "year", "years"})
_OPENING_MAX = 110
_PERSON = frozenset({"his", "her", "their", "pt's", "pts", "patient's"})
# before an age in apposition: a word for a person, or a title a few words before a name
_PEOPLE: Final = word_set("age_apposition_people")
_TITLES: Final = frozenset({"mr", "mrs", "ms", "miss", "mister"})
_WRITTEN_BEFORE = re.compile(r"([A-Za-z]+)[ \t]*$")


def _over_ceiling(value: int, ceiling: int) -> bool:
    return ceiling < value <= 125


def _vital_near(text: str, pos: int) -> bool:
    return any(w in clinical.VITAL_CUES for w in words_before(text, pos, 4, 40))


@dataclass(slots=True)
class _Note:
    text: str
    ceiling: int  # the oldest age that is no PHI (policy option, default 89)


def _numeric(note: _Note, m: Any) -> Found | None:
    """A number and an age unit: "93 yo", "93 y/o", "93-year-old", "93 years of age"."""
    text, start = note.text, m.start()
    if start and (text[start - 1].isdigit() or text[start - 1] in "./"):
        return None
    if not _over_ceiling(int(grab(text, m, _G["num"])), note.ceiling):
        return None
    unit = grab(text, m, _G["unit"]).lower()
    strong = "old" in unit or "age" in unit or unit.startswith(("y/o", "y.o", "yo", "bi", "bd"))
    return (start, m.end(), Category.AGE, 0.95 if strong else 0.7)


def _cued(note: _Note, m: Any) -> Found | None:
    """An age cue and a number: "age 93", "aged 93", "age of 93" (not "age 93 mg")."""
    text = note.text
    start, end = m.start(_G["cued"]), m.end(_G["cued"])
    if not _over_ceiling(int(grab(text, m, _G["cued"])), note.ceiling):
        return None
    after = words_after(text, end, 1, 12)
    if after and after[0] in _AGE_UNITS:
        return (start, end, Category.AGE, 0.95)  # "aged 93 years"
    if clinical.unit_follows(text, end):
        return None  # "age 93 mg" is no age
    return (start, end, Category.AGE, 0.9)


def _line_opening(note: _Note, m: Any) -> Found | None:
    """Age and sex opening a line: "93 M with CHF", "101F, resident of ..."."""
    value = int(grab(note.text, m, _G["lead"]))
    if not _over_ceiling(value, note.ceiling):
        return None
    return (m.start(_G["lead"]), m.end(_G["lead"]), Category.AGE, 0.85)


def _note_opening(note: _Note, m: Any) -> Found | None:
    """A note that opens with a bare age and a clinical opening: "94 s/p fall"."""
    value = int(grab(note.text, m, _G["opening"]))
    if not _over_ceiling(value, note.ceiling) or value > _OPENING_MAX:
        return None  # a bare 120 opening a note is likelier a vital sign than an age
    return (m.start(_G["opening"]), m.end(_G["opening"]), Category.AGE, 0.8)


# an age unit after the number of "pt is 92 yo" (the number's own form, left to the
# subject's pass since the scan matched from "pt")
_UNIT_AFTER = re.compile(
    r"[ \t]*-?[ \t]*(?:y/o|y\.o\.?|yo\b|yrs?\b(?:[ \t-]*old)?|years?\b(?:[ \t-]*old)?|year-old)",
    re.I,
)


def _subject(note: _Note, m: Any) -> Found | None:
    """The patient is, was or turned an age: "pt is 92 and lives alone", "turned 95"
    (not "pt is 94% on RA", "pt is 100 on 2L", "he is 95 kg", "she was 98.6")."""
    text = note.text
    start, end = m.start(_G["subj"]), m.end(_G["subj"])
    if not _over_ceiling(int(text[start:end]), note.ceiling):
        return None
    nxt = text[end : end + 2]
    if nxt[:1] in ("%", "/", ":") or (nxt[:1] in ".," and nxt[1:2].isdigit()):
        return None
    unit = _UNIT_AFTER.match(text, end)
    if unit:
        return (start, unit.end(), Category.AGE, 0.95)
    after = words_after(text, end, 1, 12)
    if clinical.unit_follows(text, end) or (after and after[0] == "on"):
        return None  # "pt is 100 on RA": a saturation
    return (start, end, Category.AGE, 0.8)


def _apposition(note: _Note, m: Any) -> Found | None:
    """An age set apart by commas or brackets after a person: "Mrs Quell, 96, lives alone",
    "the patient, 95, lives with her son", "pt (93) seen" (not "HR 96, BP 120/80", "T 98.6,
    96, 120/80", "MAP (96)", "Quell, 96, 97": a list of values)."""
    text = note.text
    start, end = m.start(_G["appo"]), m.end(_G["appo"])
    if (grab(text, m, _G["apopen"]) == "(") != (text[m.end() - 1] == ")"):
        return None
    if not _over_ceiling(int(text[start:end]), note.ceiling):
        return None
    if next_char(text, m.end())[:1].isdigit() or clinical.unit_follows(text, m.end()):
        return None  # a list of values, a quantity ("Glucerna (90) ml")
    if not _person_before(text, m.start(), text[m.start()] == ",", m.end()):
        return None
    return (start, end, Category.AGE, 0.8)


def _person_before(text: str, pos: int, commas: bool, end: int) -> bool:
    """A person right before ``pos``: a word for one ("pt", "the patient", "her mother"), a
    name after a title ("Mrs Quell", "MR HOLM"), a census name far more a name than a word
    ("Hilda, 95,", "HILDA, 95,", "Hollis (91) seen") or before commas a rare capitalised word
    that is no drug nor clinical word ("Quell, 96,"; in brackets such a word is as often a
    device or a feed: "Tele (92)", "Isolette (98)"); no vital cue near ("sat 94, RR 18")."""
    words = words_before(text, pos, 3, 40)
    if not words or not words[-1].isalpha() or _vital_near(text, pos):
        return False
    if words[-1] in _PEOPLE or any(w in _TITLES for w in words[:-1]):
        return True
    written = _WRITTEN_BEFORE.search(text, max(0, pos - 30), pos)
    if written is None or len(written.group(1)) < 3:
        return False
    return _named_before(words[-1], written.group(1), commas, person_after(text, end))


def _named_before(word: str, as_written: str, commas: bool, verb: bool) -> bool:
    """``_person_before`` of a word with no cue, lower-case ``word``, written ``as_written``;
    ``verb``: a person's verb after the age ("Walker (92) seen")."""
    strict = not (commas or verb)
    if word in clinical.UNIT_WORDS:
        return False
    if lx.clinical_word(word):
        # a drug list's false friend that is a census first name, capitalised: "Laura, 96,",
        # "BRENT, 99,", "Thomas (97)" (a drug's name is no census first name: "Lasix, 95,")
        return not as_written.islower() and lx.is_first_name(word) and name_before_age(word, strict)
    if name_before_age(word, strict):
        # a census name far more a name than a word: in any case before commas, capitalised
        # before brackets ("Hilda, 95,", "hilda, 95,", "Hollis (91)", "Walker (92) seen";
        # not "Will, 95,", "walker (92)", "Walker (92) ordered")
        return commas or not as_written.islower()
    if not commas or not as_written.istitle() or lx.zipf(word) >= 4.0:
        return False
    return not lx.drug_words().get(word)


_AND_END: Final = re.compile(r"\s+and$", re.I)
_AGE_VERBS: Final = frozenset({"age", "aged", "turned", "turns", "turning"})
_SUBJECTS: Final = frozenset({"pt", "patient", "she", "he"})


def _age_said_before(text: str, pos: int) -> bool:
    """An age cue or the patient as subject before number words: "age ninety-two", "aged
    ninety four", "turned ninety", "she is ninety-four" (not "ninety minutes")."""
    before = words_before(text, pos, 2, 30)
    if not before:
        return False
    if before[-1] in _AGE_VERBS:
        return True
    return len(before) == 2 and before[-1] in {"is", "was"} and before[0] in _SUBJECTS


def _words(note: _Note, m: Any) -> Found | None:
    """Number words with an age unit: "ninety-three year old", "one hundred years old"; or
    after an age cue without one ("aged ninety four", "she is ninety-four")."""
    text = note.text
    end = m.end()
    if not grab(text, m, _G["wunit"]):
        if not _age_said_before(text, m.start()):
            return None  # "ninety" alone is a count ("ninety minutes"), not an age
        # not the blanks nor the "and" after ("she is one hundred and sharp")
        end = max(
            m.start(_G["head"]) + len(_AND_END.sub("", grab(text, m, _G["head"]))),
            m.end(_G["wunits"]),
        )
    value = 100 if "hundred" in grab(text, m, _G["head"]).lower() else 90
    if grab(text, m, _G["wunits"]):
        value += _UNITS[grab(text, m, _G["wunits"]).lower()]
    if not _over_ceiling(value, note.ceiling):
        return None
    return (m.start(), end, Category.AGE, 0.9)


def _decade(note: _Note, m: Any) -> Found | None:
    """Decades with a person context: "in her late 90s", "nineties" (not "sats mid 90's")."""
    text = note.text
    decade = grab(text, m, _G["decade"]).lower()
    if decade[:1].isdigit() and int(decade[:2]) <= max(note.ceiling, 89):
        return None
    owner = (grab(text, m, _G["owner"]) or "").lower()
    start = m.start(_G["rel"]) if grab(text, m, _G["rel"]) else m.start(_G["decade"])
    conf = _decade_confidence(text, m, owner, decade, start)
    return (start, m.end(), Category.AGE, conf) if conf else None


def _decade_confidence(text: str, m: Any, owner: str, decade: str, start: int) -> float:
    if owner in _PERSON:
        return 0.9
    if owner == "the" and grab(text, m, _G["rel"]) and "in" in words_before(text, m.start(), 1):
        # "in the late 90s" — unless a vital sign owns the number ("sats in the 90s")
        return 0.0 if _vital_near(text, m.start()) else 0.6
    if decade == "nineties" and not _vital_near(text, start):
        return 0.55
    return 0.0


PASSES: Final = declare(
    PatternPasses[_Note](
        "ages",
        [
            PatternPass("ages.number_unit", _numeric, "num", "ages"),
            PatternPass("ages.cued", _cued, "cued", "ages"),
            PatternPass("ages.line_opening", _line_opening, "lead", "ages"),
            PatternPass("ages.note_opening", _note_opening, "opening", "ages"),
            PatternPass("ages.subject", _subject, "subj", "ages"),
            PatternPass("ages.apposition", _apposition, "appo", "ages"),
            PatternPass("ages.words", _words, "head", "ages"),
            PatternPass("ages.decade", _decade, "", "ages"),
        ],
    )
)
_TABLE = PASSES.table("ages", _G)


@register("ages")
class AgeRecognizer(Recognizer):
    """Ages above the policy ceiling (option ``ceiling``, default 89) in every form."""

    categories = frozenset({Category.AGE})

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        note = _Note(text, int(self.options.get("ceiling", 89)))
        spans: list[Span] = []
        for m in finditer(doc, _AGES):
            PASSES.judge(_TABLE, note, text, m, spans)
        return spans
