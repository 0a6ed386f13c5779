"""US ZIP codes with their state and city, from the ``zipcodes`` package, read from a compact
copy shipped beside this module (``data/zips.tsv.gz``).

Why a copy: ``zipcodes`` materialises its whole database as a Python dict per code, and
``zipcodes.list_all()`` keeps them for the life of the process; building them raised a
process's peak resident memory even when nothing kept them (bench/README.md, "Memory"). The
copy holds the four fields this project uses, one line per code, and is read as a stream.

The copy is derived, not written by hand: ``python -m surrogates.zipdata`` rewrites it from the
installed package, and ``tests/test_zipdata.py`` fails when the two differ.
"""

from __future__ import annotations

import gzip
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import Any, cast

FILENAME = "zips.tsv.gz"


@dataclass(frozen=True, slots=True)
class ZipRow:
    """One ZIP code: five digits, its state's abbreviation, its city as the package writes it,
    and whether it is a standard, active code (not a PO box, military or unique code)."""

    zip_code: str
    state: str
    city: str
    standard: bool

    def __post_init__(self) -> None:
        if len(self.zip_code) != 5 or not self.zip_code.isdigit():
            raise ValueError("a zip code is five digits")
        if "\t" in self.city or "\n" in self.city or "\t" in self.state:
            raise ValueError("a zip row's fields hold no tabs or newlines")

    def line(self) -> str:
        return f"{self.zip_code}\t{self.state}\t{int(self.standard)}\t{self.city}\n"

    @classmethod
    def parse(cls, line: str) -> ZipRow:
        zip_code, state, standard, city = line.rstrip("\n").split("\t")
        return cls(zip_code, state, city, standard == "1")


def rows() -> Iterator[ZipRow]:
    """Every code in the shipped copy, in zip order, read as a stream (nothing is cached)."""
    source = resources.files("surrogates").joinpath("data", FILENAME)
    with source.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as text:
        for line in text:
            yield ZipRow.parse(line)


def column(field: int) -> Iterator[str]:
    """One field of every code in the shipped copy (0 the zip code, 1 the state, 3 the
    city, as ``ZipRow.line`` writes them), read as a stream without a ``ZipRow`` each: the
    detector's city and zip sets, in every process that detects (bench/README.md,
    "Session 15")."""
    source = resources.files("surrogates").joinpath("data", FILENAME)
    with source.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as text:
        lines = map(str.rstrip, text, repeat("\n"))
        yield from map(itemgetter(field), map(str.split, lines, repeat("\t")))


def rows_from_package() -> list[ZipRow]:
    """The same rows read from the installed ``zipcodes`` package (slow and memory-hungry:
    for regenerating the copy and for its test, never on a service's path)."""
    import zipcodes

    list_all = cast(Callable[[], list[dict[str, Any]]], zipcodes.list_all)  # untyped
    out = [
        ZipRow(
            zip_code=str(r["zip_code"]),
            state=str(r.get("state") or ""),
            city=" ".join(str(r.get("city") or "").split()),
            standard=r.get("zip_code_type") == "STANDARD" and bool(r.get("active", True)),
        )
        for r in list_all()
    ]
    return sorted(out, key=lambda r: r.zip_code)


def write(path: Path) -> int:
    """Write the copy from the installed package; returns the number of rows."""
    found = rows_from_package()
    # mtime=0: the same package gives the same bytes, so the file only changes when data does
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write("".join(r.line() for r in found).encode("utf-8"))
    return len(found)


def main() -> int:
    target = Path(__file__).with_name("data") / FILENAME
    count = write(target)
    print(f"wrote {count} zip codes to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
