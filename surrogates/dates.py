"""Date surrogates: every date of a patient moves by the patient's one shift, format kept.

Rules (hand-written: no date library both parses *and* re-emits a text in its own format):
- numeric dates keep order, separator, zero padding and year width ("07/22/2005" → "MM/DD/YYYY",
  "7/22" → "M/DD", "05" stays two digits); ``YYYY-MM-DD``, ``YYYYMMDD``, ``YYYY-MM``,
  ``MMDDYYYY`` / ``MMDDYY``, blanks ("3 12 98") and "5/17.88" too;
- month names keep full / abbreviated form, case and a trailing period; ordinals are recomputed;
- weekday names are recomputed from the shifted date in the same span, else moved by the
  shift modulo 7;
- a date without a year takes the year (reference year − 1, + 0 or + 1) that puts it
  closest to the reference date (the document's date); with no reference date, 2000;
- a year alone (``1992``, ``'92``, a bare ``92``) moves by the years that 2 July of that year
  moves; a month alone or month + year moves like the 15th of that month;
- a day alone ("the 12th") is of the month nearest the reference date;
- ranges keep order and length: "7/22-24", "3-9 Dec", "Dec 1-3, 1998", "1998-2001", "1998-99";
  an end written without a year or month takes the other end's;
- a holiday name is replaced by its shifted date as "Month D", since the name reveals the day;
- two-digit years are read in the century that puts them within (reference − 89, reference + 10].
Any span text with nothing recognisable as a date becomes ``[DATE]`` rather than be kept.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, timedelta

from surrogates.base import SpanLike, Surrogate, apply_edits
from surrogates.context import ReplaceContext
from surrogates.date_holidays import _holiday_names, _holidays_of
from surrogates.date_shapes import DECADE, QUARTER, decade, quarter

DEFAULT_REFERENCE_YEAR = 2000
MONTH_NAMES = [calendar.month_name[i] for i in range(1, 13)]
WEEKDAY_NAMES = [calendar.day_name[i] for i in range(7)]

_MONTH = (
    r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)(?P<mdot>\.)?"
)
_DAY = r"(?P<day>\d{1,2})(?P<ord>st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4}|'\d{2})"
# After a day a bare two-digit year needs a blank or comma before it ("Dec 3 98", not the
# "19" of "Dec 1998"); after a month name it may follow at once ("3Dec98"). Never a clock.
_YEAR_AFTER_DAY = r"(?P<year>\d{4}|'\d{2}|(?<=[\s,])\d{2}(?![:\d]))"
_YEAR_AFTER_MONTH = r"(?P<year>\d{4}|'?\d{2}(?![:\d]))"
_B = r"(?<![\w/])"  # left boundary
_E = r"(?![\w/])"  # right boundary
_NUM_B = r"(?<![\w/.-])"  # left boundary of a numeric date
_YEAR_LEFT = r"(?:(?<![\w/.-])|(?<=mid-)|(?<=early-)|(?<=late-))"  # and "mid-2004"
_NUM_YEAR = r"(?P<c>\d{4}|\d{2})(?![\w/:]|[.-]\d)"

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "compact",  # YYYYMMDD, also as the head of an HL7 timestamp (YYYYMMDDHHMM[SS])
        re.compile(
            _B + r"(?P<y>(?:19|20)\d{2})(?P<m>0[1-9]|1[0-2])(?P<d>[0-3]\d)"
            r"(?=(?:[0-2]\d[0-5]\d(?:[0-5]\d)?)?(?![\w/]))"
        ),
    ),
    # MMDDYYYY and MMDDYY ("07151988", "071588"); DDMM.. or YYMMDD when that is no date.
    ("compact_mdy", re.compile(_NUM_B + r"(?P<a>\d{2})(?P<b>\d{2})(?P<c>\d{4}|\d{2})" + _E)),
    (
        "dmy_name",  # "22 July 2005", "3rd of Dec", "12-Dec", "15-Dec-98", "03DEC1998"
        re.compile(
            _B
            + _DAY
            + r"(?:\s+(?:of\s+)?|[-/.]?)"
            + _MONTH
            + r"(?:(?:,?\s*|[-/.])"
            + _YEAR_AFTER_MONTH
            + r")?"
            + _E,
            re.I,
        ),
    ),
    (
        "mdy_name",  # "July 22, 2005", "Dec 3 98", "December the 3rd"
        re.compile(
            _B + _MONTH + r"\s*(?:the\s+)?" + _DAY + r"(?:,?\s*" + _YEAR_AFTER_DAY + r")?" + _E,
            re.I,
        ),
    ),
    (  # "3 12 98": month, day and year set apart by blanks
        "numeric_blanks",
        re.compile(_NUM_B + r"(?P<a>\d{1,2})(?P<sep> +)(?P<b>\d{1,2})(?P<sep2> +)" + _NUM_YEAR),
    ),
    # "5/17.88": a slash, then a period before the year
    (
        "numeric_mixed",
        re.compile(_NUM_B + r"(?P<a>\d{1,2})(?P<sep>/)(?P<b>\d{1,2})(?P<sep2>\.)" + _NUM_YEAR),
    ),
    (
        "numeric",
        re.compile(
            _NUM_B + r"(?P<a>\d{1,4})(?P<sep>[/.-])(?P<b>\d{1,2})(?:(?P=sep)(?P<c>\d{4}|\d{2}))?"
            r"(?:(?![\w/]|[.-]\d)|(?=T\d))"
        ),
    ),
    ("month_year_num", re.compile(_NUM_B + r"(?P<m>\d{1,2})(?P<sep>[/-])(?P<y>\d{4})" + _E)),
    (
        "month_year",  # "July 2005", "Dec of 98", "Dec-98", "DEC98", "Dec. '98"
        re.compile(_B + _MONTH + r"(?:,?\s*|\s+of\s+|[-/])" + _YEAR_AFTER_MONTH + _E, re.I),
    ),
    ("ordinal_day", re.compile(_B + r"(?P<day>\d{1,2})(?P<ord>st|nd|rd|th)" + _E, re.I)),
    ("month", re.compile(_B + _MONTH + r"(?![\w])", re.I)),
    ("quarter", QUARTER),  # "Q2 2019" (surrogates/date_shapes.py)
    ("decade", DECADE),  # "1990s", "'90s" (surrogates/date_shapes.py)
    ("year", re.compile(_YEAR_LEFT + r"(?P<year>(?:19|20)\d{2}|'\d{2})(?![\w/]|[.-]\d)", re.I)),
]
_WEEKDAY = re.compile(
    _B + r"(?P<wd>mon(?:day)?|tue(?:s(?:day)?)?|wed(?:nesday)?|thu(?:r(?:s(?:day)?)?)?|fri(?:day)?"
    r"|sat(?:urday)?|sun(?:day)?)(?P<wdot>\.)?(?![\w])",
    re.I,
)
_BARE_YEAR = re.compile(r"\s*(?P<year>\d{2})\s*")
_RANGE = re.compile(
    r"(?P<left>.*?\d(?:st|nd|rd|th)?)(?P<sep>\s*(?:-+>|→|-|–|to|through|thru)\s*)(?P<right>\S.*)",
    re.I,
)
# The month part of a range's left end: "7/" of "7/22", "July " of "July 22".
_RANGE_HEAD = re.compile(r"^(?:\d{1,2}/|[A-Za-z]+\.?\s*)")
# A lone day on a range's left and the day that starts its right end: "3" and "9" of "3-9 Dec".
_LONE_DAY = re.compile(r"\d{1,2}(?:st|nd|rd|th)?", re.I)
_DAY_HEAD = re.compile(r"\d{1,2}(?:st|nd|rd|th)?", re.I)
_YEAR4 = re.compile(r"(?:19|20)\d{2}")
# The right end of "Dec 1-3, 1998" and the year at the end of a shifted date.
_DAY_YEAR = re.compile(r"(?P<day>\d{1,2}(?:st|nd|rd|th)?)(?P<tail>,?\s*(?:\d{4}|'\d{2}))", re.I)
_DAY_YEAR_END = re.compile(r"(?P<tail>,?\s*(?:\d{4}|'\d{2}))$")
_MONTH_NEXT = re.compile(r"[\s/.-]*[A-Za-z]")


_HOLIDAY = re.compile(r"^\s*(?P<name>[a-z.'’ 0-9]+?)(?:\s*,?\s*(?P<year>\d{4}))?\s*$", re.I)


def _case_like(word: str, model: str) -> str:
    letters = [c for c in model if c.isalpha()]
    if letters and all(c.isupper() for c in letters) and len(letters) > 1:
        return word.upper()
    if letters and all(c.islower() for c in letters):
        return word.lower()
    return word[:1].upper() + word[1:].lower()


def _month_number(token: str) -> int:
    t = token.lower()[:3]
    return [m.lower()[:3] for m in MONTH_NAMES].index(t) + 1


def _weekday_number(token: str) -> int:
    t = token.lower()[:3]
    return [w.lower()[:3] for w in WEEKDAY_NAMES].index(t)


def _dot(m: re.Match[str]) -> str:
    """The period after a month name: "." when it marks the abbreviation, ".." when it also
    sets the month apart from a number ("3.Dec.98")."""
    if m.group("mdot") is None:
        return ""
    after = m.string[m.end("mdot") : m.end("mdot") + 1]
    return ".." if after.isdigit() else "."


def _month_text(month: int, model: str, dot: str) -> str:
    name = MONTH_NAMES[month - 1]
    if len(model) <= 4 and model.lower() not in ("may", "june", "july"):
        name = "Sept" if (len(model) == 4 and month == 9) else name[:3]
    if name == MONTH_NAMES[4] and dot == ".":
        dot = ""  # "Dec." → "May", not "May." (a period between parts stays: "3.May.98")
    return _case_like(name, model) + dot[:1]


def _weekday_text(weekday: int, model: str, dot: str) -> str:
    name = WEEKDAY_NAMES[weekday]
    if len(model) < 6:
        name = name[:3]
    return _case_like(name, model) + dot[:1]


def _ordinal(day: int, model: str) -> str:
    if not model:
        return ""
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return suffix.upper() if model.isupper() else suffix


def _num(value: int, model: str) -> str:
    """Zero-pad to two digits when the model is ("07" → "03"; "22" and "7" → "3")."""
    if len(model) == 2 and model.startswith("0"):
        return f"{value:02d}"
    return str(value)


def _padding_models(*parts: str, default: bool = True) -> tuple[str, ...]:
    """Zero padding per part: "07" is padded, "7" is not; "22" does not tell.

    A part that does not tell follows the parts that do ("10/3" → "M/D", "1/02" → "M/DD");
    when none tells, ``default`` decides (callers: padded for MM/DD/YYYY and YYYY-MM-DD,
    unpadded for the short "10/22" forms that notes write unpadded).
    """
    evident = [
        True if len(p) == 2 and p.startswith("0") else False if len(p) == 1 else None for p in parts
    ]
    told = [e for e in evident if e is not None]
    fallback = told[0] if told and all(t == told[0] for t in told) else default
    return tuple("00" if (fallback if e is None else e) else "0" for e in evident)


@dataclass(frozen=True)
class DateShifter:
    """Shifts date texts by ``shift``; ``reference`` fixes the year of dates written without one."""

    shift: timedelta
    reference: date | None = None

    @property
    def ref_year(self) -> int:
        return self.reference.year if self.reference else DEFAULT_REFERENCE_YEAR

    # -- year handling --------------------------------------------------------------------
    def full_year(self, text: str) -> int:
        digits = text.lstrip("'")
        if len(digits) == 4:
            return int(digits)
        yy = int(digits)
        century = (self.ref_year + 10) // 100 * 100
        year = century + yy
        while year > self.ref_year + 10:
            year -= 100
        return year

    def year_text(self, year: int, model: str) -> str:
        if model.startswith("'"):
            return f"'{year % 100:02d}"
        if len(model) == 2:
            return f"{year % 100:02d}"
        return f"{year:04d}"

    def shift_year(self, year: int) -> int:
        return (date(year, 7, 2) + self.shift).year

    def infer_year(self, month: int, day: int) -> date | None:
        """The year for a date written without one: the one closest to the reference date."""
        ref = self.reference or date(DEFAULT_REFERENCE_YEAR, 7, 1)
        best: date | None = None
        for year in (ref.year - 1, ref.year, ref.year + 1):
            try:
                candidate = date(year, month, day)
            except ValueError:
                continue
            if best is None or abs(candidate - ref) < abs(best - ref):
                best = candidate
        if best is None and month == 2 and day == 29:
            year = ref.year
            while not calendar.isleap(year):
                year -= 1
            best = date(year, 2, 29)
        return best

    # -- the span ---------------------------------------------------------------------------
    def shift_text(self, text: str, bare_year: bool = True) -> str | None:
        """The shifted text, or ``None`` when nothing in it reads as a date."""
        stripped = text.strip()
        if not any(p.fullmatch(stripped) for _, p in _PATTERNS):
            ranged = self._range(text)
            if ranged is not None:
                return ranged
        out = self._shift_one(text, bare_year)
        return self._range(text) if out is None else out  # "1998-99" reads like YYYY-MM

    def _range(self, text: str) -> str | None:
        """ "7/22-7/24", "July 22 - 24", "7/22-24": both ends move; a lone day keeps the form."""
        m = _RANGE.fullmatch(text)
        if m is None:
            return None
        left, sep, right = m.group("left"), m.group("sep"), m.group("right")
        if _LONE_DAY.fullmatch(left):
            return self._range_to_day_month(left, sep, right)
        if _YEAR4.fullmatch(left) and (_YEAR4.fullmatch(right) or re.fullmatch(r"\d{2}", right)):
            return self._year_range(left, sep, right)
        day_year = _DAY_YEAR.fullmatch(right)
        if day_year is not None:
            return self._range_day_year(left, sep, day_year)
        if not (right.isdigit() and len(right) <= 2):
            return self._range_two_dates(left, sep, right)
        return self._range_to_day(left, sep, right)

    def _range_two_dates(self, left: str, sep: str, right: str) -> str | None:
        """ "7/22-7/24": an end's missing year is read near the other end's date."""
        near_right = self._near(right)
        new_left = near_right._shift_one(left, bare_year=False)
        new_right = near_right._near(left)._shift_one(right, bare_year=False)
        if new_left is None or new_right is None:
            return None
        return f"{new_left}{sep}{new_right}"

    def _near(self, text: str) -> DateShifter:
        """This shifter, its reference the (first) date written in ``text`` if there is one."""
        anchor = self._date_edits(text)[1]
        return self if anchor is None else replace(self, reference=anchor - self.shift)

    def _range_day_year(self, left: str, sep: str, right: re.Match[str]) -> str | None:
        """ "Dec 1-3, 1998": the year after the right day is the left end's too."""
        tail = right.group("tail")
        out = self._range_to_day(left + tail, sep, right.group("day") + tail)
        new_left = self._shift_one(left + tail, bare_year=False)
        if out is None or new_left is None:
            return None
        rest = out[len(new_left) :]  # "May 15, 1998-17, 1998": "-17, 1998"
        left_tail, right_tail = _DAY_YEAR_END.search(new_left), _DAY_YEAR_END.search(rest)
        if left_tail and right_tail and left_tail.group() == right_tail.group():
            return new_left[: left_tail.start()] + rest  # one year: written once, at the end
        return out

    def _range_to_day(self, left: str, sep: str, right: str) -> str | None:
        """ "7/22-24", "July 22-24": the right day takes the left end's month."""
        new_left = self._shift_one(left, bare_year=False)
        head = _RANGE_HEAD.match(left)
        if new_left is None or head is None:
            return None
        new_full = self._shift_one(head.group() + right, bare_year=False)
        if new_full is None:
            return None
        left_head = _RANGE_HEAD.match(new_left)
        full_head = _RANGE_HEAD.match(new_full)
        if left_head and full_head and left_head.group() == full_head.group():
            return f"{new_left}{sep}{new_full[full_head.end() :]}"  # same month: the day only
        return f"{new_left}{sep}{new_full}"

    def _range_to_day_month(self, left: str, sep: str, right: str) -> str | None:
        """ "3-9 Dec", "9->10 Apr, 87": the left day takes the right end's month and year."""
        if _LONE_DAY.fullmatch(right) and not right.isdigit():
            return self._ordinal_range(left, sep, right)
        head = _DAY_HEAD.match(right)
        if head is None or not _MONTH_NEXT.match(right, head.end()):
            return None
        new_right = self._shift_one(right, bare_year=False)
        new_full = self._shift_one(left + right[head.end() :], bare_year=False)
        if new_right is None or new_full is None:
            return None
        right_head = _DAY_HEAD.match(new_right)
        full_head = _DAY_HEAD.match(new_full)
        if (
            right_head
            and full_head
            and new_right[right_head.end() :] == new_full[full_head.end() :]
        ):
            return f"{new_full[: full_head.end()]}{sep}{new_right}"  # same month: the day only
        return f"{new_full}{sep}{new_right}"

    def _ordinal_range(self, left: str, sep: str, right: str) -> str | None:
        """ "3rd-5th": days of one month (the right one in the next when it is smaller)."""
        ord_a, ord_b = left.lstrip("0123456789"), right.lstrip("0123456789")
        first, last = int(left[: len(left) - len(ord_a)]), int(right[: len(right) - len(ord_b)])
        start = self.nearest_day(first)
        if start is None:
            return None
        year, month = divmod(start.year * 12 + start.month - 1 + (last < first), 12)
        try:
            end = date(year, month + 1, last)
        except ValueError:
            return None
        a, b = start + self.shift, end + self.shift
        return f"{a.day}{_ordinal(a.day, ord_a)}{sep}{b.day}{_ordinal(b.day, ord_b)}"

    def _year_range(self, left: str, sep: str, right: str) -> str:
        """ "1998-2001", "1998-99": the first year moves, the second keeps the length."""
        start = self.shift_year(int(left))
        if len(right) == 4:
            return f"{start:04d}{sep}{start + int(right) - int(left):04d}"
        end = start + (int(right) - int(left[2:])) % 100
        return f"{start:04d}{sep}{end % 100:02d}"

    def _shift_one(self, text: str, bare_year: bool = True) -> str | None:
        holiday = self._holiday(text)
        if holiday is not None:
            return holiday
        if bare_year:
            m = _BARE_YEAR.fullmatch(text)
            if m:
                year = self.full_year(m.group("year"))
                new = self.year_text(self.shift_year(year), m.group("year"))
                return text[: m.start("year")] + new + text[m.end("year") :]
        taken, anchor = self._date_edits(text)
        taken += self._weekday_edits(text, taken, anchor)
        if not taken:
            return None
        return apply_edits(text, taken)

    def _date_edits(self, text: str) -> tuple[list[tuple[int, int, str]], date | None]:
        """The edits of the dates written in ``text`` (patterns in order, no overlap) and the
        first shifted day, which a weekday beside them follows."""
        taken: list[tuple[int, int, str]] = []
        anchor: date | None = None
        for kind, pattern in _PATTERNS:
            for m in pattern.finditer(text):
                if _overlaps(m, taken):
                    continue
                result = self._render(kind, m)
                if result is None:
                    continue
                new_text, shifted = result
                if anchor is None and shifted is not None:
                    anchor = shifted
                taken.append((m.start(), m.end(), new_text))
        return taken, anchor

    def _weekday_edits(
        self, text: str, taken: list[tuple[int, int, str]], anchor: date | None
    ) -> list[tuple[int, int, str]]:
        """Weekdays: the anchor's, else moved by the shift."""
        out: list[tuple[int, int, str]] = []
        for m in _WEEKDAY.finditer(text):
            if _overlaps(m, taken) or _overlaps(m, out):
                continue
            original_wd = _weekday_number(m.group("wd"))
            weekday = anchor.weekday() if anchor else (original_wd + self.shift.days) % 7
            out.append(
                (m.start(), m.end(), _weekday_text(weekday, m.group("wd"), m.group("wdot") or ""))
            )
        return out

    def _holiday(self, text: str) -> str | None:
        m = _HOLIDAY.match(text)
        if not m:
            return None
        name = re.sub(r"\s+", " ", m.group("name").strip().lower().replace("’", "'"))
        name = name.removeprefix("the ")
        known = _holiday_names()
        if name not in known and name.removesuffix(" day") not in known:
            return None
        year = int(m.group("year")) if m.group("year") else None
        table = _holidays_of(year or self.ref_year)
        if name not in table and name.removesuffix(" day") not in table:
            return None
        day = table.get(name) or table[name.removesuffix(" day")]
        shifted = day + self.shift
        model = m.group("name").strip()
        out = f"{_case_like(MONTH_NAMES[shifted.month - 1], model)} {shifted.day}"
        if year is not None:
            out += f", {shifted.year}"
        return out

    def _render(self, kind: str, m: re.Match[str]) -> tuple[str, date | None] | None:
        render = _RENDERERS.get(kind)
        return None if render is None else render(self, m)

    def _compact(self, m: re.Match[str]) -> tuple[str, date | None] | None:
        g = m.groupdict()
        try:
            d = date(int(g["y"]), int(g["m"]), int(g["d"]))
        except ValueError:
            return None
        s = d + self.shift
        return f"{s.year:04d}{s.month:02d}{s.day:02d}", s

    def _named(self, m: re.Match[str]) -> tuple[str, date | None] | None:
        """ "July 22, 2005", "22nd Jul": the month by name."""
        g = m.groupdict()
        month = _month_number(g["mon"])
        day = int(g["day"])
        year_txt = g.get("year")
        found = self._day_of(year_txt, month, day) if year_txt else self.infer_year(month, day)
        if found is None:
            return None
        s = found + self.shift
        mon = _month_text(s.month, g["mon"], _dot(m))
        day_txt = _num(s.day, g["day"]) + _ordinal(s.day, g["ord"] or "")
        year_out = self.year_text(s.year, year_txt) if year_txt else ""
        # Rebuild in place: keep the original separators between the parts.
        values = {"mon": mon, "day": day_txt, "year": year_out}
        return _splice(m.group(), m, values, drop=("mdot", "ord")), s

    def _day_of(self, year_text: str, month: int, day: int) -> date | None:
        try:
            return date(self.full_year(year_text), month, day)
        except ValueError:
            return None

    def _month_year_num(self, m: re.Match[str]) -> tuple[str, date | None] | None:
        g = m.groupdict()
        month = int(g["m"])
        if not 1 <= month <= 12:
            return None
        s = date(int(g["y"]), month, 15) + self.shift
        return _splice(m.group(), m, {"m": _num(s.month, g["m"]), "y": f"{s.year:04d}"}), None

    def _month_year(self, m: re.Match[str]) -> tuple[str, date | None] | None:
        g = m.groupdict()
        s = date(self.full_year(g["year"]), _month_number(g["mon"]), 15) + self.shift
        values = {
            "mon": _month_text(s.month, g["mon"], _dot(m)),
            "year": self.year_text(s.year, g["year"]),
        }
        return _splice(m.group(), m, values, drop=("mdot",)), None

    def _month(self, m: re.Match[str]) -> tuple[str, date | None] | None:
        g = m.groupdict()
        s = date(self.ref_year, _month_number(g["mon"]), 15) + self.shift
        return _month_text(s.month, g["mon"], _dot(m)), None

    def _ordinal_day(self, m: re.Match[str]) -> tuple[str, date | None] | None:
        """ "the 12th": a day of the month nearest the reference date."""
        found = self.nearest_day(int(m.group("day")))
        if found is None:
            return None
        s = found + self.shift
        return f"{s.day}{_ordinal(s.day, m.group('ord'))}", s

    def nearest_day(self, day: int, months: tuple[int, ...] = (-1, 0, 1)) -> date | None:
        """The given day of the month (of those ``months`` from the reference) nearest it."""
        ref = self.reference or date(DEFAULT_REFERENCE_YEAR, 7, 1)
        found: date | None = None
        for offset in months:
            year, month = divmod(ref.year * 12 + ref.month - 1 + offset, 12)
            try:
                candidate = date(year, month + 1, day)
            except ValueError:
                continue
            if found is None or abs(candidate - ref) < abs(found - ref):
                found = candidate
        return found

    def _year(self, m: re.Match[str]) -> tuple[str, date | None] | None:
        year = self.full_year(m.group("year"))
        return self.year_text(self.shift_year(year), m.group("year")), None

    def _numeric(self, m: re.Match[str]) -> tuple[str, date | None] | None:
        a, b, c, sep = m.group("a"), m.group("b"), m.group("c"), m.group("sep")
        sep2 = m.groupdict().get("sep2") or sep
        if len(a) == 4:
            return self._iso(a, b, c, sep)
        if len(a) == 3:
            return None
        pad_a, pad_b = _padding_models(a, b, default=c is not None and len(c) == 4)
        x, y = int(a), int(b)
        day_first = x > 12 and y <= 12
        month, day = (y, x) if day_first else (x, y)
        if c is None and not day_first and day > 31:  # "3/95": month / two-digit year
            return self._month_slash_year(a, b, sep, month)
        d2 = self._numeric_day(c, month, day)
        if d2 is None:
            return None
        s = d2 + self.shift
        first, second = (s.day, s.month) if day_first else (s.month, s.day)
        out = f"{_num(first, pad_a)}{sep}{_num(second, pad_b)}"
        if c is not None:
            out += sep2 + self.year_text(s.year, c)
        return out, s

    def _compact_mdy(self, m: re.Match[str]) -> tuple[str, date | None] | None:
        """MMDDYYYY, MMDDYY; else DDMM.. (the first pair no month); else YYMMDD."""
        a, b, c = m.group("a"), m.group("b"), m.group("c")
        readings = [("mdy", c, int(a), int(b)), ("dmy", c, int(b), int(a))]
        if len(c) == 2:
            readings.append(("ymd", a, int(b), int(c)))
        for order, year, month, day in readings:
            found = self._day_of(year, month, day)
            if found is None:
                continue
            s = found + self.shift
            y, md = self.year_text(s.year, year), f"{s.month:02d}{s.day:02d}"
            return {"mdy": md + y, "dmy": f"{s.day:02d}{s.month:02d}{y}", "ymd": y + md}[order], s
        return None

    def _numeric_day(self, year_text: str | None, month: int, day: int) -> date | None:
        """The day of a numeric date; without a year, the year nearest the reference."""
        if year_text is not None:
            return self._day_of(year_text, month, day)
        try:
            date(2000, month, day)  # validates month/day (2000 is a leap year)
        except ValueError:
            return None
        return self.infer_year(month, day)

    def _iso(self, a: str, b: str, c: str | None, sep: str) -> tuple[str, date | None] | None:
        """YYYY-MM-DD, YYYY-MM."""
        if c is None and len(b) == 2 and 1 <= int(b) <= 12:
            s = date(int(a), int(b), 15) + self.shift
            return f"{s.year:04d}{sep}{s.month:02d}", None
        if c is None or len(c) > 2:
            return None
        try:
            d = date(int(a), int(b), int(c))
        except ValueError:
            return None
        s = d + self.shift
        pad_b, pad_c = _padding_models(b, c)
        return f"{s.year:04d}{sep}{_num(s.month, pad_b)}{sep}{_num(s.day, pad_c)}", s

    def _month_slash_year(
        self, a: str, b: str, sep: str, month: int
    ) -> tuple[str, date | None] | None:
        if not 1 <= month <= 12:
            return None
        s = date(self.full_year(b), month, 15) + self.shift
        return f"{_num(s.month, a)}{sep}{s.year % 100:02d}", None


