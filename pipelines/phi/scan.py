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
from typing import Any

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
    "prev_char",
    "words_after",
    "words_before",
]

_WORD = re.compile(r"[A-Za-z](?:[A-Za-z0-9'/]*[A-Za-z0-9])?|\d+(?:\.\d+)?|[#@%&]")


# Every re2 scan pattern asked about with ``may_match``: pattern -> index in one RE2::Set.
_WATCHED: dict[str, int] = {}
# the compiled sets (UTF-8, and Latin-1 for ASCII text) and how many patterns (indices
# 0..n-1) they hold; rebuilt when one is added
_SEARCH_SET: list[tuple[Any, Any, int]] = []
_REGISTER = threading.Lock()  # indices and rebuilds: two threads must not interleave them
# RE2::Set runs its DFA in "many match" mode, which never gives up for slowness; a large
# budget keeps it from running out of state memory on long texts (it would report no match)
_SET_MAX_MEM = 64 << 20


def _search_sets(index: int) -> tuple[Any, Any, int]:
    """The sets holding pattern ``index`` (built again, under the lock, if it is new)."""
    if not _SEARCH_SET or index >= _SEARCH_SET[0][2]:
        with _REGISTER:
            if not _SEARCH_SET or index >= _SEARCH_SET[0][2]:
                patterns = list(_WATCHED)  # in index order: indices are given under the lock
                utf8 = _compiled(patterns, latin1=False)
                _SEARCH_SET[:] = [(utf8, _latin1_set(patterns) or utf8, len(patterns))]
    return _SEARCH_SET[0]


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


def may_match(doc: Doc, pattern: Any) -> bool:
    """False when the re2 ``pattern`` matches nowhere in ``doc.text``, so its scan can be skipped.

    Why: most scans find nothing in most notes (ages, ids, phones, addresses, URLs…), yet each
    re2 ``finditer`` costs wrapper and DFA work. One RE2::Set pass per document answers for
    every watched pattern at once, kept in ``doc.artifacts.present``.
    """
    index = _WATCHED.get(pattern.pattern)
    if index is None:  # first use of this pattern in the process
        with _REGISTER:
            index = _WATCHED.setdefault(pattern.pattern, len(_WATCHED))
    utf8, latin1, _ = _search_sets(index)
    text = doc.text
    search = latin1 if text.isascii() else utf8
    artifacts = doc.artifacts
    present = artifacts.present
    if present is None or present[0] is not search:
        matched = search.Match(text.encode("ascii") if search is not utf8 else text)
        present = artifacts.present = (search, frozenset(matched or ()))
    return index in present[1]


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
