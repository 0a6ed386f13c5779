"""Years alone, where the text ties them to the patient (HIPAA keeps a year only when it does
not date the patient's history): "MI 1992", "s/p CABG '95", "in 2003", "CVA in 94 and 00".

The rules are passes (:mod:`pipelines.phi.patterns`) over one re2 scan: apostrophe years
('95, 74'), four-digit years that cannot be clock times or follow a year cue, two-digit years
right after or before a clinical event word, and the years chained to a year found ("CABG
1957, 1971").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

from pipelines import re2_boundary
from pipelines.phi import clinical
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.passes import declare
from pipelines.phi.patterns import Found, PatternPass, PatternPasses
from pipelines.phi.registry import register
from pipelines.phi.scan import compile_words, grab, words_before
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category, Span

# Clinical events after which a bare year dates the patient's history ("MI 92", "CABG '95").
EVENT_WORDS = word_set("history_events")
_YEAR_LEFT_BLOCK = frozenset("0123456789/.:-'")
_YEAR_CUES = word_set("date_year_cues")
_TIME_CUES = word_set("date_time_cues")
_EVENTS_RE = "|".join(sorted(EVENT_WORDS, key=len, reverse=True))

# One re2 pass: '95, 74', 4-digit years and 2-digit years after an event word. re2 has no
# look-around, so the edges are checked in Python (few matches: ~0.2 a note). "74'" takes the
# character after it, so that "the 80's" (the commonest match, always refused) is none: the
# next search starts at that character again (``_resume``).
_YEAR_SCAN = compile_words(
    r"(?i)'(?P<a1>\d{2})|(?P<a2>\d{2})'(?-i:[^sS]|\z)"
    r"|(?P<four>(?:1[89]|20)\d\d)"
    r"|\b(?:" + _EVENTS_RE + r"|\w{1,4}mi)\b"
    r"(?:\s+(?:in|x\s?\d))?\s*,?\s+(?P<ev>\d{2})\b"
    r"|(?P<pre>\d{2})\s+(?:" + _EVENTS_RE + r")\b"
    # "since the 90s", "back in the late 80s" (a time cue: "sats in the 90s" is a value)
    r"|\b(?:since|during|throughout|until|till|back\s+in)\s+the\s+(?:(?:early|mid|late)[\s-]+)?"
    r"(?P<dec>\d0)'?s\b"
)
_YG = dict(_YEAR_SCAN.groupindex)  # numbers: re2 name lookups are slow
_A1, _A2, _FOUR, _PRE, _EV, _DEC = (_YG[name] for name in ("a1", "a2", "four", "pre", "ev", "dec"))
# Two years a range apart ("1998-2001", "1965 to 1992"), asked where a four-digit year
# matched (a group of the scan would cost every note its states)
_YEAR_RANGE = re.compile(r"(?:1[89]|20)\d\d[ \t]*(?:-|–|[Tt][Oo]\b)[ \t]*((?:1[89]|20)\d\d)")
_CLAUSE_START = frozenset(".,;:\n(")
_CHAIN = re.compile(r"\s*(?:,|and|&|/)\s*'?(\d{4}|\d{2})\b'?(?![\d/%:.\-])")
_RANGE_NEXT = re.compile(r"\s*(?:-|[Tt][Oo]\b|->)")
# Words before a clock-shaped year ("2000") that make it a year: "MI in 2000", "year 2000".
_YEAR_WORDS: Final = frozenset({"year", "yr", "is", "its", "it's", "circa", "c"})
# Birth cues: "born 1931", "DOB 1945" (a clock time is "at 1931", never "born 1931")
_BIRTH_WORDS: Final = frozenset({"born", "dob"})
# Seasons: "Winter 2010", "since Fall 2005" (not "had a fall 2000": the article makes it the
# event, and "2000" the clock)
_SEASONS: Final = word_set("date_seasons")


def blocked_after(nxt: str, chars: str) -> bool:
    """The number continues: a digit, one of ``chars``, or a decimal/range digit after it."""
    head = nxt[:1]
    return (
        head.isdigit()
        or (head != "" and head in chars)
        or (head in (".", "-") and nxt[1:2].isdigit())
    )


@dataclass(slots=True)
class _Note:
    text: str
    chained_from: float = 0.0  # the confidence of the year a chain follows
    ranges: list[Found] = field(default_factory=list)  # found by ``years.span``
    covered: int = 0  # the end of the last range: its second year is not asked again


def _four(note: _Note, m: Any) -> Found | None:
    """A 4-digit year (1800-2099) that is no measurement and no clock time; or the first
    of two years a range apart, kept for ``years.span``."""
    text = note.text
    start, end = m.start(), m.end()
    if start < note.covered:
        return None
    pair = _YEAR_RANGE.match(text, start)
    if pair is not None and (found := _year_span(note, pair)) is not None:
        note.ranges.append(found)
        note.covered = found[1]
        return None
    if (start and text[start - 1] in _YEAR_LEFT_BLOCK) or blocked_after(text[end : end + 2], "/%:"):
        return None
    decade = _decade_end(text, end)
    if decade:  # "the 1990s", "2000's": a decade is never a clock time
        return (start, decade, Category.DATE, 0.8)
    conf = _four_confidence(text, start, end, grab(text, m, _FOUR))
    return (start, end, Category.DATE, conf) if conf else None


# A decade's ending after a year ending in 0: "1990s", "1990's", "'90s", "2000S"
_DECADE: Final = re.compile(r"(?<=0)'?[sS](?![\w'])")


def _decade_end(text: str, end: int) -> int:
    """The end of a decade's "s" right after the year ending at ``end``; 0 when none."""
    m = _DECADE.match(text, end)
    return m.end() if m else 0


