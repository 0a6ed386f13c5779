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
from functools import lru_cache
from typing import Any

from pipelines.phi import clinical
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.registry import register
from pipelines.phi.scan import (
    compile_words,
    finditer,
    grab,
    led_finditer,
    may_match,
    words_after,
    words_before,
)
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category, Span

# Words before a number that make a date reading likely ("on 7/22", "since 3-5").
DATE_CUES = word_set("date_cues")

# Cues after which even "3/3" reads as a date ("post 3/3"; "on 5/5" is a vent setting).
_STRONG_CUES = DATE_CUES - word_set("date_cues_weak")

# Slash dates (with ranges and pairs), dash and dot dates with a year. The left boundary is
# checked in Python: a leading look-behind would cost the regex its fast digit prefix search.
_NUMERIC_BODY = r"\d{1,4}(?:/\d{1,4}(?:[/\-]\d{1,4}){0,3}|-\d{1,2}-\d{2,4}|\.\d{1,2}\.\d{2,4})"
# "\d\d{0,3}" is "\d{1,4}" (the same matches) opening with a digit class, so the stdlib search
# skips to the next digit in C instead of trying a match at every position
# A dash and digits after a date block it ("3/4-5"), unless a second slash date follows: a
# range of dates, "3/2/19-3/9/19", "12/2018-01/2019", gives two dates.
_NUMERIC = re.compile(
    r"\d\d{0,3}" + _NUMERIC_BODY.removeprefix(r"\d{1,4}") + r"(?![\d/]|\.\d|-\d+(?![\d/]))"
)
# The same shape without the look-ahead, for the shared re2 prefilter (``scan.may_match``):
# where it matches nowhere, ``_NUMERIC`` cannot match either (half the notes). ``\p{Nd}``:
# Python's ``\d`` takes every Unicode decimal digit, re2's only 0-9.
_NUMERIC_SHAPE = compile_words(_NUMERIC_BODY.replace(r"\d", r"\p{Nd}"))

# Month words that are also common words or clinical abbreviations ("may", "MAR" = the
# medication administration record, "dec" = decreased, "Jan"/"June" names): need a day/year.
_AMBIGUOUS_MONTHS = frozenset({"may", "mar", "march", "dec", "jan", "jun", "june", "aug"})
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_WEEKDAY = (
    r"(?:mon(?:day)?|tue(?:s(?:day)?)?|wed(?:nesday)?|thu(?:r(?:s(?:day)?)?)?|fri(?:day)?"
    r"|sat(?:urday)?|sun(?:day)?)"
)
_ORD = r"\d{1,2}(?:st|nd|rd|th)?"
# A weekday right before a numeric date belongs to it ("Tues 7/22", "Monday, 3/4/19").
_WEEKDAY_BEFORE = re.compile(r"(?i)\b" + _WEEKDAY + r"\.?,?[ \t]*$")
_NAMED = (
    r"(?:\b(?P<wd>" + _WEEKDAY + r")\.?,?\s+)?"
    r"(?:\b(?P<rel>early|mid|late)[\s\-]+)?"
    r"(?:\b(?:the\s+)?(?P<d1>" + _ORD + r"(?:\s*[-–]\s*" + _ORD + r")?)(?:\s+of)?[\s\-]*)?"
    r"(?:\b" + _MONTH + r"\.?\s*[-–]\s*)?"  # a range of months: "Jan-Mar 2019"
    r"(?:\b(?P<m>"
    + _MONTH
    + r")\b\.?(?:[\s\-,/]*(?P<d2>"
    + _ORD
    + r"(?:\s*[-–]\s*"
    + _ORD
    + r")?)\b)?"
    r"|\b(?P<m2>" + _MONTH + r")(?P<d3>\d{1,2})\b)"
    # the year: "March 3, 2019", "MARCH of 2019", "14-MAR-2019", "Mar/2019"
    r"(?:(?:,?\s*(?:of\s+)?|\s*[\-/]\s*)(?P<y>'?(?:1[89]|20)\d\d\b|'\d{2}\b|,\s*\d{2}\b))?"
)
# Other word-led forms, scanned in the same re2 pass: month-day with a dash after a date
# cue ("BC from 3-5", "back to OR on 7-8"), "the 11th", vague years ("mid-2012").
_OTHER_WORD_FORMS = (
    r"|\b(?:on|from|since|until|till|dated)\s+(?P<dash>\d{1,2}-\d{1,2})\b"
    r"|\bthe\s+(?P<ord>\d{1,2})(?:st|nd|rd|th)\b"
    r"|\b(?P<vague>early|mid|late)[\s\-]+(?P<vy>(?:19|20)\d\d)\b"
    r"|\b(?P<glued>\d{1,2}" + _MONTH + r"(?:19|20)?\d\d)\b"  # "14MAR2019", "3jan19"
)
_ORDINAL_OK_AFTER = frozenset({"", ".", ",", ";", ":", ")", '"', "!", "?", "at", "of", "and", "or"})
_ORDINAL_CUES = word_set("date_ordinal_cues")


