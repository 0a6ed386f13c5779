"""Large word lists held without a string object per word (``HashedWords``): wordfreq's
rare English words and the drug names (``pipelines.phi.lexicons``), the census surnames
(``surrogates.names``)."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass
from itertools import accumulate, islice, pairwise, repeat
from operator import and_, eq, lshift, or_, rshift
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
    """The words of ``groups[i]`` with the value ``values[i]`` (a word in one group only).

    Built with C-level ``map`` pipelines, no Python frame per word: this runs in every
    process that detects (three lists, some 430,000 words; bench/README.md, "Session 15")."""
    apart: dict[str, float] = {}
    for value, words in zip(values, groups, strict=True):
        if not all(map(str.isascii, words)):
            apart.update((w, value) for w in words if not w.isascii())
    keys = _keys(groups)
    hashes = array("q", map(rshift, keys, repeat(16)))
    if any(map(eq, hashes, islice(hashes, 1, None))):  # words the arrays cannot tell apart
        shared = {a for a, b in pairwise(hashes) if a == b}  # (none in most processes)
        keys = [key for key in keys if key >> 16 not in shared]
        apart.update(_colliding(groups, values, shared))
        hashes = array("q", map(rshift, keys, repeat(16)))
    indices = array("H", map(and_, keys, repeat(0xFFFF)))
    del keys
    # slot s starts after every hash of a lower slot: a running count of each slot's hashes
    counts = Counter(map(rshift, hashes, repeat(_SLOT_SHIFT)))
    below = map(counts.get, range(-_SLOT_BASE - 1, _SLOT_BASE), repeat(0))
    return HashedWords(apart, hashes, indices, values, array("I", accumulate(below)))


def _keys(groups: list[list[str]]) -> list[int]:
    """``hash(word) << 16 | group`` of each ASCII word, sorted: by hash, then index (one sort
    orders both arrays)."""
    keys: list[int] = []
    for i, words in enumerate(groups):
        ascii_words = words if all(map(str.isascii, words)) else filter(str.isascii, words)
        keys.extend(map(or_, map(lshift, map(hash, ascii_words), repeat(16)), repeat(i)))
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
