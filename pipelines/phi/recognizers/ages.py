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

from typing import Any

from pipelines.phi import clinical
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.registry import register
from pipelines.phi.scan import compile_words, finditer, grab, words_after, words_before
from pipelines.spans import Category, Span

# Number words 90-119 (the tens and units are plain English; no library parses them here).
_UNITS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
    "seventh": 7, "eighth": 8, "ninth": 9,
}  # fmt: skip
_UNIT_RE = "|".join(sorted(_UNITS, key=len, reverse=True))
# One re2 scan for every age form (one scan costs about what each of four separate ones did).
_AGES = compile_words(
    r"(?i)(?P<num>\d{2,3})(?:st|nd|rd|th)?[ \t]*-?[ \t]*"
    r"(?P<unit>y/o|y\.o\.?|yo\b|yrs?\.?\b(?:[ \t-]*old)?|years?\b(?:[ \t-]*old|\s+of\s+age)?"
    r"|year-old|birthday|bday)"
    r"|\b(?:age[ds]?|aged)\b\s*(?::|=|of|is|was)?\s*(?P<cued>\d{2,3})\b"
    r"|\b(?P<head>ninety|ninetieth|one\s+hundred(?:\s+and)?|hundredth)"
    r"(?:[\s\-]+(?P<wunits>" + _UNIT_RE + r"))?"
    r"\b[\s\-]*(?P<wunit>years?[\s\-]*old|year-old|yrs?\.?[\s\-]*old|y/?o\b|y\.o\.?"
    r"|years?\s+of\s+age|birthday|bday)?"
    r"|\b(?:(?P<owner>his|her|their|pt'?s|patient'?s|the)\s+)?(?P<rel>early|mid|late)?[\s\-]*"
    r"(?P<decade>nineties|9\d'?s|hundreds)\b"
    # a line that opens with age and sex: "93 M with CHF", "101F, resident of ..."
    r"|(?m:^)[ \t]*(?P<lead>\d{2,3})[ \t]?(?:m|f|male|female|man|woman|gentleman|lady)\b"
    r"(?:,?[ \t]+(?:with|w/|who|presents|presenting|presented|s/p|h/o|c/o|pmh|hx|history"
    r"|admitted|brought|transferred|resident|from|is|was|here)\b)"
    # the bare age that opens a note: "94 s/p fall", "101 w/ CHF" (the note's first word only)
    r"|\A[ \t\r\n]*(?P<opening>\d{2,3})[ \t]+(?:w/|(?:s/p|h/o|c/o|with|who|presents|presenting"
    r"|presented|admitted|brought|transferred|found|here)\b)"
)
_G = dict(_AGES.groupindex)  # numbers: re2 name lookups are slow
_AGE_UNITS = frozenset({"y", "yo", "yr", "yrs", "year", "years"})
_OPENING_MAX = 110
_PERSON = frozenset({"his", "her", "their", "pt's", "pts", "patient's"})


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
        for m in finditer(doc, _AGES):
            # by group number (``grab``): re2's ``group("name")`` rebuilds the name table per call
            if grab(text, m, _G["num"]):
                span = self._numeric(text, m, ceiling)
            elif grab(text, m, _G["cued"]):
                span = self._cued(text, m, ceiling)
            elif grab(text, m, _G["lead"]):
                value = int(grab(text, m, _G["lead"]))
                span = (
                    Span(m.start(_G["lead"]), m.end(_G["lead"]), Category.AGE, 0.85, self.name)
                    if _over_ceiling(value, ceiling)
                    else None
                )
            elif grab(text, m, _G["opening"]):
                span = self._opening(m, ceiling, int(grab(text, m, _G["opening"])))
            elif grab(text, m, _G["head"]):
                span = self._words(text, m, ceiling)
            else:
                span = self._decade(text, m, ceiling)
            if span is not None:
                spans.append(span)
        return spans

    def _numeric(self, text: str, m: Any, ceiling: int) -> Span | None:
        start = m.start()
        if start and (text[start - 1].isdigit() or text[start - 1] in "./"):
            return None
        if not _over_ceiling(int(grab(text, m, _G["num"])), ceiling):
            return None
        unit = grab(text, m, _G["unit"]).lower()
        strong = "old" in unit or "age" in unit or unit.startswith(("y/o", "y.o", "yo", "bi", "bd"))
        return Span(start, m.end(), Category.AGE, 0.95 if strong else 0.7, self.name)

    def _opening(self, m: Any, ceiling: int, value: int) -> Span | None:
        """A note that opens with a bare number and a clinical opening ("94 s/p fall")."""
        if not _over_ceiling(value, ceiling) or value > _OPENING_MAX:
            return None  # a bare 120 opening a note is likelier a vital sign than an age
        return Span(m.start(_G["opening"]), m.end(_G["opening"]), Category.AGE, 0.8, self.name)

    def _cued(self, text: str, m: Any, ceiling: int) -> Span | None:
        start, end = m.start(_G["cued"]), m.end(_G["cued"])
        if not _over_ceiling(int(grab(text, m, _G["cued"])), ceiling):
            return None
        after = words_after(text, end, 1, 12)
        if after and after[0] in _AGE_UNITS:
            return Span(start, end, Category.AGE, 0.95, self.name)  # "aged 93 years"
        if clinical.unit_follows(text, end):
            return None  # "age 93 mg" is no age
        return Span(start, end, Category.AGE, 0.9, self.name)

    def _words(self, text: str, m: Any, ceiling: int) -> Span | None:
        if not grab(text, m, _G["wunit"]):
            return None  # "ninety" alone is a count ("ninety minutes"), not an age
        value = 100 if "hundred" in grab(text, m, _G["head"]).lower() else 90
        if grab(text, m, _G["wunits"]):
            value += _UNITS[grab(text, m, _G["wunits"]).lower()]
        if not _over_ceiling(value, ceiling):
            return None
        return Span(m.start(), m.end(), Category.AGE, 0.9, self.name)

    def _decade(self, text: str, m: Any, ceiling: int) -> Span | None:
        decade = grab(text, m, _G["decade"]).lower()
        if decade[:1].isdigit() and int(decade[:2]) <= max(ceiling, 89):
            return None
        owner = (grab(text, m, _G["owner"]) or "").lower()
        start = m.start(_G["rel"]) if grab(text, m, _G["rel"]) else m.start(_G["decade"])
        if owner in _PERSON:
            conf = 0.9
        elif (
            owner == "the" and grab(text, m, _G["rel"]) and "in" in words_before(text, m.start(), 1)
        ):
            # "in the late 90s" — unless a vital sign owns the number ("sats in the 90s")
            conf = 0.0 if _vital_near(text, m.start()) else 0.6
        elif decade == "nineties" and not _vital_near(text, start):
            conf = 0.55
        else:
            return None
        return Span(start, m.end(), Category.AGE, conf, self.name) if conf else None
