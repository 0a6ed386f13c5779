"""How sure a numeric date is: the checks of the ``dates.numeric`` pass, one per layout.

Layouts (``numeric_confidence`` dispatches on the number of parts): a full date with a year
("3/14/2019", "2019-03-14", "14.3.19"), a month/day or month/year ("7/22", "8/88", "5/2017"),
and ranges ("7/22-7/25", "6/5-6/8/2017", "12/2018-01/2019"). Clinical numbers of the same
shapes are vetoed by named checks (:data:`SLASH_VETOES`): a unit after ("5/10 mg"), a value
cue before ("BP 120/80", "PSV 10/5"), a sign before ("+3/6 SEM"), ventilator words around.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import Final

from pipelines.phi import clinical
from pipelines.phi.scan import words_after, words_before
from pipelines.phi.wordlists import word_set

# Words before a number that make a date reading likely ("on 7/22", "since 3-5").
DATE_CUES = word_set("date_cues")

# Cues after which even "3/3" reads as a date ("post 3/3"; "on 5/5" is a vent setting).
STRONG_CUES = DATE_CUES - word_set("date_cues_weak")

# "fell on 3/3", "Tuesday 3/3": an event and a weak cue, or a weekday, before an equal pair
_EVENTS: Final = word_set("date_event_words")
_WEEKDAYS: Final = word_set("tagger_weekdays") - {"sat", "sun"}  # "O2 sat 3/3", "sun"
_WEAK_CUES: Final = word_set("date_cues_weak")
_DOSE_AFTER: Final = word_set("date_pair_dose_after")

# "urine cx 3/4 gm neg rods": a specimen cultured per sample, then a culture word, or one
# word for both ("ucx": urine, "scx": sputum, "wcx": wound culture)
_SPECIMENS: Final = word_set("date_culture_specimens")
_CULTURE_WORDS: Final = frozenset({"cx", "cult", "culture", "cultures"})
_SPECIMEN_CULTURES: Final = frozenset({"ucx", "scx", "wcx"})

# Weak cues after which six digits may still be a date MMDDYY ("fell on 071588", "since
# 021285"): not "of", "as", "by" ("platelets of 101000", "up by 110000").
COMPACT_WEAK_CUES: Final = frozenset({"on", "from", "last", "next", "starting", "started"})

_DELIM = re.compile(r"[/\-.]")  # compiled once: module-level re.split looks it up per call

# A cue written as a dotted initialism before the number: "D.O.B. 3/3/31", "d.o.s: 4/19"
# (the word scan reads "D.O.B." as three one-letter words)
_DOTTED_BEFORE = re.compile(r"((?:[A-Za-z]\.){2,}[A-Za-z]?)\.?[ \t]*[:#\-]?[ \t]*$")

# A count after a pair: "from 4/19 days 1-3", "blood cx 4/19 x 2" (the unit word heads the
# count that follows it, it measures no pair)
_COUNT_WORDS: Final = frozenset({"x", "times", "day", "days"})


def cue_before(text: str, start: int, window: int = 16) -> list[str]:
    """The word right before ``start`` (or nothing), lower-case, a dotted initialism read as
    one word without its dots ("D.O.B." -> "dob")."""
    word = words_before(text, start, 1, window)
    if word and len(word[0]) == 1:
        dotted = _DOTTED_BEFORE.search(text, max(0, start - 12), start)
        if dotted is not None:
            return [dotted.group(1).replace(".", "").lower()]
    return word


def valid_md(month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= 31


_MONTH_DAYS: Final = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def calendar_md(month: int, day: int) -> bool:
    """A day the month has ("02/30" is no date)."""
    return 1 <= month <= 12 and 1 <= day <= _MONTH_DAYS[month - 1]


def valid_year(part: str) -> bool:
    return len(part) == 2 or (len(part) == 4 and 1900 <= int(part) <= 2099)


def numeric_confidence(text: str, start: int, end: int, value: str) -> float:
    """The confidence that ``value`` (a ``_NUMERIC`` match at ``start``) is a date; 0: not."""
    parts = _DELIM.split(value)
    delims = _DELIM.findall(value)
    if len(parts) == 3 and delims[0] == delims[1]:
        return _full_date(text, start, end, parts, delims[0])
    if len(parts) == 3 and delims == ["/", "."]:
        return _slash_dot_date(text, start, end, parts)
    if len(parts) == 3 and delims == ["/", "-"] and len(parts[2]) <= 2:
        return _day_range(text, start, end, parts)
    if len(parts) == 4:
        return _two_pairs(text, start, end, parts, delims)
    if len(parts) == 5:
        return _pairs_with_year(parts, delims)
    if len(parts) == 2:
        return _month_day(text, start, end, parts[0], parts[1], delims[0])
    return 0.0


def _full_date(text: str, start: int, end: int, parts: list[str], delim: str) -> float:
    """Year first ("2019-03-14") or last ("3/14/2019", "14.3.19"; either order of month/day)."""
    a, b, c = parts
    if len(a) == 4:
        ok = 1900 <= int(a) <= 2099 and valid_md(int(b), int(c))
        return 0.95 if ok else 0.0
    if not valid_year(c) or not (valid_md(int(a), int(b)) or valid_md(int(b), int(a))):
        return 0.0
    if clinical.pair_unit_follows(text, end) or clinical.vital_before(text, start):
        return 0.0
    if clinical.vent_context(text, start, end):
        return 0.0
    return 0.8 if delim == "." else 0.92


def _slash_dot_date(text: str, start: int, end: int, parts: list[str]) -> float:
    """ "5/17.88": month/day, then a dot before the year. "2/2.45" is as likely a value, so
    the day must be one no month can be (13-31) or a date cue must come before."""
    a, b = int(parts[0]), int(parts[1])
    if len(parts[2]) == 4 and not valid_year(parts[2]):
        return 0.0
    if not valid_md(a, b) or (b < 13 and not _date_cue_before(text, start)):
        return 0.0
    if clinical.unit_follows(text, end) or clinical.vital_before(text, start):
        return 0.0
    if clinical.vent_context(text, start, end):
        return 0.0
    return 0.8


def _day_range(text: str, start: int, end: int, parts: list[str]) -> float:
    """A range of days in one month: "seen 3/2-9" (the 2nd to the 9th of March); the pair
    is judged as a month/day, and the last day comes after the first, within three weeks
    ("1/2-1 tab", "2/3-4 h" are doses)."""
    first, last = int(parts[1]), int(parts[2])
    if not 0 < last - first <= 21 or last > 31:
        return 0.0
    return _month_day(text, start, end, parts[0], parts[1], "/")


def _date_cue_before(text: str, start: int) -> bool:
    return any(w in DATE_CUES for w in cue_before(text, start))


def _two_pairs(text: str, start: int, end: int, parts: list[str], delims: list[str]) -> float:
    """Two month/year pairs ("12/2018-01/2019") or two month/day pairs ("7/22-7/25")."""
    if len(parts[1]) == len(parts[3]) == 4:  # "12/2018-01/2019"
        years = valid_year(parts[1]) and valid_year(parts[3])
        return 0.85 if years and 1 <= int(parts[0]) <= 12 and 1 <= int(parts[2]) <= 12 else 0.0
    a, b, c, d = (int(p) for p in parts)
    if delims not in (["/", "/", "/"], ["/", "-", "/"]) or not (valid_md(a, b) and valid_md(c, d)):
        return 0.0
    if clinical.vital_before(text, start) or clinical.unit_follows(text, end):
        return 0.0
    if clinical.is_fraction(a, b) and clinical.is_fraction(c, d):
        return 0.0
    return 0.85


def _pairs_with_year(parts: list[str], delims: list[str]) -> float:
    """Two month/day pairs and one year: "6/5-6/8/2017"."""
    m1, d1, m2, d2, year = parts
    ok = delims == ["/", "-", "/", "/"] and valid_year(year)
    return 0.9 if ok and valid_md(int(m1), int(d1)) and valid_md(int(m2), int(d2)) else 0.0


def _unit_after(text: str, start: int, end: int, a: int, b: int) -> bool:
    """A unit a pair can carry: "2/4 mg" (not "4/19 c chest pain", "4/19 gm neg rods"),
    unless a date cue or an event right before reads it as a date ("seen 4/19 L arm")."""
    if not clinical.pair_unit_follows(text, end):
        return False
    return not (_date_context(text, start, a, b) or _count_after_date(text, start, end, a, b))


def _count_after_date(text: str, start: int, end: int, a: int, b: int) -> bool:
    """A count after a pair that a date cue or a culture word reads as a date: "from 4/19
    days 1-3", "started 3/2 day 5", "blood cx 4/19 x 2" (the unit word heads the count that
    follows it); not a small fraction ("on 1/2 x 2") nor after a measurement's cue ("PS on
    5/10 x 2")."""
    after = words_after(text, end, 2, 16)
    if len(after) < 2 or after[0] not in _COUNT_WORDS or not after[1][:1].isdigit():
        return False
    if clinical.is_fraction(a, b) or _value_cue_near(text, start):
        return False
    word = cue_before(text, start)
    return bool(word) and (word[0] in DATE_CUES or word[0] in _CULTURE_WORDS)


