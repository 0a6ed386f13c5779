"""The shapes of dates, as regular expressions: numeric dates, month names, weekdays, ordinals
and holidays (the scans the passes of :mod:`pipelines.phi.recognizers.dates` judge).

Digit-led shapes use the stdlib ``re`` (its prefix search skips to the next digit); the word-led
forms are one re2 alternation (``word_scan``), with a shape of each digit-led pattern for the
shared re2 prefilter (``scan.may_match``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from pipelines.phi.recognizers.date_numeric import COMPACT_WEAK_CUES, STRONG_CUES
from pipelines.phi.scan import compile_words, stand_in

# Slash dates (with ranges and pairs), dash and dot dates with a year. The left boundary is
# checked in Python: a leading look-behind would cost the regex its fast digit prefix search.
_NUMERIC_BODY = (
    r"\d{1,4}(?:/\d{1,4}(?:[/\-]\d{1,4}){0,3}|-\d{1,2}-\d{2,4}|\.\d{1,2}\.\d{2,4}"
    r"|/\d{1,2}\.\d\d(?:\d\d)?"  # a slash, then a dot before the year: "5/17.88"
    r"|[-.](?:19|20)\d\d)"  # month and year with a dash or a dot: "12-1998", "12.1998"
)
# "\d\d{0,3}" is "\d{1,4}" (the same matches) opening with a digit class, so the stdlib search
# skips to the next digit in C instead of trying a match at every position
# A dash and digits after a date block it ("3/4-5"), unless a second slash date follows: a
# range of dates, "3/2/19-3/9/19", "12/2018-01/2019", gives two dates.
_NUMERIC_END = r"(?![\d/]|\.\d|-\d+(?![\d/]))"
_NUMERIC = re.compile(r"\d\d{0,3}" + _NUMERIC_BODY.removeprefix(r"\d{1,4}") + _NUMERIC_END)
# The same shape without the look-ahead, for the shared re2 prefilter (``scan.may_match``):
# where it matches nowhere, ``_NUMERIC`` cannot match either (half the notes). ``\p{Nd}``:
# Python's ``\d`` takes every Unicode decimal digit, re2's only 0-9.
_NUMERIC_SHAPE = compile_words(_NUMERIC_BODY.replace(r"\d", r"\p{Nd}"))
# Its stand-in in the prefilter's sets (``scan.stand_in``): a digit and what must follow the
# first run of digits match somewhere exactly where the shape does (a leading run of digits
# holds its last digit; an optional or repeated tail its first step), with fewer states.
_ND = r"\p{Nd}"
stand_in(
    _NUMERIC_SHAPE,
    _ND + r"(?:/" + _ND + r"|-" + _ND + r"{1,2}-" + _ND + _ND + r"|\." + _ND + r"{1,2}\." + _ND + _ND
    + r"|[-.](?:19|20)" + _ND + _ND + r")",
)  # fmt: skip

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
# Blanks within a line: a date never runs on to the next line ("4 Apr, 87" then a line
# opening "2000 - 0800" is a date and a clock time, not one date). ``_TO``: a day range.
_B = r"[ \t]"
_TO = _B + r"*(?:->|[-–])" + _B + r"*"  # "9-10 Apr", "9->10 Apr"
_NAMED = (
    r"(?:\b(?P<wd>" + _WEEKDAY + r")\.?,?" + _B + r"+)?"
    r"(?:\b(?P<rel>early|mid|late)[ \t\-]+)?"
    r"(?:\b(?:the" + _B + r"+)?(?P<d1>" + _ORD + r"(?:" + _TO + _ORD + r")?)"
    r"(?:" + _B + r"+of)?(?:[ \t\-]*|[/.]))?"  # "3 Dec", "3-Dec", "03/Dec/98", "3.Dec.98"
    r"(?:\b" + _MONTH + r"\.?" + _B + r"*[-–]" + _B + r"*)?"  # a range of months: "Jan-Mar 2019"
    r"(?:\b(?P<m>"
    + _MONTH
    + r")\b\.?(?:[ \t\-,/]*(?:the"
    + _B
    + r"+)?(?P<d2>"
    + _ORD
    + r"(?:"
    + _TO
    + _ORD
    + r")?)\b)?"
    r"|\b(?P<m2>" + _MONTH + r")(?P<d3>\d{1,2})\b)"
    # the year: "March 3, 2019", "MARCH of 2019", "14-MAR-2019", "Mar/2019", "Dec of 98"
    r"(?:(?:,?" + _B + r"*(?:of" + _B + r"+)?|" + _B + r"*[\-/]" + _B + r"*)"
    r"(?P<y>'?(?:1[89]|20)\d\d\b|'\d{2}\b|," + _B + r"*\d{2}\b|of" + _B + r"+'?\d{2}\b))?"
)
# Where ``_NAMED`` matches, for the prefilter's sets (``scan.stand_in``): its month, alone as a
# word or with its day glued on; what may stand around them (weekday, day, range, year) is
# optional, so the two match somewhere in the same texts.
_NAMED_PRESENCE = r"\b(?:" + _MONTH + r"\b|" + _MONTH + r"\d{1,2}\b)"
# Other word-led forms, scanned in the same re2 pass: month-day with a dash after a date
# cue ("BC from 3-5", "back to OR on 7-8", "DOS: 3-5"), "the 11th", vague years ("mid-2012").
_OTHER_WORD_FORMS = (
    r"|\b(?:(?:on|from|since|until|till|dated)" + _B + r"+"
    r"|(?:dos|d\.o\.s\.?)" + _B + r"*:?" + _B + r"*)(?P<dash>\d{1,2}-\d{1,2})\b"
    r"|\bthe" + _B + r"+(?P<ord>\d{1,2})(?:st|nd|rd|th)\b"
    r"|\b(?P<vague>early|mid|late)[ \t\-]+(?P<vy>(?:19|20)\d\d)\b"
    r"|\b(?P<quarter>q[1-4][ \t]+(?:19|20)\d\d)\b"  # a quarter of a year: "Q2 2019"
    r"|\b(?P<glued>\d{1,2}" + _MONTH + r"(?:19|20)?\d\d)\b"  # "14MAR2019", "3jan19"
    # six digits, MMDDYY (or eight, MMDDYYYY), right after a date cue: "DOB 071588", "born:
    # 120387", "fell on 071588" (a six-digit number alone is a count, a dose or a code); the
    # right edge, and
    # after a weak cue a real calendar day and no lab's value, are checked in the passes
    r"|\b(?P<sixcue>"
    + "|".join(re.escape(c) for c in sorted(STRONG_CUES | COMPACT_WEAK_CUES, key=len, reverse=True))
    + r"|d\.o\.[bs]\.?)[ \t]*[:#]?[ \t]*(?:(?P<six>\d{4}(?:19|20)\d\d|\d{6})"
    # or month, day and year set apart by blanks: "admitted 3 12 98", "DOB 11 4 1931"
    r"|(?P<blank>\d{1,2}[ \t]\d{1,2}[ \t](?:19|20)?\d\d))"
)


@lru_cache(maxsize=1)
def holiday_pattern() -> Any:
    """A re2 pattern of US holiday names from the ``holidays`` package, plus short forms
    shared by several names ("Christmas" from "Christmas Day" / "Christmas Eve"): the names
    are read from the copy shipped beside the package (``pipelines.phi.holiday_names``)."""
    from pipelines.phi import holiday_names

    names = [*holiday_names.shipped(), "Xmas", "X-mas", "Xmas Eve"]  # short forms
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
    others = _OTHER_WORD_FORMS + r"|(?P<hol>" + holidays_alt + r")"
    scan = compile_words(r"(?i)" + _NAMED + others)
    stand_in(scan, r"(?i)" + _NAMED_PRESENCE + others)
    return scan


# Numeric dates whose separators stand between spaces, with a four-digit year.
_SPACED = re.compile(r"\b(\d{1,2}) ([/.\-]) (\d{1,2}) \2 ((?:19|20)\d\d)\b")
# Its shape without the edges and the back-reference, for the re2 prefilter and lead: the
# stdlib search stops at every digit of a note with " - " in it (~15 ms a MB).
_SPACED_SHAPE = compile_words(r"\p{Nd}{1,2} [/.\-] \p{Nd}{1,2} [/.\-] (?:19|20)\p{Nd}\p{Nd}")
