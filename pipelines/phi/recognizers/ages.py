"""Ages over 89 (HIPAA: ages 90 and above are PHI; ages up to 89 are not).

Expression classes of the NLM Scrubber paper: number + age unit ("93 yo", "93 y/o",
"93-year-old", "93 years of age"), cue + number ("age 93", "aged 93", "age of 93"), number
words ("ninety-three year old", "ninety-third birthday", "one hundred years old"), ordinal
birthdays ("93rd birthday") and decades ("in her late 90s", "nineties"). Decades need a
person context ("his", "her", "in the late 90s" without a vital before it), because
"sats mid 90's" and "BP 90s" are everywhere in nursing notes.
"""

from __future__ import annotations

import re

from pipelines.phi import clinical
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.registry import register
from pipelines.phi.scan import compile_words, word_set, words_before
from pipelines.spans import Category, Span

_NUMERIC = re.compile(
    r"(\d{2,3})(?:st|nd|rd|th)?[ \t]*-?[ \t]*"
    r"(y/o|y\.o\.?|yo\b|yr?s?\.?\b(?:[ \t-]*old)?|years?\b(?:[ \t-]*old|\s+of\s+age)?"
    r"|year-old|birthday|bday)",
    re.I,
)
_CUED = compile_words(r"(?i)\b(?:age[ds]?|aged)\b\s*(?::|=|of|is|was)?\s*(\d{2,3})\b")

# Number words 90-119 (the tens and units are plain English; no library parses them here).
_UNITS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
    "seventh": 7, "eighth": 8, "ninth": 9,
}  # fmt: skip
_UNIT_RE = "|".join(sorted(_UNITS, key=len, reverse=True))
_WORDS = compile_words(
    r"(?i)\b(ninety|ninetieth|one\s+hundred(?:\s+and)?|hundredth)(?:[\s\-]+(" + _UNIT_RE + r"))?"
    r"\b[\s\-]*(years?[\s\-]*old|year-old|y/?o\b|years?\s+of\s+age|birthday|bday)?"
)
_DECADE = compile_words(
    r"(?i)\b(?:(his|her|their|pt'?s|patient'?s|the)\s+)?(early|mid|late)?[\s\-]*"
    r"(nineties|9\d'?s|hundreds)\b"
)
_PERSON = word_set("his her their pt's pts patient's")
_AGE_UNIT_WORDS = word_set("yo y/o y.o y.o. yr yrs year years year-old birthday bday")


def _over_ceiling(value: int, ceiling: int) -> bool:
    return ceiling < value <= 125


def _vital_near(text: str, pos: int) -> bool:
    return any(w in clinical.VITAL_CUES for w in words_before(text, pos, 4, 40))


@register("ages")
class AgeRecognizer(Recognizer):
    """Ages above the policy ceiling (option ``ceiling``, default 89) in every form."""

    categories = frozenset({Category.AGE})

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        ceiling = int(self.options.get("ceiling", 89))
        spans: list[Span] = []
        for m in _NUMERIC.finditer(text):
            start = m.start()
            if start and (text[start - 1].isdigit() or text[start - 1] in "./"):
                continue
            if not _over_ceiling(int(m.group(1)), ceiling):
                continue
            unit = m.group(2).lower()
            strong = (
                "old" in unit or "age" in unit or unit.startswith(("y/o", "y.o", "yo", "bi", "bd"))
            )
            spans.append(Span(start, m.end(), Category.AGE, 0.95 if strong else 0.7, self.name))
        for m in _CUED.finditer(text):
            if _over_ceiling(int(m.group(1)), ceiling) and not clinical.unit_follows(text, m.end()):
                spans.append(Span(m.start(1), m.end(1), Category.AGE, 0.9, self.name))
        for m in _WORDS.finditer(text):
            head = m.group(1).lower()
            value = 100 if ("hundred" in head) else 90
            if m.group(2):
                value += _UNITS[m.group(2).lower()]
            unit = m.group(3)
            if not unit:
                continue  # "ninety" alone is a count ("ninety minutes"), not an age
            if _over_ceiling(value, ceiling):
                spans.append(Span(m.start(), m.end(), Category.AGE, 0.9, self.name))
        for m in _DECADE.finditer(text):
            decade = m.group(3).lower()
            if decade[:1].isdigit() and int(decade[:2]) < 90:
                continue
            if ceiling >= 90 and decade[:1].isdigit() and int(decade[:2]) <= ceiling:
                continue
            owner = (m.group(1) or "").lower()
            if owner in _PERSON or owner in {"pts"}:
                conf = 0.9
            elif owner == "the" and m.group(2) and "in" in words_before(text, m.start(), 1):
                # "in the late 90s" — unless a vital sign owns the number ("sats in the 90s")
                conf = 0.0 if _vital_near(text, m.start()) else 0.6
            elif decade == "nineties" and not _vital_near(text, m.start()):
                conf = 0.55
            else:
                continue
            if conf:
                start = m.start(2) if m.group(2) else m.start(3)
                spans.append(Span(start, m.end(), Category.AGE, conf, self.name))
        return spans
