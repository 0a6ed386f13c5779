"""Dates (HIPAA: every element of a date except the year, and years tied to the patient).

Covers the formats the NLM Scrubber paper lists: numeric dates with any delimiter and 2- or
4-digit years, month names and abbreviations ("Aug 7", "Aug7", "7-August", "the 7th of
August", "Oct, 1989"), vague dates ("mid-2012", "early July"), day names attached to dates,
holidays (names taken from the ``holidays`` package), and years alone where the text ties
them to the patient ("MI 1992", "s/p CABG '95", "in 2003", "CVA in 94 and 00").

Clinical numbers with the same shapes stay: "BP 120/80" and "PSV 10/5" (cue before),
"pain 7/10" and "GCS 3/15" (scores), "1/2 NS" (fractions), "5/5 strength", "sats 95-97"
(dash ranges need a date cue), "0800"/"2130" (clock times), "5 mg" (units).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from pipelines.phi import clinical
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.passes import declare
from pipelines.phi.patterns import Found, PatternPass, PatternPasses
from pipelines.phi.recognizers.date_numeric import DATE_CUES as DATE_CUES
from pipelines.phi.recognizers.date_numeric import (
    STRONG_CUES,
    calendar_md,
    cue_before,
    numeric_confidence,
    valid_md,
    valid_year,
)
from pipelines.phi.recognizers.date_patterns import (
    _AMBIGUOUS_MONTHS,
    _NUMERIC,
    _NUMERIC_SHAPE,
    _SPACED,
    _SPACED_SHAPE,
    _WEEKDAY_BEFORE,
    word_groups,
    word_scan,
)
from pipelines.phi.recognizers.date_patterns import _NUMERIC_BODY as _NUMERIC_BODY
from pipelines.phi.recognizers.date_patterns import holiday_pattern as holiday_pattern
from pipelines.phi.recognizers.years import _YEAR_SCAN as _YEAR_SCAN
from pipelines.phi.recognizers.years import YearRecognizer as YearRecognizer
from pipelines.phi.registry import register
from pipelines.phi.scan import finditer, grab, led_finditer, may_match, words_after, words_before
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category, Span

_ORDINAL_OK_AFTER = frozenset({"", ".", ",", ";", ":", ")", '"', "!", "?", "at", "of", "and", "or"})
_ORDINAL_CUES = word_set("date_ordinal_cues")
_WEEKDAY_WORDS: Final = word_set("tagger_weekdays") - {"sat", "sun"}  # "sat the 2nd time"
_LEFT_BLOCK = frozenset("0123456789/.-")
_NON_DIGIT = re.compile(r"\D")
_DAY_RANGE = re.compile(r"\s*[-–]\s*")
# the group a named date starts at when a weekday before it is left out, in order
_AFTER_WEEKDAY: Final = ("rel", "d1", "m", "m2")
_NAMED_GROUPS: Final = ("wd", "rel", "d1", "m", "d2", "m2", "d3", "y")


@dataclass(slots=True)
class _Note:
    """What the date passes share on one note: its text, the spans found so far (a range's
    second date follows the first) and whether a weekday joins its date."""

    text: str
    spans: list[Span]
    weekdays: bool


def _range_end(text: str, start: int, spans: list[Span]) -> bool:
    """The second date of a range: right after a dash that closes a date found just before
    ("3/2/19-3/9/19")."""
    return text[start - 1] == "-" and bool(spans) and spans[-1].end == start - 1


def _left_blocked(text: str, start: int, spans: list[Span]) -> bool:
    """The number continues one on its left ("1.5/2", "3-4/5"), but for a label before a dash
    or dot ("UO-9/10") and the second date of a range."""
    if not start or text[start - 1] not in _LEFT_BLOCK:
        return False
    if text[start - 1] in ".-" and text[start - 2 : start - 1].isalpha():
        return False
    return not _range_end(text, start, spans)


def _numeric(note: _Note, m: Any) -> Found | None:
    """Numeric dates: "7/22", "3/14/2019", "2019-03-14", "7/22-7/25" (see ``date_numeric``)."""
    text, start = note.text, m.start()
    if _left_blocked(text, start, note.spans):
        return None
    conf = numeric_confidence(text, start, m.end(), m.group())
    if not conf:
        return None
    day = note.weekdays and _WEEKDAY_BEFORE.search(text, max(0, start - 12), start)
    return (day.start() if day else start, m.end(), Category.DATE, conf)


def _spaced(note: _Note, m: Any) -> Found | None:
    """Separators set apart: "03 / 14 / 2019"."""
    a, b = int(m.group(1)), int(m.group(3))
    return (m.start(), m.end(), Category.DATE, 0.85) if valid_md(a, b) or valid_md(b, a) else None


def _compact(note: _Note, m: Any) -> Found | None:
    """Six digits MMDDYY (or eight, MMDDYYYY) right after a date cue: "DOB 071588", "born
    07151988"; after a weak cue ("on", "from") only a real calendar day and no lab's value
    ("fell on 071588", not "plt on 101000"). A 6-digit number alone is a count, a dose or a
    code."""
    text, groups = note.text, word_groups()
    start, end = m.start(groups["six"]), m.end(groups["six"])
    month, day = int(text[start : start + 2]), int(text[start + 2 : start + 4])
    if _blocked_after(text[end : end + 2]) or not valid_md(month, day):
        return None
    if clinical.unit_follows(text, end):
        return None
    cue = text[m.start(groups["sixcue"]) : m.end(groups["sixcue"])].lower().replace(".", "")
    if cue not in STRONG_CUES and not _weak_compact_ok(text, m.start(), month, day):
        return None
    return (start, end, Category.DATE, 0.85 if cue in STRONG_CUES else 0.7)


def _blank(note: _Note, m: Any) -> Found | None:
    """Month, day and year set apart by blanks right after a date cue: "admitted 3 12 98",
    "DOB 11 4 1931" (three numbers alone are a list of values); after a weak cue, as for
    six digits, a real calendar day and no lab's value before ("plt on 3 12 98")."""
    text, groups = note.text, word_groups()
    start, end = m.start(groups["blank"]), m.end(groups["blank"])
    month, day, year = text[start:end].split()
    if _blocked_after(text[end : end + 2]) or text[end : end + 1] in (":", "%"):
        return None
    if not (calendar_md(int(month), int(day)) and valid_year(year)):
        return None
    if clinical.unit_follows(text, end):
        return None
    cue = text[m.start(groups["sixcue"]) : m.end(groups["sixcue"])].lower().replace(".", "")
    if cue not in STRONG_CUES and not _weak_compact_ok(text, m.start(), int(month), int(day)):
        return None
    return (start, end, Category.DATE, 0.85 if cue in STRONG_CUES else 0.7)