def _dose(text: str, start: int, end: int, a: int, b: int) -> bool:
    """A combination drug's dose: a route or a dosing frequency right after ("Vytorin 10/20
    daily", "Lasix 10/20 iv"); not after a date cue ("seen 10/20 daily by PT"). A drug name
    before is no sign: "restart Coumadin 6/18" is a date."""
    after = words_after(text, end, 1, 12)
    if not after or after[0] not in _DOSE_AFTER:
        return False
    if not text[end : end + 12].lstrip(" \t").lower().startswith(after[0]):
        return False  # a stop between: "blood culture 9/30. iv rn up"
    return not _date_context(text, start, a, b)


def _date_context(text: str, start: int, a: int, b: int) -> bool:
    """A date cue that is no everyday word ("seen", "admitted") or an event ("fell",
    "visit") right before a pair that is no small fraction: a date, whatever follows."""
    if clinical.is_fraction(a, b):
        return False
    before = cue_before(text, start)
    return bool(before) and (before[0] in STRONG_CUES or before[0] in _EVENTS)


def _vent_setting(text: str, start: int, end: int, a: int, b: int) -> bool:
    """Ventilator words around the pair: "AC 12/5", "SIMV/PS, 40%, & 5/8" (not "L AC 4/19")."""
    return clinical.vent_context(text, start, end)


