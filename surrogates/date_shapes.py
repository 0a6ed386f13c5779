"""Date shapes of session 17 the surrogate shifts in their own format (``surrogates.dates``
adds them to its patterns): decades ("1990s", "1990's", "'90s", "90s").

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
