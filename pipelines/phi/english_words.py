"""wordfreq's large English list as ``lexicons.zipf`` asks it, read from a compact copy shipped
beside this package (``data/english_words.bin.gz``).

Why a copy: read from wordfreq's own file, the list is 321,000 word strings a process makes
and then hashes and sorts into ``HashedWords`` (the rare tail) to keep it small, about 0.4 s
of every process that detects, the largest part of a short ``deidstream detect``'s start
(bench/README.md, "Session 15"). The copy holds the same words and values laid out to be
searched as they are: the common words (Zipf >= 3.3) one line per frequency bucket, made
into a dict; the rare ASCII words sorted, 64 to a line (``sorted_words.SortedWords``), each line one string searched with
``str.find`` after a ``bisect`` on the lines' first words; the few rare words that are not
ASCII one a line, made into a dict. The bucket of each rare ASCII word, in order, is a byte
after the text. Nothing is hashed or sorted at load, and the strings kept take about the
memory the hashes took.

The copy is derived, not written by hand: ``python -m pipelines.phi.english_words`` rewrites
it from the installed wordfreq, and ``tests/phi/test_lexicons.py`` fails when the two
differ. wordfreq's data is CC BY-SA 4.0 (pipelines/phi/data/README.md).
"""

from __future__ import annotations

import gzip
import math
from array import array
from importlib import resources
from itertools import repeat
from typing import Final

from pipelines.phi.sorted_words import BLOCK, SortedWords, sorted_words

FILENAME: Final = "english_words.bin.gz"
_HEADER: Final = (
    "# wordfreq's large English list (large_en.msgpack.gz, CC BY-SA 4.0): the common words\n"
    "# by bucket, the rare ASCII words sorted, the rare others; written by\n"
    "# `python -m pipelines.phi.english_words` from the installed wordfreq, not by hand.\n"
)


def bucket_values(count: int) -> tuple[float, ...]:
    """Each bucket's Zipf value: ``log10`` of its frequency ``10 ** (-i / 100)`` plus 9, the
    float ``zipf`` always computed (one float object per bucket)."""
    return tuple(math.log10(10 ** (-index / 100)) + 9.0 for index in range(count))


def shipped() -> tuple[dict[str, float], SortedWords]:
    """The common words (word -> Zipf value) and the rare tail, from the shipped copy."""
    raw = gzip.decompress(resources.files("pipelines.phi").joinpath("data", FILENAME).read_bytes())
    cut = raw.index(b"\0")
    lines = iter(raw[:cut].decode("utf-8").splitlines())
    line = next(lines)
    while line.startswith("#"):
        line = next(lines)
    values = bucket_values(int(line.split()[1]))
    common: dict[str, float] = {}
    for _ in range(int(next(lines).split()[1])):
        index, *words = next(lines).split(" ")
        common.update(zip(words, repeat(values[int(index)])))
    _, first, count = next(lines).split()
    rare = [next(lines) for _ in range(int(count))]
    apart: dict[str, float] = {}
    for line in lines:
        word, index = line.rsplit(" ", 1)
        apart[word] = values[int(index)]
    return common, sorted_words(rare, array("B", raw[cut + 1 :]), values[int(first) :], apart)


def from_package() -> bytes:
    """The copy's bytes (before gzip) as derived from the installed wordfreq now."""
    from pipelines.phi.lexicons import _english_buckets

    buckets = _english_buckets()
    first, common, rare = _split(buckets)
    _check([w for _, words in common for w in words] + list(rare), rare)
    words = sorted(w for w in rare if w.isascii())
    text = [_HEADER, f"buckets {len(buckets)}\n", f"common {len(common)}\n"]
    text.extend(f"{i} {' '.join(ws)}\n" for i, ws in common)
    lines = [words[at : at + BLOCK] for at in range(0, len(words), BLOCK)]
    text.append(f"rare {first} {len(lines)}\n")
    text.extend(f"{' '.join(line)}\n" for line in lines)
    text.extend(f"{w} {rare[w] + first}\n" for w in sorted(rare) if not w.isascii())
    return "".join(text).encode("utf-8") + b"\0" + bytes(rare[w] for w in words)


def _split(buckets: list[list[str]]) -> tuple[int, list[tuple[int, list[str]]], dict[str, int]]:
    """The first rare bucket, the common buckets that hold words, and each rare word's
    bucket less the first rare one."""
    from pipelines.phi.lexicons import _COMMON_ZIPF

    values = bucket_values(len(buckets))
    first = next(i for i, value in enumerate(values) if value < _COMMON_ZIPF)
    if any(value >= _COMMON_ZIPF for value in values[first:]):
        raise ValueError("the common buckets are not the first ones")
    common = [(i, words) for i, words in enumerate(buckets[:first]) if words]
    rare = {w: i - first for i in range(first, len(buckets)) for w in buckets[i]}
    return first, common, rare


def _check(words: list[str], rare: dict[str, int]) -> None:
    """The copy's layout holds: no word empty or with a space, a rare bucket in a byte."""
    if not all(words) or any(len(w.split()) != 1 or w.strip() != w for w in words):
        raise ValueError("a listed word is empty or holds a space")
    if max(rare.values(), default=0) > 255:
        raise ValueError("more than 256 rare buckets: widen the bucket array")


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    from pipelines.phi.sorted_words import write_copy

    write_copy(__file__, FILENAME, from_package())