def _vent_cue_near(text: str, start: int, end: int, a: int, b: int) -> bool:
    """A vent cue a few words before, no date cue between: "PS raised to 11/8 overnight"."""
    return clinical.vent_cue_near(text, start, 4, DATE_CUES)


def _value_cue_near(text: str, start: int) -> bool:
    """A measurement or setting cue among the three words before: "PS on 5/10 x 2"."""
    return any(
        w in clinical.SLASH_VALUE_CUES or w in clinical.VITAL_CUES
        for w in words_before(text, start, 3, 28)
    )


def _sign_before(text: str, start: int, end: int, a: int, b: int) -> bool:
    """ "+3/6 SEM", "5-6/3-4", "600x4/5"; but "UO-9/10", "fx4/97" are labels before a date."""
    before = text[max(0, start - 2) : start]
    return before[-1:] in {"+", "*", "~"} or (
        before[-1:] in {"-", "x", "X"} and not before[:1].isalpha()
    )


def _value_cue_before(text: str, start: int, end: int, a: int, b: int) -> bool:
    """A cue whose values are written "a/b" right before: "BP 120/80", "PSV 10/5"."""
    return clinical.vital_before(text, start, 3, clinical.SLASH_VALUE_CUES)


def _lab_trend(text: str, start: int, end: int, a: int, b: int) -> bool:
    """A measurement's last two values right after its name, close to each other and with
    no value after them: "WBC 11/12 this am", "Hgb 9/10 stable" (not "HCT 7/22 was 30",
    "WBC 3/4 12.0": a date, then the value)."""
    if abs(a - b) > max(2, max(a, b) // 4) or text[start - 1 : start] not in (" ", "\t"):
        return False  # "UO-9/10": a label glued to a date
    if not clinical.vital_before(text, start, 1):
        return False
    after = words_after(text, end, 1, 12)
    return not (after and after[0][:1].isdigit())


_COURSE_WORDS: Final = word_set("date_course_words")


def _course_step(text: str, start: int, end: int, a: int, b: int) -> bool:
    """A step of a course or a grade on a scale: "vanco day 5/7", "week 2/6 of chemo",
    "grade 2/6 murmur" (the first number no larger than the second, a slash between)."""
    if a > b or text[end - len(str(b)) - 1 : end - len(str(b))] != "/":
        return False
    two = words_before(text, start, 2, 24)
    if not two or two[-1] not in _COURSE_WORDS:
        return False
    return not (len(two) == 2 and two[0] in DATE_CUES)  # "seen day 3/14": a date


_STRENGTH_CUES: Final = word_set("date_strength_cues") | word_set("exclusion_body")


def _strength_grade(text: str, start: int, end: int, a: int, b: int) -> bool:
    """A muscle strength grade out of five after a limb or a strength word: "LLE 4/5", "grip
    3/5", "hip flexion 2/5" (not "seen 4/5": no such word before)."""
    if b != 5 or a > 5:
        return False
    word = words_before(text, start, 1, 16)
    return bool(word) and word[0] in _STRENGTH_CUES


# The vetoes of a two-part slash or dash number, by name, in the order they are asked.
# Each asks (text, start, end, first number, second number).
SLASH_VETOES: Final[tuple[tuple[str, Callable[[str, int, int, int, int], bool]], ...]] = (
    ("unit_after", _unit_after),
    ("dose", _dose),
    ("value_cue_before", _value_cue_before),
    ("sign_before", _sign_before),
    ("vent_setting", _vent_setting),
    ("vent_cue_near", _vent_cue_near),
    ("lab_trend", _lab_trend),
    ("course_step", _course_step),
    ("strength_grade", _strength_grade),
)


def _month_day(text: str, start: int, end: int, a_s: str, b_s: str, delim: str) -> float:
    """ "7/22" (month/day) or "8/88", "5/2017" (month/year), unless a clinical value."""
    a, b = int(a_s), int(b_s)
    if not _pair_shape_ok(text, start, a_s, b_s, delim):
        return 0.0
    if any(veto(text, start, end, a, b) for _, veto in SLASH_VETOES):
        return 0.0
    word = cue_before(text, start)
    cue = any(w in DATE_CUES for w in word) or _weekday_cue(word, a, b)  # "on 7/22"
    if len(b_s) <= 2 and 1 <= b <= 31:
        if _culture_before(text, start, word):
            return 0.85  # "urine cx 3/4 gm neg rods": no bottles to count, so a date
        return _day_reading(text, start, end, a, b, word, cue)
    if (len(b_s) == 2 and b > 31) or (len(b_s) == 4 and valid_year(b_s)):
        return 0.8 if cue else 0.65  # month/year: "8/88", "5/2017"
    return 0.0


def _weekday_cue(word: list[str], a: int, b: int) -> bool:
    """A weekday right before a pair: "Tuesday 3/4", "Wed 4/19"; before a small fraction
    only written in full ("Mon 1/2, Tue 1" is a dosing schedule)."""
    if not word or word[0] not in _WEEKDAYS:
        return False
    return word[0].endswith("day") or not clinical.is_fraction(a, b)


def _pair_shape_ok(text: str, start: int, a_s: str, b_s: str, delim: str) -> bool:
    """A month first (one or two digits); a dot only in "since 12.1998" (a two-digit month, a
    year, a date cue before): "1.2000", "3.14", "Ca 10.2000" are values."""
    if not 1 <= int(a_s) <= 12 or len(a_s) > 2:
        return False
    return delim != "." or (len(a_s) == len(b_s) // 2 == 2 and _date_cue_before(text, start))


def _culture_before(text: str, start: int, word: list[str]) -> bool:
    """A culture of a specimen taken per sample right before: "urine cx", "ucx", "sputum
    culture" (not "blood cx 2/4": bottles)."""
    return _said_before(text, start, word, _SPECIMEN_CULTURES, _CULTURE_WORDS, _SPECIMENS)


def _said_before(
    text: str,
    start: int,
    word: list[str],
    alone: AbstractSet[str],
    last: AbstractSet[str],
    first: AbstractSet[str],
) -> bool:
    """The word right before ``start`` (``word``: it, or nothing) is in ``alone``, or is in
    ``last`` with the word before it in ``first``."""
    if not word:
        return False
    if word[0] in alone:
        return True
    if word[0] not in last:
        return False
    two = words_before(text, start, 2, 32)
    return len(two) == 2 and two[0] in first


def _day_reading(
    text: str, start: int, end: int, a: int, b: int, word: list[str], cue: bool
) -> float:
    """A month/day: not a score ("5/5 strength"; but "post 3/3", "L AC 4/4") nor a small
    fraction (but "R AC 3/4")."""
    site = a <= b <= 5 and (
        clinical.iv_site_before(text, start) or clinical.iv_site_after(text, end)
    )
    strong = a == b and (bool(set(word) & STRONG_CUES) or _event_before(text, start, word) or site)
    if clinical.is_score(a, b, text, start, end) and not strong:
        return 0.0
    if clinical.is_fraction(a, b) and not (cue or site):
        return 0.0
    return 0.9 if cue else 0.75


def _event_before(text: str, start: int, word: list[str]) -> bool:
    """ "Tuesday 3/3", "fell on 3/3", "last BM on 2/2": a weekday right before the pair, or
    a weak cue right before it and an event before that."""
    return _said_before(text, start, word, _WEEKDAYS, _WEAK_CUES, _EVENTS)