def _weak_compact_ok(text: str, cue_start: int, month: int, day: int) -> bool:
    """After a weak cue, six digits are a date only with a real calendar day, two-digit
    month and day as MMDDYY writes them, and no measurement cue before the cue word
    ("plt on 101000", "WBC from 110000")."""
    return calendar_md(month, day) and not clinical.vital_before(text, cue_start)


def _blocked_after(nxt: str) -> bool:
    """A digit, a slash, or a dot or dash and a digit: the number goes on."""
    return nxt[:1].isdigit() or nxt[:1] == "/" or (nxt[:1] in ".-" and nxt[1:].isdigit())


def _holiday(note: _Note, m: Any) -> Found | None:
    """Holiday names from the ``holidays`` package ("Thanksgiving", "Christmas Eve")."""
    return (m.start(), m.end(), Category.DATE, 0.85)


def _cued_dash(note: _Note, m: Any) -> Found | None:
    """A month-day with a dash after a date cue: "BC from 3-5" (not "on 1-2 pillows")."""
    text = note.text
    group = word_groups()["dash"]
    start, end = m.start(group), m.end(group)
    nxt = text[end : end + 2]
    if (start and text[start - 1] in _LEFT_BLOCK) or nxt[:1] in ("-", "/"):
        return None
    if nxt[:1] == "." and nxt[1:].isdigit():
        return None
    after = words_after(text, end, 1, 20)
    if after and after[0].endswith("s") and len(after[0]) > 3:
        return None  # "on 1-2 pillows"
    a, b = (int(p) for p in text[start:end].split("-"))
    if valid_md(a, b) and not clinical.clinical_number(text, start, end):
        return (start, end, Category.DATE, 0.7)
    return None


