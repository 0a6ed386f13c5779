"""A long word list searched as sorted text (``SortedWords``): wordfreq's rare English words
(``english_words``), the drug names (``lexicons.drug_words``) and the census surnames as the
detector asks them (``census_words``).

The ASCII words, sorted, are held 64 to a string (" w1 w2 … w64 "); a look-up bisects the
strings' first words and finds " word " in one string with ``str.find``. Nothing is hashed
or sorted when a list is read in sorted order, where ``surrogates.wordtable.HashedWords``
hashes and sorts every word in every process (0.1 s for 50,000 words; bench/README.md,
"Session 15"), and the strings take about the memory its arrays took. The words that are
not ASCII (a string holding one takes two or four bytes a character) are in a dict.
"""

from __future__ import annotations

import gzip
import sys
from array import array
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from operator import le
from pathlib import Path
from typing import Final

from pipelines import compiled

BLOCK: Final = 64  # words a line: a look-up searches one string of some 500 characters


@dataclass(frozen=True, slots=True)
class SortedWords:
    """``get`` gives a listed word's value, 0.0 for a word not listed; ``lookup`` None."""

    firsts: list[str]  # the first word of each line
    lines: list[str]  # " w1 w2 … w64 ", sorted words
    buckets: array[int]  # per word of the lines, in order: its index in ``values``
    values: tuple[float, ...]
    apart: dict[str, float]  # the words that are not ASCII

    def get(self, word: str) -> float:
        value = self.lookup(word)
        return 0.0 if value is None else value

    def lookup(self, word: str) -> float | None:
        """The word's value, or None for a word not listed (a listed word may have 0.0)."""
        if not word.isascii():
            return self.apart.get(word)
        fast = compiled.helper("words")
        if fast is not None:  # the same, compiled (the lines are ASCII: ``sorted_words``)
            return fast.lookup(self, word, BLOCK)
        if not word or " " in word:
            return None
        at = bisect_right(self.firsts, word) - 1
        if at < 0:
            return None
        line = self.lines[at]
        found = line.find(f" {word} ")
        if found < 0:
            return None
        return self.values[self.buckets[at * BLOCK + line.count(" ", 0, found)]]


def sorted_words(
    lines: list[str], buckets: array[int], values: tuple[float, ...], apart: dict[str, float]
) -> SortedWords:
    """From lines of sorted ASCII words, ``BLOCK`` to a line (the last may hold fewer)
    separated by one space, and the bucket of each word in order."""
    padded = [f" {line} " for line in lines]
    firsts = [line[1 : line.index(" ", 1)] for line in padded]
    return SortedWords(firsts, padded, buckets, values, apart)


def one_value(words: Iterable[str], value: float) -> SortedWords:
    """Every word of ``words`` (none empty or with a space) with the value ``value``."""
    listed = list(words)
    if not all(listed) or any(" " in w for w in listed):
        raise ValueError("a listed word is empty or holds a space")
    plain = [w for w in listed if w.isascii()]
    if not all(map(le, plain, islice(plain, 1, None))):
        plain = sorted(set(plain))
    lines = [" ".join(plain[at : at + BLOCK]) for at in range(0, len(plain), BLOCK)]
    apart = dict.fromkeys((w for w in listed if not w.isascii()), value)
    return sorted_words(lines, array("B", bytes(len(plain))), (value,), apart)


def write_copy(module_file: str, filename: str, data: bytes) -> None:
    """Write a shipped copy into the ``data`` folder beside ``module_file`` (gzip without a
    time stamp: the same data give the same bytes) and say where: the ``python -m`` command
    of each module that builds one (``english_words``, ``census_words``, ``drugs``)."""
    target = Path(module_file).with_name("data") / filename
    target.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    sys.stdout.write(f"wrote {target}\n")
