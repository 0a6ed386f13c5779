"""Holiday names a date surrogate reads: the `holidays` package's US names plus common ones."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from functools import lru_cache

import holidays
from dateutil.easter import easter

from pipelines.memo import memoized

# Names people write that the `holidays` package (official names only) does not carry.
_EXTRA_HOLIDAYS: dict[str, Callable[[int], date]] = {
    "christmas": lambda y: date(y, 12, 25),
    "xmas": lambda y: date(y, 12, 25),
    "christmas eve": lambda y: date(y, 12, 24),
    "new year's": lambda y: date(y, 1, 1),
    "new years": lambda y: date(y, 1, 1),
    "new year": lambda y: date(y, 1, 1),
    "new year's eve": lambda y: date(y, 12, 31),
    "new years eve": lambda y: date(y, 12, 31),
    "thanksgiving": lambda y: _nth_weekday(y, 11, 3, 4),
    "fourth of july": lambda y: date(y, 7, 4),
    "4th of july": lambda y: date(y, 7, 4),
    "mlk day": lambda y: _nth_weekday(y, 1, 0, 3),
    "presidents day": lambda y: _nth_weekday(y, 2, 0, 3),
    "presidents' day": lambda y: _nth_weekday(y, 2, 0, 3),
    "easter": easter,
    "easter sunday": easter,
    "good friday": lambda y: easter(y) - timedelta(days=2),
    "halloween": lambda y: date(y, 10, 31),
    "valentine's day": lambda y: date(y, 2, 14),
    "valentines day": lambda y: date(y, 2, 14),
    "st. patrick's day": lambda y: date(y, 3, 17),
    "st patrick's day": lambda y: date(y, 3, 17),
    "mother's day": lambda y: _nth_weekday(y, 5, 6, 2),
    "father's day": lambda y: _nth_weekday(y, 6, 6, 3),
}


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    first = date(year, month, 1)
    offset = (weekday - first.weekday()) % 7
    return first + timedelta(days=offset + 7 * (n - 1))


@memoized("surrogate_dates.holidays_of", 64)
def _holidays_of(year: int) -> dict[str, date]:
    table: dict[str, date] = {}
    for day, name in sorted(holidays.country_holidays("US", years=year).items()):
        if "observed" not in name.lower():
            table.setdefault(name.lower().replace("’", "'"), day)
    for alias, make in _EXTRA_HOLIDAYS.items():
        table.setdefault(alias, make(year))
    return table


@lru_cache(maxsize=1)
def _holiday_names() -> frozenset[str]:
    """Every holiday name we know, whatever the year (official names barely change)."""
    names = {
        name.lower().replace("’", "'")
        for name in holidays.country_holidays("US", years=range(1990, 2031)).values()
        if "observed" not in name.lower()
    }
    return frozenset(names | set(_EXTRA_HOLIDAYS))