@lru_cache(maxsize=1)
def holiday_pattern() -> Any:
    """A re2 pattern of US holiday names from the ``holidays`` package, plus short forms
    shared by several names ("Christmas" from "Christmas Day" / "Christmas Eve")."""
    import holidays

    names: set[str] = set()
    every: set[str] = set()
    for subdiv in (None, *holidays.US.subdivisions):
        for cat in ("public", "unofficial"):
            try:
                found = holidays.country_holidays(
                    "US", subdiv=subdiv, years=(2023, 2024), categories=(cat,)
                )
            except (NotImplementedError, ValueError, KeyError):
                continue
            for value in found.values():
                for name in value.split(";"):
                    clean = name.replace("(observed)", "").strip()
                    every.add(clean)
                    if subdiv is None:
                        names.add(clean)
    stems: dict[str, int] = {}
    suffix = re.compile(r"^(.+?) (?:Day|Eve|Sunday|Monday|Second Day)$")
    prefix = re.compile(r"^(?:Day|Friday) After (.+)$")
    for name in every:
        m = suffix.match(name) or prefix.match(name)
        if m:
            stems[m.group(1)] = stems.get(m.group(1), 0) + 1
    names.update(stem for stem, n in stems.items() if n >= 2)
    alternatives = sorted((re.escape(n).replace(r"\ ", r"\s+") for n in names), key=len)
    return compile_words(r"(?i)\b(?:" + "|".join(reversed(alternatives)) + r")\b")


@lru_cache(maxsize=1)
def word_groups() -> dict[str, int]:
    """Group numbers of ``word_scan()`` (re2's name lookups rebuild a dict on every call)."""
    return dict(word_scan().groupindex)


@lru_cache(maxsize=1)
def word_scan() -> Any:
    """One re2 pass for every word-led date form (month names, weekdays, ordinals, holidays):
    one scan costs about what each separate scan did."""
    holidays_alt = holiday_pattern().pattern[len("(?i)") :]
    return compile_words(r"(?i)" + _NAMED + _OTHER_WORD_FORMS + r"|(?P<hol>" + holidays_alt + r")")


_LEFT_BLOCK = frozenset("0123456789/.-")
# compiled once: a module-level ``re.split``/``re.sub`` call looks its pattern up on every call
_DELIM = re.compile(r"[/\-.]")
_NON_DIGIT = re.compile(r"\D")
_DAY_RANGE = re.compile(r"\s*[-–]\s*")
# Numeric dates whose separators stand between spaces, with a four-digit year.
_SPACED = re.compile(r"\b(\d{1,2}) ([/.\-]) (\d{1,2}) \2 ((?:19|20)\d\d)\b")
# Its shape without the edges and the back-reference, for the re2 prefilter and lead: the
# stdlib search stops at every digit of a note with " - " in it (~15 ms a MB).
_SPACED_SHAPE = compile_words(r"\p{Nd}{1,2} [/.\-] \p{Nd}{1,2} [/.\-] (?:19|20)\p{Nd}\p{Nd}")
_RANGE_NEXT = re.compile(r"\s*(?:-|to\b|->)")


