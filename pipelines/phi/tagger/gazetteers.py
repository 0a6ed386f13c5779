"""The tagger's gazetteers: the facility names shipped in ``pipelines/phi/data/hospitals.txt``
(their cores without the generic head) and the zip-code cities, as word tries matched over a
note's lower-case words, and the features they give (a phrase's first word, its other words,
the words before and after it). Split from :mod:`pipelines.phi.tagger.features`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from itertools import compress, count
from typing import TYPE_CHECKING, Final

from pipelines.phi import lexicons
from pipelines.phi.wordlists import word_set

if TYPE_CHECKING:
    from pipelines.phi.tagger.features import Attributes

_GENERIC_HEADS: Final = word_set("tagger_facility_generic_words")
_END: Final = ""  # the trie key that marks a whole phrase (no token is empty)
Trie = dict[str, "Trie"]


@dataclass(frozen=True)
class Gazetteer:
    """Multi-word phrases as a word trie: a phrase matches where its words follow."""

    trie: Trie  # word -> the phrases that go on with it; _END -> _NOTHING where one ends
    words: frozenset[str]

    def matches(
        self, lowers: list[str], candidates: list[int] | None = None
    ) -> list[tuple[int, int]]:
        """``(start, end)`` token ranges of the longest phrase starting at each token (of
        ``candidates``, the positions where some phrase may start, when given); a match
        ends where the next may start."""
        root = self.trie
        n = len(lowers)
        out: list[tuple[int, int]] = []
        end = 0
        for i in range(n) if candidates is None else candidates:
            node = root.get(lowers[i])
            if node is None or i < end:
                continue
            best = i + 1 if _END in node else 0
            k = i + 1
            while k < n:
                node = node.get(lowers[k])
                if node is None:
                    break
                k += 1
                if _END in node:
                    best = k
            if best:
                out.append((i, best))
                end = best
        return out


def _gazetteer(phrases: set[tuple[str, ...]]) -> Gazetteer:
    trie: Trie = {}
    distinct: dict[str, str] = {}
    for phrase in phrases:
        if phrase:
            node = trie
            for each in phrase:
                word = distinct.setdefault(each, each)  # one string per word, not per use
                node = node.setdefault(word, {})
            node[_END] = _NOTHING
    _share_leaves(trie)
    return Gazetteer(trie, frozenset(distinct))


# Shared by every gazetteer once built (and never written to): the node past a phrase's
# end, and the node of a phrase that no longer phrase goes on from. Most nodes are such;
# a dict each took half the tries' memory (figures: bench/README.md, "Memory").
_NOTHING: Final[Trie] = {}
_LEAF: Final[Trie] = {_END: _NOTHING}


def _share_leaves(node: Trie) -> None:
    for word, child in node.items():
        if child.keys() == _LEAF.keys():
            node[word] = _LEAF
        elif child is not _NOTHING:
            _share_leaves(child)


def _lower_tokens(text: str) -> tuple[str, ...]:
    """The words of ``text`` as the tagger tokenizes a note (``lexicons.token_columns``),
    lower-cased."""
    pattern = lexicons.ASCII_TOKEN if text.isascii() else lexicons.TOKEN
    return tuple(map(str.lower, pattern.findall(text)))


@cache
def facility_names() -> tuple[str, ...]:
    """The US facility gazetteer (MITRE MIST's hospitals.txt, BSD; see README-hospitals.md)."""
    raw = resources.files("pipelines.phi").joinpath("data/hospitals.txt").read_text("utf-8")
    return tuple(line.strip() for line in raw.splitlines() if line.strip() and line[0] != "#")


def facility_core(name: str) -> str:
    """A facility name without its generic head words: "X Y Memorial Hospital" -> "X Y"."""
    words = name.split()
    while words and words[-1].lower() in _GENERIC_HEADS:
        words.pop()
    return " ".join(words)


@cache
def facilities() -> Gazetteer:
    phrases = {_lower_tokens(n) for n in facility_names()}
    return _gazetteer(phrases)


@cache
def facility_cores() -> Gazetteer:
    cores = {_lower_tokens(facility_core(n)) for n in facility_names()}
    return _gazetteer(
        {c for c in cores if c and not (len(c) == 1 and lexicons.common_zipf(c[0]) > 4.5)}
    )


@cache
def cities() -> Gazetteer:
    return _gazetteer({_lower_tokens(c) for c in lexicons.us_cities() if " " in c})


_GAZETTEERS: Final = {"gf": facilities, "gc": facility_cores, "gt": cities}

# --------------------------------------------------------------------------- word features


@cache
def _any_first_word() -> frozenset[str]:
    return frozenset().union(*(g().trie.keys() for g in _GAZETTEERS.values()))


# A gazetteer and the records of its kept parts (``_GAZETTEER_PARTS``; None: not kept)
Parts = tuple[bytes | None, bytes | None, bytes | None, bytes | None]
GazetteerPlan = tuple[Callable[[], Gazetteer], Parts]


def gazetteer_plans(attributes: Attributes) -> tuple[GazetteerPlan, ...]:
    """The gazetteers a model has features of, with their parts' records (once per model)."""
    plans: list[GazetteerPlan] = []
    for name, gazetteer in _GAZETTEERS.items():
        begin, inside, before, after = (
            attributes.one(a) if (a := f"{name}={part}") in attributes else None
            for part in _GAZETTEER_PARTS
        )
        if begin or inside or before or after:
            plans.append((gazetteer, (begin, inside, before, after)))
    return tuple(plans)


def add_gazetteer_features(
    lowers: list[str],
    extras: dict[int, bytes],
    plans: tuple[GazetteerPlan, ...],
    candidates: list[int] | None = None,
) -> None:
    """Each phrase's parts' records added to the tokens they fall on (``gazetteer_plans``).
    ``candidates``: the tokens whose word starts some phrase (``_any_first_word``), when
    the caller has them."""
    if candidates is None:
        candidates = list(compress(count(), map(_any_first_word().__contains__, lowers)))
    if not candidates:
        return
    n = len(lowers)
    for gazetteer, parts in plans:
        for start, end in gazetteer().matches(lowers, candidates):
            _mark(extras, start, end, n, parts)


def _mark(extras: dict[int, bytes], start: int, end: int, n: int, parts: Parts) -> None:
    """One phrase's attributes: on its first word, its other words, the words around it."""
    begin, inside, before, after = parts
    if begin:
        extras[start] = extras.get(start, b"") + begin
    if inside:
        for k in range(start + 1, end):
            extras[k] = extras.get(k, b"") + inside
    if start > 0 and before:
        extras[start - 1] = extras.get(start - 1, b"") + before
    if end < n and after:
        extras[end] = extras.get(end, b"") + after


# a phrase's first word, its other words, the word before it and the word after it
_GAZETTEER_PARTS: Final = ("B", "I", "next", "prev")
