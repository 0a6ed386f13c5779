"""The census surnames (``names``' dist.all.last) as the detector asks them
(``lexicons.last_names``), read from a compact copy shipped beside this package
(``data/census_last.bin.gz``).

Why a copy: the surrogates' table of the same names (``surrogates.name_tables.NameTable``)
reads the census file and hashes and sorts its 88,799 names into ``HashedWords`` in each
process, 0.15-0.2 s of every process that detects, the largest part of a short ``deidstream
detect``'s start once the English list was shipped (bench/README.md, "Session 15"). The
copy holds the names sorted, 64 to a line (``SortedWords``), each name's figure a byte
after the text (an index into the figures listed in the header). A process that also
replaces names builds the surrogates' table as before; the two take about 1 MB each.

The copy is derived, not written by hand: ``python -m pipelines.phi.census_words`` rewrites
it from the installed package, and ``tests/phi/test_lexicons.py`` fails when the two
differ. The census lists are public domain; ``names`` is MIT.
"""

from __future__ import annotations

import gzip
from array import array
from collections.abc import Iterator, Mapping
from importlib import resources
from typing import Final, TypeVar, overload

from pipelines.phi.sorted_words import BLOCK, SortedWords, sorted_words

FILENAME: Final = "census_last.bin.gz"
CENSUS_FILE: Final = "dist.all.last"
_HEADER: Final = (
    "# The census surnames of the names package (dist.all.last), lower-case, sorted, 64 a\n"
    "# line, after the distinct figures (percent of the population); each name's figure\n"
    "# index a byte after the text. Written by `python -m pipelines.phi.census_words`.\n"
)
_T = TypeVar("_T")


class CensusNames(Mapping[str, float]):
    """Census surnames -> percent of the population, as ``NameTable`` answers (a listed
    name may have 0.0); iterated by reading the census file again, in its order, as
    ``NameTable`` is (only training and the invented texts do)."""

    def __init__(self, words: SortedWords, size: int) -> None:
        self._words = words
        self._size = size

    @overload
    def get(self, name: str, /) -> float | None: ...
    @overload
    def get(self, name: str, /, default: float | _T) -> float | _T: ...
    def get(self, name: str, /, default: object = None) -> object:
        value = self._words.lookup(name)
        return default if value is None else value

    def __getitem__(self, name: str) -> float:
        value = self._words.lookup(name)
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._words.lookup(name) is not None

    def __iter__(self) -> Iterator[str]:
        from surrogates.name_tables import census_rows

        return iter(dict(census_rows(CENSUS_FILE)))

    def __len__(self) -> int:
        return self._size


def shipped() -> CensusNames:
    """The surnames of the shipped copy."""
    raw = gzip.decompress(resources.files("pipelines.phi").joinpath("data", FILENAME).read_bytes())
    cut = raw.index(b"\0")
    lines = [line for line in raw[:cut].decode("ascii").splitlines() if not line.startswith("#")]
    values = tuple(map(float, lines[0].split()[1:]))
    buckets = array("B", raw[cut + 1 :])
    words = sorted_words(lines[1:], buckets, values, {})
    return CensusNames(words, len(buckets))


def from_package() -> bytes:
    """The copy's bytes (before gzip) as derived from the installed ``names`` now."""
    from surrogates.name_tables import census_rows

    table = dict(census_rows(CENSUS_FILE))  # a name listed twice has its last figure
    values = list(dict.fromkeys(table.values()))
    index = {value: i for i, value in enumerate(values)}
    names = sorted(table)
    if len(values) > 256 or not all(n and n.isascii() and " " not in n for n in names):
        raise ValueError("over 256 figures, or a name empty, with a space or not ASCII")
    lines = [" ".join(names[at : at + BLOCK]) for at in range(0, len(names), BLOCK)]
    text = _HEADER + "values " + " ".join(map(repr, values)) + "\n" + "\n".join(lines) + "\n"
    return text.encode("ascii") + b"\0" + bytes(index[table[n]] for n in names)


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    from pipelines.phi.sorted_words import write_copy

    write_copy(__file__, FILENAME, from_package())
