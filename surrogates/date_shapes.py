"""Date shapes of session 17 the surrogate shifts in their own format (``surrogates.dates``
adds them to its patterns): decades ("1990s", "1990's", "'90s", "90s"); and session 19's
quarters of a year ("Q2 2019"), which move as their middle day does.

A decade moves with its first year: the year moves as a year alone does (by the years that
2 July of it moves) and the decade written is the moved year's ("1990s" with a shift of
-200 days: 1990 -> 1989, "1980s"). Its width, apostrophe and case are kept.
"""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from surrogates.dates import DateShifter

# "1990s", "1990's", "'90s", "90s", "2000S": a year ending in 0, then an "s"
DECADE = re.compile(r"(?<![\w/.-])(?P<year>(?:1[89]|20)\d0|'?\d0)(?P<s>'?[sS])(?![\w])")


def decade(shifter: DateShifter, m: re.Match[str]) -> tuple[str, date | None] | None:
    """The decade of the moved first year, written as the original is."""
    model = m.group("year")
    moved = shifter.shift_year(shifter.full_year(model))
    return shifter.year_text(moved - moved % 10, model) + m.group("s"), None


# "Q2 2019", "q4 2021": a quarter of a year, then the year
QUARTER = re.compile(
    r"(?<![\w/.-])(?P<q>[qQ])(?P<n>[1-4])(?P<sep>[ \t]+)(?P<year>(?:19|20)\d\d)(?![\w])"
)


def quarter(shifter: DateShifter, m: re.Match[str]) -> tuple[str, date | None] | None:
    """The quarter of the moved middle day of the quarter ("Q2 2019" moved 200 days: the 15th
    of May is the 1st of December, "Q4 2019")."""
    n = int(m.group("n"))
    moved = date(int(m.group("year")), 3 * n - 1, 15) + shifter.shift
    return f"{m.group('q')}{(moved.month - 1) // 3 + 1}{m.group('sep')}{moved.year}", moved
