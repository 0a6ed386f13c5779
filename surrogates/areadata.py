"""Geographic US area codes by state, from libphonenumber's geocoding data (the
``phonenumbers`` package), read from a small copy shipped beside this module
(``data/area_codes.txt``).

Why a copy: asking ``phonenumbers.geocoder`` where each of 800 area codes is loads its
whole English geocoding table, which stays imported for the life of the process: about
90 MB resident, for a table of 50 lines (bench/README.md, "Memory"). The copy is derived, not
written by hand: ``python -m surrogates.areadata`` rewrites it from the installed package,
and ``tests/surrogates/test_areadata.py`` fails when the two differ.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

FILENAME = "area_codes.txt"
_HEADER = (
    "# Geographic US area codes by state: libphonenumber's geocoding data (phonenumbers,\n"
    "# Apache-2.0), rewritten by `python -m surrogates.areadata`. One state a line.\n"
)


def by_state() -> dict[str, tuple[str, ...]]:
    """State abbreviation -> its area codes, from the shipped copy."""
    text = resources.files("surrogates").joinpath("data", FILENAME).read_text("utf-8")
    out: dict[str, tuple[str, ...]] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            state, *codes = line.split()
            out[state] = tuple(codes)
    return out


def by_state_from_package() -> dict[str, tuple[str, ...]]:
    """The same, asked of ``phonenumbers``: a code whose numbers it places in a state
    ("Pocatello, ID", "California"). Non-geographic codes (500, 800…) have no place."""
    import phonenumbers
    import us
    from phonenumbers import geocoder

    by_name = {s.name.lower(): s.abbr for s in us.states.STATES_AND_TERRITORIES}
    found: dict[str, list[str]] = {}
    for code in range(200, 1000):
        number = phonenumbers.parse(f"+1{code}2345678")
        if phonenumbers.region_code_for_number(number) != "US":
            continue
        place = geocoder.description_for_number(number, "en")
        state = place.rsplit(", ", 1)[-1] if ", " in place else by_name.get(place.lower(), "")
        if len(state) == 2 and state.isupper():
            found.setdefault(state, []).append(str(code))
    return {state: tuple(codes) for state, codes in sorted(found.items())}


def write(path: Path) -> int:
    """Writes the copy from the installed package; the number of states."""
    table = by_state_from_package()
    lines = "".join(f"{state} {' '.join(codes)}\n" for state, codes in table.items())
    path.write_text(_HEADER + lines, encoding="utf-8")
    return len(table)


def main() -> int:
    path = Path(__file__).parent / "data" / FILENAME
    print(f"{write(path)} states -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