def _four_confidence(text: str, start: int, end: int, value: str) -> float:
    if clinical.unit_follows(text, end) or clinical.time_follows(text, end):
        return 0.0
    before = words_before(text, start, 2, 24)
    prev = before[-1] if before else ""
    if prev in EVENT_WORDS:
        return 0.85  # "CA 1977" is cancer in 1977, not a calcium value
    if clinical.vital_before(text, start, 2):
        return 0.0
    if not clinical.is_hhmm(value):
        return 0.85 if prev in _YEAR_CUES else 0.7
    if _season_before(before):
        prev = "year"  # a season names a year: "Winter 2010", "since Fall 2005"
    return _clock_shaped(text, end, value, prev)


def _season_before(before: list[str]) -> bool:
    """A season right before, not an event after an article ("had a fall 2000")."""
    if not before or before[-1] not in _SEASONS:
        return False
    return len(before) < 2 or before[0] not in {"a", "another"}


def _year_span(note: _Note, m: Any) -> Found | None:
    """Two years a range apart: "1998-2001", "lived there 1985 to 1992" (not the clock
    times of a shift, "1900-2000": a range of two clock-shaped numbers needs a year cue)."""
    text = note.text
    start, end = m.start(), m.end()
    first, last = text[start : start + 4], m.group(1)
    if (start and text[start - 1] in _YEAR_LEFT_BLOCK) or blocked_after(text[end : end + 2], "/%:"):
        return None
    if not 0 < int(last) - int(first) <= 80 or clinical.unit_follows(text, end):
        return None
    before = words_before(text, start, 1, 12)
    cued = bool(before) and (before[0] in _YEAR_CUES or before[0] in EVENT_WORDS)
    if (
        clinical.is_hhmm(first)
        and clinical.is_hhmm(last)
        and not cued
        and _on_the_clock(first, last, before)
    ):
        return None
    if clinical.vital_before(text, start, 2) or clinical.time_follows(text, end):
        return None
    return (start, end, Category.DATE, 0.85 if cued else 0.75)


def _on_the_clock(first: str, last: str, before: list[str]) -> bool:
    """Two clock-shaped years read as a shift's clock times: both on the five-minute marks
    ("1900-2000", "2030-2045"), or after a time cue ("at 2006-2012"); else years ("2006-2017",
    "2003 to 2008")."""
    off = int(first[2:]) % 5 or int(last[2:]) % 5
    return not off or (bool(before) and before[0] in _TIME_CUES)


def _clock_shaped(text: str, end: int, value: str, prev: str) -> float:
    """A year that could be a clock time ("at 2000", "1900-0700"): it needs a year reading."""
    if _RANGE_NEXT.match(text[end : end + 3]):
        return 0.0
    if prev in _TIME_CUES and prev not in {"since", "from", "until"}:
        return 0.0
    if prev in _YEAR_WORDS or prev in _BIRTH_WORDS:
        return 0.8
    if prev in {"in", "of"}:
        return 0.75
    if prev == "since" and int(value[2:]) % 5:
        return 0.7  # "since 2006"; "since 2000" is as likely a clock time
    return 0.0


def _apostrophe_before(note: _Note, m: Any) -> Found | None:
    """'95: an apostrophe before two digits (not the inches of 5'10")."""
    text = note.text
    start, end = m.start(_A1), m.end(_A1)
    if (m.start() and text[m.start() - 1].isdigit()) or blocked_after(text[end : end + 2], "'\"/"):
        return None
    decade = _decade_end(text, end)  # "'90s"
    if decade:
        return (start, decade, Category.DATE, 0.85)
    return None if clinical.unit_follows(text, end) else (start, end, Category.DATE, 0.85)