_Render = Callable[[DateShifter, re.Match[str]], "tuple[str, date | None] | None"]
_RENDERERS: dict[str, _Render] = {
    "compact": DateShifter._compact,
    "mdy_name": DateShifter._named,
    "dmy_name": DateShifter._named,
    "numeric": DateShifter._numeric,
    "numeric_blanks": DateShifter._numeric,
    "numeric_mixed": DateShifter._numeric,
    "compact_mdy": DateShifter._compact_mdy,
    "month_year_num": DateShifter._month_year_num,
    "month_year": DateShifter._month_year,
    "ordinal_day": DateShifter._ordinal_day,
    "month": DateShifter._month,
    "year": DateShifter._year,
    "decade": decade,
    "quarter": quarter,
}


def _overlaps(m: re.Match[str], taken: list[tuple[int, int, str]]) -> bool:
    return any(m.start() < e and s < m.end() for s, e, _ in taken)


def _splice(text: str, m: re.Match[str], values: dict[str, str], drop: tuple[str, ...] = ()) -> str:
    """Replace named groups of match ``m`` (offsets relative to ``text``) with new values."""
    base = m.start()
    edits: list[tuple[int, int, str]] = []
    for name, value in values.items():
        if m.group(name) is None:
            continue
        edits.append((m.start(name) - base, m.end(name) - base, value))
    for name in drop:
        if m.group(name) is not None:
            edits.append((m.start(name) - base, m.end(name) - base, ""))
    return apply_edits(text, edits)


class DateSurrogate(Surrogate):
    """Moves every date by the patient's shift; see the module docstring for the rules."""

    categories = frozenset({"DATE"})

    def replace(self, span: SpanLike, ctx: ReplaceContext) -> str:
        shifter = DateShifter(ctx.shift, ctx.reference_date)
        return shifter.shift_text(ctx.original(span)) or "[DATE]"
