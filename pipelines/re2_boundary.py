"""google-re2's private internals, in one place, with its public API as the fallback.

Why internals at all: re2's ``str`` wrapper maps byte offsets back to characters after every
match (a sort, a dict and C calls per offset: about half of a scan's cost), and a match's
``group``/``span`` call back into re2 to check the group index. In ASCII text a byte offset
is the character offset, so the fast path runs the wrapper's own bytes loop (``_regexp``,
``_Anchor``, ``_NULL_SPAN``) and builds the same match objects (``_Match``), whose span list
(``_spans``) is read directly.

The fast path is used only when the installed google-re2 is a version whose internals were
checked (``CHECKED``) and every internal is there; otherwise each function below runs the
plain public definition, which is also the reference the fast path is tested against
(tests/test_third_party_internals.py, tests/phi/test_scan.py). ``internals(False)`` turns the
fast path off for a block (the equivalence tests use it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from typing import Any

import re2

CHECKED = ("1.1",)  # google-re2 major.minor releases whose internals the tests have read


def _version_checked() -> bool:
    try:
        release = metadata.version("google-re2")
    except metadata.PackageNotFoundError:
        return False
    return ".".join(release.split(".")[:2]) in CHECKED


def _internals_present() -> bool:
    if not all(hasattr(re2, name) for name in ("_Match", "_Anchor", "_NULL_SPAN")):
        return False
    probe = re2.compile("a")
    return hasattr(probe, "_regexp") and "_spans" in getattr(re2._Match, "__slots__", ())


AVAILABLE = _version_checked() and _internals_present()
_on = [AVAILABLE]  # the switch: one flag for the process, flipped only by ``internals``


def fast() -> bool:
    """Whether the internals are in use now."""
    return _on[0]


@contextmanager
def internals(enabled: bool) -> Iterator[None]:
    """Use the internals (when available) or the public API inside the block."""
    before = _on[0]
    _on[0] = enabled and AVAILABLE
    try:
        yield
    finally:
        _on[0] = before


def compile_words(pattern: str) -> Any:
    """Compile a look-around-free pattern with re2 (fast alternations of words)."""
    return re2.compile(pattern)


# -- the plain definitions: the public API, and the reference for the fast path -------------


def plain_finditer(pattern: Any, text: str) -> Iterator[Any]:
    return iter(pattern.finditer(text))


def plain_finditer_resuming(pattern: Any, text: str, resume: Callable[[Any], int]) -> Iterator[Any]:
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        yield m
        pos = resume(m)


def plain_group(match: Any, group: int) -> str:
    return match.group(group) or ""


def plain_spans(pattern: Any, data: bytes) -> Iterator[tuple[int, int]]:
    for m in pattern.finditer(data):
        yield m.span()


def plain_led_finditer(text: str, lead: Any, pattern: re.Pattern[str]) -> Iterator[re.Match[str]]:
    del lead  # the lead only speeds the search up
    return pattern.finditer(text)


# -- the boundary: fast where the internals are there, plain otherwise -----------------------


def finditer(pattern: Any, text: str) -> Iterator[Any]:
    """``pattern.finditer(text)`` for a compiled re2 ``str`` pattern."""
    if _on[0] and text.isascii():
        return _ascii_finditer(pattern, text)
    return plain_finditer(pattern, text)


def finditer_resuming(pattern: Any, text: str, resume: Callable[[Any], int]) -> Iterator[Any]:
    """``finditer(pattern, text)``, each search after a match starting at ``resume(match)``
    (at or before its end, past its start): a match may hold a character it only looks at,
    as re2 has no look-ahead, and the next search starts at that character."""
    if _on[0] and text.isascii():
        return _ascii_finditer(pattern, text, resume)
    return plain_finditer_resuming(pattern, text, resume)


def group(text: str, match: Any, index: int) -> str:
    """``match.group(index)`` ("" when the group did not take part) for a match of ``text``."""
    if _on[0]:
        start, end = match._spans[index]
        return "" if start < 0 else text[start:end]
    return plain_group(match, index)


def match_spans(pattern: Any, data: bytes) -> Iterator[tuple[int, int]]:
    """``m.span()`` of each match of a compiled re2 *bytes* ``pattern`` in ``data``."""
    if not _on[0]:
        yield from plain_spans(pattern, data)
        return
    regexp, end, pos = pattern._regexp, len(data), 0
    unanchored, null = re2._Anchor.UNANCHORED, re2._NULL_SPAN
    while True:
        span = regexp.Match(unanchored, data, pos, end)[0]
        if span == null:
            return
        yield span
        if pos == end:
            return
        pos = pos + 1 if pos == span[1] else span[1]


def led_finditer(text: str, lead: Any, pattern: re.Pattern[str]) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text)``, where the stdlib would try ``pattern`` at every candidate
    first character (every digit of a note, for a date): in ASCII text the re2 ``lead``
    finds the next place where ``pattern`` can start, in one C call, and ``pattern`` is only
    tried there. ``lead`` must match (some text) wherever ``pattern`` matches, e.g. the
    pattern without its look-ahead; ``pattern`` must never match the empty string."""
    if not (_on[0] and text.isascii()):
        yield from plain_led_finditer(text, lead, pattern)
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


if AVAILABLE:

    class _AsciiMatch(re2._Match):
        """re2's match whose ``start``/``end``/``span`` read its own span list: re2's ask the
        pattern for its group count, a call into re2, to check the index every time. There is
        one span per group, 0 to that count, so ``len(self._spans)`` gives the same check and
        the same IndexError."""

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


def _ascii_finditer(
    pattern: Any, text: str, resume: Callable[[Any], int] | None = None
) -> Iterator[Any]:
    """``pattern.finditer(text)`` for ASCII ``text``: the same matches, as re2's match
    objects, from re2's own bytes loop (``resume``: ``finditer_resuming``'s)."""
    data = text.encode("ascii")
    regexp, end, pos = pattern._regexp, len(data), 0
    unanchored, null = re2._Anchor.UNANCHORED, re2._NULL_SPAN
    while True:
        spans = regexp.Match(unanchored, data, pos, end)
        if spans[0] == null:
            return
        match = _AsciiMatch(pattern, text, 0, end, spans)
        yield match
        if pos == end:
            return
        if resume is not None:
            pos = resume(match)
        else:
            pos = pos + 1 if pos == spans[0][1] else spans[0][1]
