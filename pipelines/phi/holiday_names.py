"""The US holiday names of ``date_patterns.holiday_pattern``, read from a copy shipped beside
this package (``data/holiday_names.txt``, one name a line).

Why a copy: the names come from the ``holidays`` package, asked for the US and each of its
subdivisions over two years; importing it and building those calendars took about a tenth
of a second of every process that detects dates (and a few of its country modules with it),
for some eighty names that change only with the package (bench/README.md, "Session 15").

The copy is derived, not written by hand: ``python -m pipelines.phi.holiday_names`` rewrites
it from the installed package, and ``tests/phi/test_dates.py`` fails when the two differ.
"""

from __future__ import annotations

import re
import sys
from importlib import resources
from pathlib import Path

FILENAME = "holiday_names.txt"
_HEADER = (
    "# US holiday names (public and unofficial, the US and each subdivision) and the short\n"
    "# forms several of them share, from the holidays package:\n"
    "# written by `python -m pipelines.phi.holiday_names`, not by hand.\n"
)


def shipped() -> list[str]:
    """The names of the shipped copy, sorted."""
    text = resources.files("pipelines.phi").joinpath("data", FILENAME).read_text("utf-8")
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def from_package() -> list[str]:
    """The names as derived from the installed ``holidays`` package now, sorted: every name
    of the country's calendar, plus a stem shared by several names of its subdivisions'
    ("Christmas" from "Christmas Day" / "Christmas Eve")."""
    import holidays

    names: set[str] = set()
    every: set[str] = set()
    for subdiv in (None, *holidays.US.subdivisions):
        try:  # both categories in one call: a third of the start-up cost of one per category
            found = holidays.country_holidays(
                "US", subdiv=subdiv, years=(2023, 2024), categories=("public", "unofficial")
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
    return sorted(names)


def write(path: Path) -> None:
    """Write the copy from the installed package."""
    path.write_text(_HEADER + "".join(f"{name}\n" for name in from_package()), "utf-8")


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    target = Path(__file__).with_name("data") / FILENAME
    write(target)
    sys.stdout.write(f"wrote {target}\n")
