"""The census name tables (``census``) and the words a name is made of besides its parts
(titles, suffixes), without the name surrogate maker that uses them
(``surrogates.names``, which re-exports every name here).

Split from ``surrogates.names``: the detector reads the census lists (``pipelines.phi.
lexicons``) and these words (``pipelines.phi.propagate``), and importing the surrogate maker
with them brought the surrogates' context, choices and the key store's API into every
process that detects (bench/README.md, "Session 15").
"""

from __future__ import annotations

import unicodedata
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from typing import TYPE_CHECKING, TypeVar, overload

from surrogates.wordtable import hashed_words

if TYPE_CHECKING:
    from surrogates.choice import Chooser

_T = TypeVar("_T")
LAST_NAME_POOL = 20000  # the most frequent census surnames; rarer ones read oddly
# A first-name surrogate of one gender is a name at least this share of whose census bearers
# have that gender ("Lacy" and "Leslie" are no one's idea of a man's name).
GENDER_SHARE = 0.9
VOWELS = set("AEIOUY")
TITLES_MALE = {"mr", "mister", "sir"}
TITLES_FEMALE = {"mrs", "ms", "miss", "madam", "mme"}
TITLES = TITLES_MALE | TITLES_FEMALE | {"dr", "doctor", "prof", "professor", "rev", "fr", "sr"}
SUFFIXES = {
    "jr",
    "sr",
    "ii",
    "iii",
    "iv",
    "md",
    "do",
    "rn",
    "np",
    "pa",
    "phd",
    "lpn",
    "cnm",
    "dds",
    "esq",
    "crna",
    "pharmd",
    "msw",
    "lcsw",
    "rrt",
    "pt",
    "ot",
    "mph",
    "facs",
    "facp",
}


@dataclass(frozen=True)
class Pool:
    """Names drawn in proportion to their census frequency: ``names[i]`` has weight
    ``cumulative[i] - cumulative[i - 1]`` (thousandths of a percent, integers)."""

    names: tuple[str, ...]
    cumulative: array[int]  # machine integers, not an int object each

    def draw(self, chooser: Chooser) -> str:
        return self.names[self.index(chooser)]

    def index(self, chooser: Chooser) -> int:
        """The index of a name drawn in proportion to its weight."""
        return bisect_right(self.cumulative, chooser.below(self.cumulative[-1]))


