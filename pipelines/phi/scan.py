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

from pipelines.phi.base import Doc
from pipelines.spans import Span

_WORD = re.compile(r"[A-Za-z](?:[A-Za-z0-9'/]*[A-Za-z0-9])?|\d+(?:\.\d+)?|[#@%&]")


def word_set(words: str) -> frozenset[str]:
    """A frozen set from a whitespace-separated word list (keeps long lists readable)."""
    return frozenset(words.split())


def compile_words(pattern: str) -> Any:
    """Compile a look-around-free pattern with re2 (fast alternations of words)."""
    return re2.compile(pattern)


def grab(text: str, match: Any, group: int) -> str:
    """``match.group(group)`` for re2 matches, much cheaper (re2's ``group`` re-validates and
    re-decodes on every call; ``span`` checks the index against the pattern's group count, a
    call into re2, every time: the match's own span list is read where it is there, see
    ``_ASCII_LOOP``). "" if the group did not take part."""
    start, end = match._spans[group] if _SPANS else match.span(group)
    return "" if start < 0 else text[start:end]


# Every re2 scan pattern asked about with ``may_match``: pattern -> index in one RE2::Set.
_WATCHED: dict[str, int] = {}
# the compiled set and how many patterns (indices 0..n-1) it holds; rebuilt when one is added
_SEARCH_SET: list[tuple[Any, int]] = []
_REGISTER = threading.Lock()  # indices and rebuilds: two threads must not interleave them
# RE2::Set runs its DFA in "many match" mode, which never gives up for slowness; a large
# budget keeps it from running out of state memory on long texts (it would report no match)
_SET_MAX_MEM = 64 << 20


def _search_set(index: int) -> Any:
    """The set holding pattern ``index`` (built again, under the lock, if it is new)."""
    if not _SEARCH_SET or index >= _SEARCH_SET[0][1]:
        with _REGISTER:
            if not _SEARCH_SET or index >= _SEARCH_SET[0][1]:
                options = re2.Options()
                options.max_mem = _SET_MAX_MEM
                search = re2.Set.SearchSet(options)
                patterns = list(_WATCHED)  # in index order: indices are given under the lock
                for pattern in patterns:
                    search.Add(pattern)
                search.Compile()
                _SEARCH_SET[:] = [(search, len(patterns))]
    return _SEARCH_SET[0][0]


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
    search = _search_set(index)
    artifacts = doc.artifacts
    present = artifacts.present
    if present is None or present[0] is not search:
        present = artifacts.present = (search, frozenset(search.Match(doc.text) or ()))
    return index in present[1]


def finditer(doc: Doc, pattern: Any) -> Iterator[Any]:
    """``pattern.finditer(doc.text)`` for an re2 pattern, skipped when ``may_match`` says no."""
    if not may_match(doc, pattern):
        return iter(())
    text = doc.text
    if _ASCII_LOOP and text.isascii():
        return _ascii_finditer(pattern, text)
    return pattern.finditer(text)


# re2's str wrapper maps byte offsets back to characters after every match (a sort, a dict
# and C calls per offset: ~half of a scan's cost). In ASCII text a byte offset is the
# character offset, so ``_ascii_finditer`` runs the wrapper's own bytes loop and builds the
# same match objects. These are re2 internals: without them the public ``finditer`` is used
# (google-re2 has an upper bound for them; tests/test_third_party_internals.py checks them).
_ASCII_LOOP = all(hasattr(re2, name) for name in ("_Match", "_Anchor", "_NULL_SPAN"))
# a match's group spans, in characters, as ``span`` returns them (checked by the same test)
_SPANS = "_spans" in getattr(getattr(re2, "_Match", None), "__slots__", ())


if _SPANS:

    class _AsciiMatch(re2._Match):
        """re2's match whose ``start``/``end``/``span`` read its own span list: re2's ask the
        pattern for its group count, a call into re2, to check the index every time (a third
        of the per-match cost of the rule recognizers). There is one span per group, 0 to
        that count, so ``len(self._spans)`` gives the same check and the same IndexError."""

        __slots__ = ()

        def start(self, group: int = 0) -> int:
            spans = self._spans
            if not 0 <= group < len(spans):
                raise IndexError("bad group index")
            return spans[group][0]

        def end(self, group: int = 0) -> int:
            spans = self._spans
            if not 0 <= group < len(spans):
                raise IndexError("bad group index")
            return spans[group][1]

        def span(self, group: int = 0) -> tuple[int, int]:
            spans = self._spans
            if not 0 <= group < len(spans):
                raise IndexError("bad group index")
            return spans[group]


def _ascii_finditer(pattern: Any, text: str) -> Iterator[Any]:
    """``pattern.finditer(text)`` for ASCII ``text``: the same matches, as re2's match objects
    (``_AsciiMatch`` where the span list is there)."""
    data = text.encode("ascii")
    regexp, end, pos = pattern._regexp, len(data), 0
    unanchored, null = re2._Anchor.UNANCHORED, re2._NULL_SPAN
    match = _AsciiMatch if _SPANS else re2._Match
    while True:
        spans = regexp.Match(unanchored, data, pos, end)
        if spans[0] == null:
            return
        yield match(pattern, text, 0, end, spans)
        if pos == end:
            return
        pos = pos + 1 if pos == spans[0][1] else spans[0][1]


def led_finditer(text: str, lead: Any, pattern: re.Pattern[str]) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text)``, where the stdlib would try ``pattern`` at every candidate
    first character (every digit of a note, for a date): in ASCII text the re2 ``lead``
    finds the next place where ``pattern`` can start, in one C call, and ``pattern`` is only
    tried there. ``lead`` must match (some text) wherever ``pattern`` matches, e.g. the
    pattern without its look-ahead; ``pattern`` must never match the empty string."""
    if not (_ASCII_LOOP and text.isascii()):
        yield from pattern.finditer(text)
        return
    data = text.encode("ascii")
    regexp, end, pos = lead._regexp, len(data), 0
    unanchored, null, match = re2._Anchor.UNANCHORED, re2._NULL_SPAN, pattern.match
    while pos < end:
        start = regexp.Match(unanchored, data, pos, end)[0]
        if start == null:
            return
        found = match(text, start[0])
        if found is None:
            pos = start[0] + 1
        else:
            yield found
            pos = found.end()


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