def _blocked_after(nxt: str, chars: str) -> bool:
    """The number continues: a digit, one of ``chars``, or a decimal/range digit after it."""
    head = nxt[:1]
    return (
        head.isdigit()
        or (head != "" and head in chars)
        or (head in (".", "-") and nxt[1:2].isdigit())
    )


def _valid_md(month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= 31


def _valid_year(part: str) -> bool:
    return len(part) == 2 or (len(part) == 4 and 1900 <= int(part) <= 2099)


def _range_end(text: str, start: int, spans: list[Span]) -> bool:
    """The second date of a range: right after a dash that closes a date found just before
    ("3/2/19-3/9/19")."""
    return text[start - 1] == "-" and bool(spans) and spans[-1].end == start - 1


def _day_range(text: str, start: int, end: int, parts: list[str], delims: list[str]) -> float:
    """Two month/day pairs: "7/22-7/25" (4 parts) or with one year "6/5-6/8/2017" (5 parts);
    two month/year pairs: "12/2018-01/2019"."""
    if len(parts) == 4 and len(parts[1]) == len(parts[3]) == 4:  # "12/2018-01/2019"
        years = _valid_year(parts[1]) and _valid_year(parts[3])
        return 0.85 if years and 1 <= int(parts[0]) <= 12 and 1 <= int(parts[2]) <= 12 else 0.0
    if len(parts) == 4:
        a, b, c, d = (int(p) for p in parts)
        if delims in (["/", "/", "/"], ["/", "-", "/"]) and _valid_md(a, b) and _valid_md(c, d):
            if clinical.vital_before(text, start) or clinical.unit_follows(text, end):
                return 0.0
            if clinical.is_fraction(a, b) and clinical.is_fraction(c, d):
                return 0.0
            return 0.85
        return 0.0
    m1, d1, m2, d2, year = parts
    ok = delims == ["/", "-", "/", "/"] and _valid_year(year)
    return 0.9 if ok and _valid_md(int(m1), int(d1)) and _valid_md(int(m2), int(d2)) else 0.0


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
        for m in (
            led_finditer(text, _NUMERIC_SHAPE, _NUMERIC) if may_match(doc, _NUMERIC_SHAPE) else ()
        ):
            start = m.start()
            if (
                (start and text[start - 1] in _LEFT_BLOCK)
                and not (text[start - 1] in ".-" and text[start - 2 : start - 1].isalpha())
                and not _range_end(text, start, spans)
            ):
                continue
            conf = self._numeric(text, start, m.end(), m.group())
            if conf:
                day = self.weekdays and _WEEKDAY_BEFORE.search(text, max(0, start - 12), start)
                if day:
                    start = day.start()
                spans.append(Span(start, m.end(), Category.DATE, conf, self.name))
        if (" / " in text or " - " in text or " . " in text) and may_match(doc, _SPACED_SHAPE):
            # "03 / 14 / 2019": separators set apart
            for m in led_finditer(text, _SPACED_SHAPE, _SPACED):
                if _valid_md(int(m.group(1)), int(m.group(3))) or _valid_md(
                    int(m.group(3)), int(m.group(1))
                ):
                    spans.append(Span(m.start(), m.end(), Category.DATE, 0.85, self.name))
        index = word_groups()
        hol, dash, ordinal, glued, vague = (
            index[name] for name in ("hol", "dash", "ord", "glued", "vague")
        )
        for m in finditer(doc, word_scan()):
            if grab(text, m, hol):
                spans.append(Span(m.start(), m.end(), Category.DATE, 0.85, self.name))
            elif grab(text, m, dash):
                self._cued_dash(text, m.start(dash), m.end(dash), spans)
            elif grab(text, m, ordinal):
                self._ordinal(text, m, ordinal, spans)
            elif grab(text, m, glued) or grab(text, m, vague):
                spans.append(Span(m.start(), m.end(), Category.DATE, 0.8, self.name))
            else:
                span = self._named(text, m, index)
                if span is not None:
                    spans.append(span)
        return spans

    def _cued_dash(self, text: str, start: int, end: int, spans: list[Span]) -> None:
        nxt = text[end : end + 2]
        if (
            (start and text[start - 1] in _LEFT_BLOCK)
            or nxt[:1] in ("-", "/")
            or (nxt[:1] == "." and nxt[1:].isdigit())
        ):
            return
        after = words_after(text, end, 1, 20)
        if after and after[0].endswith("s") and len(after[0]) > 3:
            return  # "on 1-2 pillows"
        a, b = (int(p) for p in text[start:end].split("-"))
        if _valid_md(a, b) and not clinical.clinical_number(text, start, end):
            spans.append(Span(start, end, Category.DATE, 0.7, self.name))

    def _ordinal(self, text: str, m: Any, group: int, spans: list[Span]) -> None:
        # "it's the 11th.", "on the 3rd at noon" — not "the 4th ventricle", "the 2nd try"
        before = words_before(text, m.start(), 1, 16)
        if not (before and before[0] in _ORDINAL_CUES) or not 1 <= int(m.group(group)) <= 31:
            return
        rest = text[m.end() : m.end() + 12].lstrip(" ")
        after = words_after(text, m.end(), 1, 12)
        if rest[:1] in _ORDINAL_OK_AFTER or (after and after[0] in _ORDINAL_OK_AFTER):
            spans.append(Span(m.start(group), m.end(), Category.DATE, 0.7, self.name))

    def _numeric(self, text: str, start: int, end: int, value: str) -> float:
        parts = _DELIM.split(value)
        delims = _DELIM.findall(value)
        if len(parts) == 3 and delims[0] == delims[1]:
            a, b, c = parts
            if len(a) == 4:
                ok = 1900 <= int(a) <= 2099 and _valid_md(int(b), int(c))
                return 0.95 if ok else 0.0
            if not _valid_year(c):
                return 0.0
            if _valid_md(int(a), int(b)) or _valid_md(int(b), int(a)):
                if clinical.unit_follows(text, end) or clinical.vital_before(text, start):
                    return 0.0
                if clinical.vent_context(text, start, end):
                    return 0.0
                return 0.8 if delims[0] == "." else 0.92
            return 0.0
        if len(parts) in (4, 5):
            return _day_range(text, start, end, parts, delims)
        if len(parts) != 2:
            return 0.0
        a_s, b_s = parts
        a, b = int(a_s), int(b_s)
        delim = delims[0]
        if delim == "." or not 1 <= a <= 12 or len(a_s) > 2:
            return 0.0
        if clinical.unit_follows(text, end) or clinical.vital_before(
            text, start, 3, clinical.SLASH_VALUE_CUES
        ):
            return 0.0
        before = text[max(0, start - 2) : start]
        if before[-1:] in {"+", "*", "~"} or (
            before[-1:] in {"-", "x", "X"} and not before[:1].isalpha()
        ):
            return 0.0  # "+3/6 SEM", "5-6/3-4", "600x4/5"; but "UO-9/10", "fx4/97" are labels
        if clinical.vent_context(text, start, end):
            return 0.0
        word = words_before(text, start, 1, 16)
        cue = any(w in DATE_CUES for w in word)  # "on 7/22"
        if len(b_s) <= 2 and 1 <= b <= 31:
            strong = a == b and bool(set(word) & _STRONG_CUES)
            if clinical.is_score(a, b, text, start, end) and not strong:
                return 0.0  # "5/5 strength" — but "post 3/3" is a date
            if clinical.is_fraction(a, b) and not cue:
                return 0.0
            return 0.9 if cue else 0.75
        if (len(b_s) == 2 and b > 31) or (len(b_s) == 4 and _valid_year(b_s)):
            return 0.8 if cue else 0.65  # month/year: "8/88", "5/2017"
        return 0.0

    def _named(self, text: str, m: Any, index: dict[str, int]) -> Span | None:
        def g(name: str) -> Any:
            return grab(text, m, index[name])

        month = (g("m") or g("m2") or "").lower()
        day_before, day_after = g("d1"), g("d2") or g("d3")
        year = g("y")
        has_day = False
        for after, d in ((False, day_before), (True, day_after)):
            if d:
                num = int(_NON_DIGIT.sub("", _DAY_RANGE.split(d, 1)[0]))  # "8-10": the 8th
                if 1 <= num <= 31:
                    has_day = True
                elif after and not year and len(d) == 2:
                    year = d  # "Jan 93"
                else:
                    return None
        start, end = m.start(), m.end()
        if g("wd") and not self.weekdays:
            start = m.start(
                index["rel"]
                if g("rel")
                else index["d1"]
                if g("d1")
                else index["m"]
                if g("m")
                else index["m2"]
            )
        if month in _AMBIGUOUS_MONTHS:
            if not (has_day or year or g("rel")):
                return None
            if day_after and not year and clinical.unit_follows(text, end):
                return None
            if (day_before and not day_after and not year) and (
                day_before.isdigit() and " of" not in text[start:end].lower()
            ):
                return None  # "nc 02 dec from 4": needs "2nd dec" or "2 of dec"
        if has_day or year:
            conf = 0.92
        elif len(month) > 3 and month not in {"june", "august"}:
            conf = 0.8
        else:
            conf = 0.7
        return Span(start, end, Category.DATE, conf, self.name)


# --- years alone --------------------------------------------------------------------

# Clinical events after which a bare year dates the patient's history ("MI 92", "CABG '95").
EVENT_WORDS = word_set("history_events")
_YEAR_LEFT_BLOCK = frozenset("0123456789/.:-'")
_YEAR_CUES = word_set("date_year_cues")
_TIME_CUES = word_set("date_time_cues")

# One re2 pass: '95, 74', 4-digit years and 2-digit years after an event word. re2 has no
# look-around, so the edges are checked in Python (few matches: ~0.2 a note).
_YEAR_SCAN = compile_words(
    r"(?i)'(?P<a1>\d{2})|(?P<a2>\d{2})'|(?P<four>(?:1[89]|20)\d\d)"
    r"|\b(?:" + "|".join(sorted(EVENT_WORDS, key=len, reverse=True)) + r"|\w{1,4}mi)\b"
    r"(?:\s+(?:in|x\s?\d))?\s*,?\s+(?P<ev>\d{2})\b"
    r"|(?P<pre>\d{2})\s+(?:" + "|".join(sorted(EVENT_WORDS, key=len, reverse=True)) + r")\b"
)
_YG = dict(_YEAR_SCAN.groupindex)  # numbers: re2 name lookups are slow
_A1, _A2, _FOUR, _PRE, _EV = (_YG[name] for name in ("a1", "a2", "four", "pre", "ev"))
_CLAUSE_START = frozenset(".,;:\n(")
_CHAIN = re.compile(r"\s*(?:,|and|&|/)\s*'?(\d{4}|\d{2})\b'?(?![\d/%:.\-])")


@register("years")
class YearRecognizer(Recognizer):
    """Years alone where they date the patient's history: apostrophe years ('95, 74'),
    4-digit years that cannot be clock times or follow a year cue, and 2-digit years right
    after a clinical event word ("MI 92", "CVA in 94 and 00")."""

    categories = frozenset({Category.DATE})

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        found: list[Span] = []
        for m in finditer(doc, _YEAR_SCAN):
            four = grab(text, m, _FOUR)  # most matches: 4-digit numbers
            if four:
                start, end = m.start(), m.end()
                nxt = text[end : end + 2]
                if (start and text[start - 1] in _YEAR_LEFT_BLOCK) or _blocked_after(nxt, "/%:"):
                    continue
                conf = self._four(text, start, end, four)
            elif grab(text, m, _A1):  # '95
                start, end = m.start(_A1), m.end(_A1)
                nxt = text[end : end + 2]
                if (m.start() and text[m.start() - 1].isdigit()) or _blocked_after(nxt, "'\"/"):
                    continue  # 5'10"
                conf = 0.0 if clinical.unit_follows(text, end) else 0.85
            elif grab(text, m, _A2):  # 74'
                start, end = m.start(_A2), m.end(_A2)
                if (
                    (start and text[start - 1] in _YEAR_LEFT_BLOCK)
                    or text[end + 1 : end + 2] in ("'", '"', "s", "S")
                    or text[end + 1 : end + 2].isdigit()
                ):
                    continue
                before = words_before(text, start, 1, 30)
                # "ambulated 30'", "HOB 30'" are feet and degrees
                ok = bool(before) and (before[0] in EVENT_WORDS or before[0] == "in")
                conf = 0.8 if ok else 0.0
            elif grab(text, m, _PRE):  # "PMH: ... NIDDM. 09 PTCA to LCX"
                start, end = m.start(_PRE), m.end(_PRE)
                head = text[max(0, start - 3) : start].rstrip(" \t")
                decimal = head[-1:] == "." and head[-2:-1].isdigit()  # "ca 1.08 ..."
                conf = 0.6 if (start == 0 or head[-1:] in _CLAUSE_START) and not decimal else 0.0
            else:
                start, end = m.start(_EV), m.end(_EV)
                nxt = text[end : end + 2]
                if _blocked_after(nxt, "/%:"):
                    continue
                decade = nxt[:1] == "'" and text[end + 1 : end + 2] in ("s", "S")  # "afib 90's"
                plain = nxt[:1] != "'" and not clinical.unit_follows(text, end)
                conf = 0.0 if decade else (0.8 if nxt[:1] == "'" else (0.75 if plain else 0.0))
            if conf:
                found.append(Span(start, end, Category.DATE, conf, self.name))
        # chained years: "CABG 1957, 1971", "CVA in 94 and 00"
        extra: list[Span] = []
        for span in found:
            pos = span.end
            while True:
                c = _CHAIN.match(text, pos)
                if not c or clinical.unit_follows(text, c.end()):
                    break
                extra.append(Span(c.start(1), c.end(1), Category.DATE, span.confidence, self.name))
                pos = c.end()
        return found + extra

    def _four(self, text: str, start: int, end: int, value: str) -> float:
        if clinical.unit_follows(text, end) or clinical.time_follows(text, end):
            return 0.0
        before = words_before(text, start, 2, 24)
        prev = before[-1] if before else ""
        if prev in EVENT_WORDS:
            return 0.85  # "CA 1977" is cancer in 1977, not a calcium value
        if clinical.vital_before(text, start, 2):
            return 0.0
        if not clinical.is_hhmm(value):
            return 0.85 if (prev in _YEAR_CUES or prev in EVENT_WORDS) else 0.7
        # could be a clock time ("at 2000", "1900-0700"): needs a year reading
        nxt = text[end : end + 3]
        if _RANGE_NEXT.match(nxt):
            return 0.0
        if prev in _TIME_CUES and prev not in {"since", "from", "until"}:
            return 0.0
        if prev in EVENT_WORDS or prev in {"year", "yr", "is", "its", "it's", "circa", "c"}:
            return 0.8
        if prev in {"in", "of"}:
            return 0.75
        if prev == "since" and int(value[2:]) % 5:
            return 0.7  # "since 2006"; "since 2000" is as likely a clock time
        return 0.0