class NameTable(Mapping[str, float]):
    """A census file's names -> percent of the population, for the surnames: most of them
    at 0.000%, their strings and a dict took several times the memory of the arrays
    (figures: bench/README.md, "Memory"). Looked up in ``HashedWords`` (a listed name may have the value 0.0: a name is
    listed where ``find`` places it); iterated by reading the file again, as only training
    and the invented texts do."""

    def __init__(self, file: str, rows: list[tuple[str, float]]) -> None:
        table = dict(rows)  # a name listed twice has its last figure, as a dict had
        values = tuple(dict.fromkeys(table.values()))
        index = {value: i for i, value in enumerate(values)}
        groups: list[list[str]] = [[] for _ in values]
        for name, value in table.items():
            groups[index[value]].append(name)
        self.file = file
        self._words = hashed_words(groups, values)
        self._size = len(table)

    @overload
    def get(self, name: str, /) -> float | None: ...
    @overload
    def get(self, name: str, /, default: float | _T) -> float | _T: ...
    def get(self, name: str, /, default: object = None) -> object:
        """As ``Mapping.get``, without its ``KeyError`` round trip for a name not listed."""
        value = self._words.lookup(name)
        return default if value is None else value

    def __getitem__(self, name: str) -> float:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._words.lookup(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(dict(_read(self.file, {})))

    def __len__(self) -> int:
        return self._size


@dataclass(frozen=True)
class Census:
    male: dict[str, float]
    female: dict[str, float]
    last: NameTable

    def first(self, low: str) -> float:
        return max(self.male.get(low, 0.0), self.female.get(low, 0.0))

    def is_first_name(self, low: str) -> bool:
        """More people have it as a first name than as a surname (census counts)."""
        return self.first(low) > self.last.get(low, 0.0)

    def is_surname(self, low: str) -> bool:
        return self.last.get(low, 0.0) > self.first(low)

    @cached_property
    def pools(self) -> dict[tuple[str, str], Pool]:
        """(M | F | L, initial or "") → names, lower-case: built on first use, by the
        surrogates (the detector asks only the tables).

        First-name pools hold only names that are mostly of their gender and more a first
        name than a surname; the surname pool only names that are more a surname than a
        first name."""
        male, female = self.male.items(), self.female.items()
        last = _read(self.last.file, {}, LAST_NAME_POOL)
        eligible = {
            "M": [
                (n, f)
                for n, f in male
                if self.share(n, "M") >= GENDER_SHARE and self.is_first_name(n)
            ],
            "F": [
                (n, f)
                for n, f in female
                if self.share(n, "F") >= GENDER_SHARE and self.is_first_name(n)
            ],
            "L": [(n, f) for n, f in last if self.is_surname(n)],
        }
        pools: dict[tuple[str, str], Pool] = {}
        for pool, rows in eligible.items():
            by_initial: dict[str, list[tuple[str, float]]] = {}
            for name, freq in rows:
                by_initial.setdefault(name[0], []).append((name, freq))
            pools[(pool, "")] = _pool(rows)
            for initial, group in by_initial.items():
                pools[(pool, initial)] = _pool(group)
        return pools

    def share(self, low: str, gender: str) -> float:
        """The share of the name's first-name bearers who have ``gender`` (M or F)."""
        male, female = self.male.get(low, 0.0), self.female.get(low, 0.0)
        if male + female == 0:
            return 0.0
        return (male if gender == "M" else female) / (male + female)


def census_rows(name: str, percents: dict[str, float] | None = None) -> list[tuple[str, float]]:
    """(lower-case name, percent of the population) per line of the census file ``name``
    of ``names`` (dist.male.first, dist.female.first, dist.all.last), in file order."""
    return _read(name, {} if percents is None else percents)


def _read(name: str, percents: dict[str, float], limit: int = -1) -> list[tuple[str, float]]:
    """(lower-case name, percent of the population) per line of a census file of ``names``,
    read line by line (the whole file split at once was a large transient). ``percents``
    gives one float object per distinct figure: the files repeat a few hundred figures.
    ``limit``: the first rows only (the rest of the file is not read)."""
    rows: list[tuple[str, float]] = []
    with resources.files("names").joinpath(name).open("r", encoding="ascii") as lines:
        for line in lines:
            parts = line.split()
            if len(parts) >= 2:
                percent = percents.get(parts[1])
                if percent is None:
                    percent = percents[parts[1]] = float(parts[1])
                rows.append((parts[0].lower(), percent))
                if len(rows) == limit:
                    break
    return rows


def _pool(rows: list[tuple[str, float]]) -> Pool:
    names, cumulative, total = [], array("q"), 0
    for name, freq in rows:
        total += max(1, round(freq * 1000))  # the lists give 3 decimals; rarest weigh 1
        names.append(name)
        cumulative.append(total)
    return Pool(tuple(names), cumulative)


@lru_cache(maxsize=1)
def census() -> Census:
    """The census name lists (dist.male.first, dist.female.first, dist.all.last), indexed;
    the surrogates' pools (``Census.pools``) are built on first use."""
    percents: dict[str, float] = {}
    male = _read("dist.male.first", percents)
    female = _read("dist.female.first", percents)
    last = _read("dist.all.last", percents)
    return Census(male=dict(male), female=dict(female), last=NameTable("dist.all.last", last))


def _accentless(c: str) -> str:
    """A letter's base letter, when its accents are all that differ ("ñ" -> "n")."""
    base = "".join(x for x in unicodedata.normalize("NFKD", c) if not unicodedata.combining(x))
    return base if len(base) == 1 and base.isascii() else c


# The Latin letters with accents, each to its plain letter: one character for one, so a
# text translated with it keeps every offset (the leak guard scans such a copy).
_LATIN = (*range(0xC0, 0x250), *range(0x1E00, 0x1F00))
ACCENTLESS = str.maketrans({c: b for c in map(chr, _LATIN) if (b := _accentless(c)) != c})


def folded(word: str) -> str:
    """A text without its accents ("josé" -> "jose", "zoë" -> "zoe"), one character for
    one: for look-ups in the census lists, which write names in ASCII."""
    return word if word.isascii() else word.translate(ACCENTLESS)