def _ordinal(note: _Note, m: Any) -> Found | None:
    """ "it's the 11th.", "on the 3rd at noon", after a weekday "Wednesday the 5th for
    f/u" — not "the 4th ventricle", "the 2nd try"."""
    text = note.text
    group = word_groups()["ord"]
    before = words_before(text, m.start(), 1, 16)
    if not 1 <= int(m.group(group)) <= 31:
        return None
    if before and before[0] in _WEEKDAY_WORDS:
        return (m.start(group), m.end(), Category.DATE, 0.8)  # "Wednesday the 5th"
    if not (before and before[0] in _ORDINAL_CUES):
        return None
    rest = text[m.end() : m.end() + 12].lstrip(" ")
    after = words_after(text, m.end(), 1, 12)
    if rest[:1] in _ORDINAL_OK_AFTER or (after and after[0] in _ORDINAL_OK_AFTER):
        return (m.start(group), m.end(), Category.DATE, 0.7)
    return None


def _whole(note: _Note, m: Any) -> Found | None:
    """The whole match is the date."""
    return (m.start(), m.end(), Category.DATE, 0.8)


def _quarter(note: _Note, m: Any) -> Found | None:
    """A quarter of a year: "Q2 2019" (not "q4 2000 mg": a dose and its frequency)."""
    if clinical.unit_follows(note.text, m.end()):
        return None
    return (m.start(), m.end(), Category.DATE, 0.75)


def _day_or_year(day_before: str, day_after: str, year: str) -> tuple[bool, str] | None:
    """Whether a day goes with the month, and the year ("Jan 93": a two-digit "day" over 31
    after the month is a year); None when a day is no day."""
    has_day = False
    for after, d in ((False, day_before), (True, day_after)):
        if not d:
            continue
        num = int(_NON_DIGIT.sub("", _DAY_RANGE.split(d, 1)[0]))  # "8-10": the 8th
        if 1 <= num <= 31:
            has_day = True
        elif after and not year and len(d) == 2:
            year = d
        else:
            return None
    return has_day, year


def _ambiguous_month_ok(
    text: str, start: int, end: int, has_day: bool, year: str, rel: str, days: tuple[str, str]
) -> bool:
    """A month word that is a common word too ("may", "MAR", "dec") needs a day or a year."""
    day_before, day_after = days
    if not (has_day or year or rel):
        return False
    if day_after and not year and clinical.unit_follows(text, end):
        return False
    if day_before and not day_after and not year and day_before.isdigit():
        # "nc 02 dec from 4": needs "2nd dec", "2 of dec", "12-Dec" or a date cue before
        joined = text[start + len(day_before) : start + len(day_before) + 1] == "-"
        return joined or " of" in text[start:end].lower() or _strong_cue_before(text, start)
    return True


def _strong_cue_before(text: str, start: int) -> bool:
    """A date cue that is no everyday word right before: "admitted 12 Dec", "seen 3 Jan"."""
    before = cue_before(text, start)
    return bool(before) and before[0] in STRONG_CUES


def _named(note: _Note, m: Any) -> Found | None:
    """Month names and abbreviations with a day and/or year: "Aug 7", "7-August", "the 7th of
    August", "Oct, 1989", "early July", "Friday, March 3"."""
    text, index = note.text, word_groups()
    g = {name: grab(text, m, index[name]) for name in _NAMED_GROUPS}
    month = (g["m"] or g["m2"] or "").lower()
    days = (g["d1"], g["d2"] or g["d3"])
    reading = _day_or_year(*days, g["y"])
    if reading is None:
        return None
    has_day, year = reading
    start, end = _named_start(note, m, g), m.end()
    if _the_between(text, m, g):
        return None
    if month in _AMBIGUOUS_MONTHS and not _ambiguous_month_ok(
        text, start, end, has_day, year, g["rel"], days
    ):
        return None
    if days[1] and not year:
        end = _two_digit_year_after(text, end)
    return (start, end, Category.DATE, _named_confidence(month, has_day or bool(year)))


