"""Shared fast scanning helpers for the pattern recognizers.

Measured on the PhysioNet dev notes (bench/README.md, "Figures from code comments"): the
stdlib ``re`` is fastest for patterns that start with a digit or a literal (its prefix search
skips ahead), while big word alternations (month names, cue words) are several times cheaper
with ``google-re2``. So: digit-led candidates use ``re``; word-led scans use
``re2`` (no look-around there); context checks around candidates use small ``re``/string
work on a window. Results shared by several recognizers are kept in ``Doc.artifacts``.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Iterator
from typing import Any, NamedTuple

import re2

from pipelines import re2_boundary
from pipelines.phi.base import Doc
from pipelines.re2_boundary import compile_words, led_finditer
from pipelines.re2_boundary import group as grab
from pipelines.spans import Span

__all__ = [
    "compile_words",
    "finditer",
    "grab",
    "keep_best",
    "led_finditer",
    "lower",
    "may_match",
    "next_char",
    "stand_in",
    "prev_char",
    "words_after",
    "words_before",
]

_WORD = re.compile(r"[A-Za-z](?:[A-Za-z0-9'/]*[A-Za-z0-9])?|\d+(?:\.\d+)?|[#@%&]")


# Every re2 scan pattern asked about with ``may_match``: pattern -> index (0, 1, …).
_WATCHED: dict[str, int] = {}
# A watched pattern's stand-in in the sets (``stand_in``): pattern -> a smaller pattern that
# matches somewhere in a text exactly when the pattern does.
_STAND_INS: dict[str, str] = {}
# The patterns in ``_SET_PARTS`` RE2::Sets, each holding a run of indices (``_Part``); rebuilt
# when a pattern is added. Why not one set: a set's DFA is built as text comes, and on a note
# it has not seen (every note, in a worker) the states of one set of every pattern multiply
# each other's: two half sets cost about half of one (bench/README.md, "Session 21").
_SET_PARTS = 2
_SEARCH_SET: list[tuple[_Part, ...]] = []
_REGISTER = threading.Lock()  # indices and rebuilds: two threads must not interleave them
# RE2::Set runs its DFA in "many match" mode, which never gives up for slowness; a large
# budget keeps it from running out of state memory on long texts (it would report no match)
_SET_MAX_MEM = 64 << 20


class _Part(NamedTuple):
    """A set of the patterns ``first`` to ``end - 1``: compiled for UTF-8 text, and for
    ASCII text as Latin-1 (the UTF-8 set where a pattern will not compile so)."""

    utf8: Any
    latin1: Any
    first: int
    end: int


def _search_sets(index: int) -> tuple[_Part, ...]:
    """The sets holding every pattern up to ``index`` (built again, under the lock, if it is
    new)."""
    if not _SEARCH_SET or index >= _SEARCH_SET[0][-1].end:
        with _REGISTER:
            if not _SEARCH_SET or index >= _SEARCH_SET[0][-1].end:
                _build()
    return _SEARCH_SET[0]


def _build() -> None:
    """The sets built again (under the lock) from every pattern watched, in index order."""
    patterns = [_STAND_INS.get(p, p) for p in _WATCHED]
    _SEARCH_SET[:] = [tuple(_part(patterns, run) for run in _runs(patterns))]


def _runs(patterns: list[str]) -> list[range]:
    """The indices of ``patterns`` in ``_SET_PARTS`` runs (fewer for fewer patterns) of
    about equal length in characters (a rough measure of a pattern's automaton)."""
    total = sum(map(len, patterns))
    runs: list[range] = []
    first, done = 0, 0
    for i, pattern in enumerate(patterns):
        if i > first and done + len(pattern) / 2 > total * (len(runs) + 1) / _SET_PARTS:
            runs.append(range(first, i))
            first = i
        done += len(pattern)
    return [*runs, range(first, len(patterns))]


def _part(patterns: list[str], run: range) -> _Part:
    some = patterns[run.start : run.stop]
    utf8 = _compiled(some, latin1=False)
    return _Part(utf8, _latin1_set(some) or utf8, run.start, run.stop)


def _compiled(patterns: list[str], latin1: bool) -> Any:
    options = re2.Options()
    options.max_mem = _SET_MAX_MEM
    if latin1:
        options.encoding = re2.Options.Encoding.LATIN1
    search = re2.Set.SearchSet(options)
    for pattern in patterns:
        search.Add(_as_latin1(pattern) if latin1 else pattern)
    search.Compile()
    return search


def _as_latin1(pattern: str) -> bytes:
    """``pattern`` for a Latin-1 set, each character beyond Latin-1 (a dash, a quote mark)
    made byte 0xFF: as a literal, a class member or a range's end it then stands for the
    same ASCII characters as before (none, or all up to the end), so on ASCII text the
    pattern matches where it did."""
    return "".join(c if ord(c) < 256 else "\xff" for c in pattern).encode("latin-1")


def _latin1_set(patterns: list[str]) -> Any:
    """The patterns as one Latin-1 set, asked about ASCII text (None if one will not
    compile so). The same answers there as the UTF-8 set, from a smaller automaton: no
    multi-byte paths for Unicode classes and case folding (Kelvin sign, long s), so fewer
    states to build on new text and to keep in cache (bench/README.md, "Session 14")."""
    try:
        return _compiled(patterns, latin1=True)
    except re2.error:
        return None


def stand_in(pattern: Any, presence: str) -> None:
    """Let the sets hold ``presence`` in place of the re2 ``pattern``: a pattern that matches
    somewhere in a text exactly when ``pattern`` does, with fewer states to build on new
    text (bench/README.md, "Session 23"). The usual one is ``pattern`` without what it may
    match around what it must: an optional part at either end of an alternative, a leading
    run cut to its last repetition (``\\d{1,4}/`` matches where ``\\d/`` does)."""
    with _REGISTER:
        if _STAND_INS.get(pattern.pattern) != presence:
            _STAND_INS[pattern.pattern] = presence
            if _SEARCH_SET and pattern.pattern in _WATCHED:
                _build()


def may_match(doc: Doc, pattern: Any) -> bool:
    """False when the re2 ``pattern`` matches nowhere in ``doc.text``, so its scan can be skipped.

    Why: most scans find nothing in most notes (ages, ids, phones, addresses, URLs…), yet each
    re2 ``finditer`` costs wrapper and DFA work. One pass of each RE2::Set per document answers
    for every watched pattern at once, kept in ``doc.artifacts.present``.
    """
    index = _WATCHED.get(pattern.pattern)
    if index is None:  # first use of this pattern in the process
        with _REGISTER:
            index = _WATCHED.setdefault(pattern.pattern, len(_WATCHED))
    parts = _search_sets(index)
    artifacts = doc.artifacts
    present = artifacts.present
    if present is None or present[0] is not parts:
        present = artifacts.present = (parts, _matched(parts, doc.text))
    return index in present[1]


def _matched(parts: tuple[_Part, ...], text: str) -> frozenset[int]:
    """The indices of the patterns that match somewhere in ``text``."""
    data = text.encode("ascii") if text.isascii() else None
    found: list[int] = []
    for utf8, latin1, first, _ in parts:
        hits = utf8.Match(text) if data is None or latin1 is utf8 else latin1.Match(data)
        if hits:
            found += map(first.__add__, hits)
    return frozenset(found)


def finditer(doc: Doc, pattern: Any) -> Iterator[Any]:
    """``pattern.finditer(doc.text)`` for an re2 pattern, skipped when ``may_match`` says no."""
    if not may_match(doc, pattern):
        return iter(())
    return re2_boundary.finditer(pattern, doc.text)


def lower(doc: Doc) -> str:
    """The lower-cased text (same length as ``doc.text`` for the checks we do on it)."""
    artifacts = doc.artifacts
    found = artifacts.lower
    if found is None:
        found = artifacts.lower = doc.text.lower()
    return found


def words_before(text: str, pos: int, count: int = 2, window: int = 40) -> list[str]:
    """The last ``count`` word-ish tokens before ``pos`` on the same line, lower-cased,
    nearest last (a line break ends the context: headings and lists start afresh)."""
    lo = pos - window if pos > window else 0
    found = _WORD.findall(text, max(lo, text.rfind("\n", lo, pos) + 1), pos)
    if count == 1:  # the common ask: no slice, no list comprehension
        return [found[-1].lower()] if found else []
    return [w.lower() for w in found[-count:]]


def words_after(text: str, pos: int, count: int = 2, window: int = 40) -> list[str]:
    """The first ``count`` word-ish tokens after ``pos`` on the same line, nearest first."""
    hi = text.find("\n", pos, pos + window)
    return [w.lower() for w in _WORD.findall(text, pos, hi if hi >= 0 else pos + window)[:count]]


def next_char(text: str, pos: int, skip_space: bool = True) -> str:
    """The first character at or after ``pos`` (skipping blanks), or '' at the end."""
    n = len(text)
    while skip_space and pos < n and text[pos] in " \t":
        pos += 1
    return text[pos] if pos < n else ""


def prev_char(text: str, pos: int, skip_space: bool = True) -> str:
    """The last character before ``pos`` (skipping blanks), or '' at the start."""
    pos -= 1
    while skip_space and pos >= 0 and text[pos] in " \t":
        pos -= 1
    return text[pos] if pos >= 0 else ""


def keep_best(spans: list[Span]) -> list[Span]:
    """One reading per region within a recognizer: the most confident span wins over the
    weaker ones it overlaps (a cue-confirmed reading over the same digits seen by shape)."""
    starts: list[int] = []  # kept spans never overlap, so sorted by start = sorted by end
    kept: list[Span] = []
    for span in sorted(spans, key=lambda s: (-s.confidence, -s.length, s.start)):
        i = bisect.bisect_left(starts, span.start)
        if i < len(kept) and kept[i].start < span.end:
            continue
        if i > 0 and kept[i - 1].end > span.start:
            continue
        starts.insert(i, span.start)
        kept.insert(i, span)
    return kept
