"""Large word lists held without a string object per word (``HashedWords``): wordfreq's
rare English words and the drug names (``pipelines.phi.lexicons``), the census surnames
(``surrogates.names``)."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

# The arrays of ``HashedWords`` are cut by the top bits of the hash: a look-up bisects one
# slice of a few entries instead of the whole array
_SLOT_BITS: Final = 16
_SLOT_SHIFT: Final = 64 - _SLOT_BITS
_SLOT_BASE: Final = 1 << (_SLOT_BITS - 1)  # hash() is signed: its top bits from -2**15


@dataclass(frozen=True, slots=True)
class HashedWords:
    """A large word list with a value per word that keeps no string object per word: the
    words' ``hash()`` in a sorted ``array`` with a parallel array of value indices, searched
    with ``bisect`` in the slice that shares the hash's top bits. A word's text and its
    dict or set entry took several times that memory (figures: bench/README.md, "Memory").

    The arrays are built in each process from its own hash seed. ``hash()`` reads a string's
    stored bytes, which a one-byte (ASCII) and a two-byte string can share ("L0" and "が"),
    so only ASCII words are in the arrays and only ASCII words are searched there; the few
    others, and listed words whose hashes coincide, are in ``apart``. An ASCII word outside
    the list is then taken for a listed one only if their 64-bit hashes are equal by chance
    (one in 2**64 per listed word)."""

    apart: dict[str, float]
    hashes: array[int]  # sorted hash() of the other words
    indices: array[int]  # value index of each, in ``values``
    values: tuple[float, ...]
    slots: array[int]  # slot s -> where the hashes of top bits s - _SLOT_BASE start

    def get(self, word: str) -> float:
        """The word's value, or 0.0 for a word not listed."""
        value = self.lookup(word)
        return 0.0 if value is None else value

    def lookup(self, word: str) -> float | None:
        """The word's value, or None for a word not listed (a listed word may have 0.0)."""
        value = self.apart.get(word)
        if value is None:
            at = self.find(word)
            return self.values[self.indices[at]] if at >= 0 else None
        return value

    def find(self, word: str) -> int:
        """Where the word is in the arrays, or -1 (a word in ``apart`` is not there)."""
        if not word.isascii():
            return -1
        key = hash(word)
        slot = (key >> _SLOT_SHIFT) + _SLOT_BASE
        hashes, end = self.hashes, self.slots[slot + 1]
        at = bisect_left(hashes, key, self.slots[slot], end)
        return at if at < end and hashes[at] == key else -1


def hashed_words(groups: list[list[str]], values: tuple[float, ...]) -> HashedWords:
    """The words of ``groups[i]`` with the value ``values[i]`` (a word in one group only)."""
    apart = {w: values[i] for i, words in enumerate(groups) for w in words if not w.isascii()}
    keys = _keys(groups)
    shared = {a >> 16 for a, b in pairwise(keys) if a >> 16 == b >> 16}
    if shared:  # words the arrays cannot tell apart (none in most processes)
        keys = [key for key in keys if key >> 16 not in shared]
        apart.update(_colliding(groups, values, shared))
    hashes = array("q", (key >> 16 for key in keys))
    indices = array("H", (key & 0xFFFF for key in keys))
    del keys
    starts = (
        bisect_left(hashes, (s - _SLOT_BASE) << _SLOT_SHIFT) for s in range(2**_SLOT_BITS + 1)
    )
    return HashedWords(apart, hashes, indices, values, array("I", starts))


def _keys(groups: list[list[str]]) -> list[int]:
    """``hash(word) << 16 | group`` of each ASCII word, sorted: by hash, then index (one sort
    orders both arrays)."""
    keys = [(hash(w) << 16) | i for i, words in enumerate(groups) for w in words if w.isascii()]
    keys.sort()
    return keys


def _colliding(
    groups: list[list[str]], values: tuple[float, ...], shared: set[int]
) -> dict[str, float]:
    """The ASCII words whose hashes another listed word shares, with their values."""
    out: dict[str, float] = {}
    for value, words in zip(values, groups, strict=True):
        out.update((w, value) for w in words if w.isascii() and hash(w) in shared)
    return out