def _named_start(note: _Note, m: Any, g: dict[str, str]) -> int:
    """Where a named date starts: at its weekday if the policy keeps weekdays, else after."""
    if g["wd"] and not note.weekdays:
        return int(m.start(word_groups()[next(name for name in _AFTER_WEEKDAY if g[name])]))
    return int(m.start())


def _the_between(text: str, m: Any, g: dict[str, str]) -> bool:
    """ "December the 3rd": an article between the month and its day is refused after a
    month word written in small letters that is a common word too ("may the 2nd dose")."""
    month = g["m"]
    if not (month and g["d2"]) or not month.islower() or month not in _AMBIGUOUS_MONTHS:
        return False
    index = word_groups()
    return "the" in text[m.end(index["m"]) : m.start(index["d2"])].lower()


# "Dec 3 98": a two-digit year after the day, a blank between, then no digit, no clock, no
# percent or decimal
_SHORT_YEAR: Final = re.compile(r"[ \t]+\d\d(?![\d%:./])")


def _two_digit_year_after(text: str, end: int) -> int:
    """The end of "Dec 3 98" after "Dec 3" (``end``): the year, unless a unit follows it
    ("Dec 3 20 mg")."""
    year = _SHORT_YEAR.match(text, end)
    if year is None or clinical.unit_follows(text, year.end()):
        return end
    return year.end()


def _named_confidence(month: str, dated: bool) -> float:
    """With a day or a year, sure; a month name alone, less so (an abbreviation least)."""
    if dated:
        return 0.92
    return 0.8 if len(month) > 3 and month not in {"june", "august"} else 0.7


PASSES: Final = declare(
    PatternPasses[_Note](
        "dates",
        [
            PatternPass("dates.numeric", _numeric, "", "numeric"),
            PatternPass("dates.spaced", _spaced, "", "spaced"),
            PatternPass("dates.holiday", _holiday, "hol", "words"),
            PatternPass("dates.cued_dash", _cued_dash, "dash", "words"),
            PatternPass("dates.ordinal", _ordinal, "ord", "words"),
            PatternPass("dates.glued", _whole, "glued", "words", "Glued: 14MAR2019, 3jan19."),
            PatternPass("dates.vague_year", _whole, "vague", "words", "Vague years: mid-2012."),
            PatternPass("dates.quarter", _quarter, "quarter", "words"),
            PatternPass("dates.compact", _compact, "six", "words"),
            PatternPass("dates.blank_separated", _blank, "blank", "words"),
            PatternPass("dates.named_month", _named, "", "words"),
        ],
    )
)
_NUMERIC_TABLE = PASSES.table("numeric", {})
_SPACED_TABLE = PASSES.table("spaced", {})


@register("dates")
class DateRecognizer(Recognizer):
    """Full and partial dates: numeric, with month names, weekdays and holidays.

    Option ``include_weekday`` (default false): whether a day name next to a date ("Friday
    10/7") is part of the span. A weekday alone identifies nobody and HIPAA does not list it;
    the PhysioNet gold leaves it out, so by default only the date itself is reported.
    """

    categories = frozenset({Category.DATE})

    @property
    def weekdays(self) -> bool:
        return bool(self.options.get("include_weekday", False))

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        spans: list[Span] = []
        note = _Note(text, spans, self.weekdays)
        judge = PASSES.judge
        if may_match(doc, _NUMERIC_SHAPE):
            for m in led_finditer(text, _NUMERIC_SHAPE, _NUMERIC):
                judge(_NUMERIC_TABLE, note, text, m, spans)
        if (" / " in text or " - " in text or " . " in text) and may_match(doc, _SPACED_SHAPE):
            for m in led_finditer(text, _SPACED_SHAPE, _SPACED):
                judge(_SPACED_TABLE, note, text, m, spans)
        table = _words_table()
        for m in finditer(doc, word_scan()):
            judge(table, note, text, m, spans)
        return spans


_WORDS_TABLE: list[Any] = []


def _words_table() -> Any:
    """The table of the word scan (built with the scan, on first use: the holiday names)."""
    if not _WORDS_TABLE:
        _WORDS_TABLE.append(PASSES.table("words", word_groups()))
    return _WORDS_TABLE[0]