def _apostrophe_after(note: _Note, m: Any) -> Found | None:
    """74': two digits and an apostrophe, after an event word or "in" ("HOB 30'" is degrees)."""
    text = note.text
    start, end = m.start(_A2), m.end(_A2)
    after = text[end + 1 : end + 2]
    if (start and text[start - 1] in _YEAR_LEFT_BLOCK) or after in ("'", '"', "s", "S"):
        return None
    if after.isdigit():
        return None
    before = words_before(text, start, 1, 30)
    ok = bool(before) and (before[0] in EVENT_WORDS or before[0] == "in")
    return (start, end, Category.DATE, 0.8) if ok else None


def _before_event(note: _Note, m: Any) -> Found | None:
    """Two digits opening a clause before an event word: "PMH: ... NIDDM. 09 PTCA to LCX"."""
    text = note.text
    start, end = m.start(_PRE), m.end(_PRE)
    head = text[max(0, start - 3) : start].rstrip(" \t")
    decimal = head[-1:] == "." and head[-2:-1].isdigit()  # "ca 1.08 ..."
    ok = (start == 0 or head[-1:] in _CLAUSE_START) and not decimal
    return (start, end, Category.DATE, 0.6) if ok else None


def _after_event(note: _Note, m: Any) -> Found | None:
    """Two digits right after an event word: "MI 92", "CVA in 94", "afib '90" (not "90's")."""
    text = note.text
    start, end = m.start(_EV), m.end(_EV)
    nxt = text[end : end + 2]
    if blocked_after(nxt, "/%:"):
        return None
    if nxt[:1] == "'":
        decade = text[end + 1 : end + 2] in ("s", "S")  # "afib 90's"
        return None if decade else (start, end, Category.DATE, 0.8)
    if clinical.unit_follows(text, end):
        return None
    return (start, end, Category.DATE, 0.75)


def _cued_decade(note: _Note, m: Any) -> Found | None:
    """A two-digit decade after a time cue and "the": "since the 90s", "during the '80s"."""
    return (m.start(_DEC), m.end(), Category.DATE, 0.75)


def _chained(note: _Note, c: Any) -> Found | None:
    """A year chained to a year found: "CABG 1957, 1971", "CVA in 94 and 00" (its confidence)."""
    if clinical.unit_follows(note.text, c.end()):
        return None
    return (c.start(1), c.end(1), Category.DATE, note.chained_from)


PASSES: Final = declare(
    PatternPasses[_Note](
        "years",
        [
            PatternPass("years.four", _four, "four", "years"),
            PatternPass("years.apostrophe_before", _apostrophe_before, "a1", "years"),
            PatternPass("years.apostrophe_after", _apostrophe_after, "a2", "years"),
            PatternPass("years.before_event", _before_event, "pre", "years"),
            PatternPass("years.decade", _cued_decade, "dec", "years"),
            PatternPass("years.after_event", _after_event, "", "years"),
            PatternPass("years.span", _year_span, "", "span"),
            PatternPass("years.chain", _chained, "", "chain"),
        ],
    )
)
_TABLE = PASSES.table("years", _YG)


def _chain(note: _Note, found: list[Span]) -> list[Span]:
    """The years chained after each year found (the ``years.chain`` pass)."""
    extra: list[Span] = []
    for span in found:
        note.chained_from = span.confidence
        c = _CHAIN.match(note.text, span.end)
        while c:
            chained = _chained(note, c)
            if chained is None:
                break
            extra.append(PASSES.make("years.chain", chained))
            c = _CHAIN.match(note.text, c.end())
    return extra


def _resume(m: Any) -> int:
    """Where the scan searches on after ``m``: its end, or for "74'" the character after it
    (looked at, not taken: as the scan without it would)."""
    end: int = m.end()
    digits: int = m.end(_A2)  # -1 when no "74'"
    return end - 1 if digits >= 0 and end == digits + 2 else end


@register("years")
class YearRecognizer(Recognizer):
    """Years alone where they date the patient's history: apostrophe years ('95, 74'),
    4-digit years that cannot be clock times or follow a year cue, and 2-digit years right
    after a clinical event word ("MI 92", "CVA in 94 and 00")."""

    categories = frozenset({Category.DATE})

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        found: list[Span] = []
        note = _Note(text)
        for m in re2_boundary.finditer_resuming(_YEAR_SCAN, text, _resume):
            PASSES.judge(_TABLE, note, text, m, found)
        found += [PASSES.make("years.span", pair) for pair in note.ranges]
        return found + _chain(note, found)
