"""Ages: over the policy's ceiling they become "90+" (ceiling + 1, then "+"); others are kept."""

from __future__ import annotations

import re

from surrogates.base import SpanLike, Surrogate
from surrogates.context import ReplaceContext

_NUMBER = re.compile(r"\d{1,3}")
_UNITS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_WORDS = re.compile(
    r"(?P<hundred>(?:one|a)\s+hundred(?:\s+and)?)?\s*(?P<tens>"
    + "|".join(_TENS)
    + r")?(?:[\s-]*(?P<unit>"
    + "|".join(sorted(_UNITS, key=len, reverse=True))
    + r"))?",
    re.I,
)


def _spelled_age(text: str) -> tuple[int, int, int] | None:
    """(value, start, end) of the first spelled-out number in ``text``."""
    for m in _WORDS.finditer(text):
        if not (m.group("tens") or m.group("unit") or m.group("hundred")):
            continue
        value = (100 if m.group("hundred") else 0) + _TENS.get((m.group("tens") or "").lower(), 0)
        value += _UNITS.get((m.group("unit") or "").lower(), 0)
        start = m.start() + len(m.group()) - len(m.group().lstrip())
        return value, start, m.end()
    return None


class AgeSurrogate(Surrogate):
    """The number of years above the ceiling is folded into "<ceiling + 1>+"."""

    categories = frozenset({"AGE"})

    def replace(self, span: SpanLike, ctx: ReplaceContext) -> str:
        text = ctx.original(span)
        ceiling = ctx.settings.age_ceiling
        folded = f"{ceiling + 1}+"
        number = _NUMBER.search(text)
        if number is not None:
            if int(number.group()) <= ceiling:
                return text
            end = number.end() + (1 if text[number.end() : number.end() + 1] == "+" else 0)
            return text[: number.start()] + folded + text[end:]
        spelled = _spelled_age(text)
        if spelled is None:
            return folded  # an AGE span with no number we can read: never keep it
        value, start, end = spelled
        if value <= ceiling:
            return text
        return text[:start] + folded + text[end:]
