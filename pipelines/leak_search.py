"""How the leak guard looks for its terms in a long output: cheap probes that a term could
match at all (:class:`_Probe`), and a word index of the output that anchors each detected
phrase's search on its rarest words (:class:`_WordIndex`). Split from
:mod:`pipelines.leak_guard`, which decides what the terms are."""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from functools import lru_cache
from itertools import compress, count, repeat
from operator import gt, sub

import re2

from pipelines.re2_boundary import match_spans
from surrogates.pieces import whitespace_pieces

# How a term's needle is looked for in the (masked, lower-cased) output before its regex
# is compiled and run. Each is a necessary condition of a regex match, so skipping a term
# whose needle is absent never misses a leak; "text" is the plain substring test.
PROBE_TEXT = "text"  # anywhere
PROBE_WORD = "word"  # as a whole word: no word character right before or after it
PROBE_SQUEEZED = "squeezed"  # in the output without whitespace and - . / (alphanumeric ids)
PROBE_DIGITS = "digits"  # in the output's digits only (phone numbers)


_compiled = lru_cache(maxsize=2048)(re.compile)  # ~1.2 KB each

_ASCII_SPACE = "".join(chr(c) for c in range(128) if chr(c).isspace())  # what \s matches
# Deleted from the (ASCII) output by bytes.translate — C speed; str.translate with a table
# looks every character up in a dict.
_SQUEEZE = (_ASCII_SPACE + "-./").encode("ascii")
_NOT_DIGITS = bytes(c for c in range(128) if not chr(c).isdigit())


class _Probe:
    r"""Cheap tests on the masked output that a term's regex could match at all.

    Compiling a term's regex costs far more than running it, and most terms (ids, names,
    dates of this document) are absent from the output. The exact probes (whole word,
    squeezed, digits) are only used on ASCII output, where ``str.lower`` keeps offsets,
    ``\w``/``\s``/``\d`` are the ASCII classes and case folding is ASCII; otherwise the
    plain substring test of the lower-cased text is used, or none.
    """

    def __init__(self, scan: str) -> None:
        self.lowered = scan.lower()
        self.ascii = scan.isascii()
        self._squeezed: bytes | None = None
        self._digits: bytes | None = None

    def may_hold(self, needle: str, how: str) -> bool:
        low = self.lowered
        if how == PROBE_WORD:  # the most asked (names, detected phrases): mostly absent
            if needle not in low:
                return False
            return _whole_word(low, needle) if self.ascii else True
        if how == PROBE_TEXT:
            return needle in low
        if not self.ascii:
            return True
        if how in (PROBE_SQUEEZED, PROBE_DIGITS) and not needle.isascii():
            return False  # the output is ASCII here
        if how == PROBE_SQUEEZED:
            if self._squeezed is None:
                self._squeezed = low.encode("ascii").translate(None, _SQUEEZE)
            return needle.encode("ascii") in self._squeezed
        if how == PROBE_DIGITS:
            if self._digits is None:
                self._digits = low.encode("ascii").translate(None, _NOT_DIGITS)
            return needle.encode("ascii") in self._digits
        return True


# Above this length the detected phrases (whose number grows with the note) are looked for
# through a word index of the output instead of one scan of the output each.
GUARD_INDEX_CHARS = 50_000
WORD_RUN = re.compile(r"\w+")
_WINDOW_SLACK = 256  # characters around a needle's occurrence a match may reach


class _WordIndex:
    """Where the detected phrases' words occur in the (masked, ASCII) output.

    A match of a detected phrase's pattern contains each word of the phrase (of a name
    part's pattern: the part) as a maximal word run, so the pattern is only tried in windows
    around the occurrences of its rarest such word. One pass over the output builds the
    index; each pattern then costs at most one pass over its windows, merged.
    """

    def __init__(
        self, scan: str, anchored: Mapping[str, tuple[str, ...]], lowered: str | None = None
    ) -> None:
        """``lowered``: ``scan.lower()`` if the caller has it (a long output: one copy)."""
        if not scan.isascii():
            raise ValueError("the word index is for ASCII output")  # lower() keeps offsets
        self.scan = scan
        self.lowered = scan.lower() if lowered is None else lowered
        self.size = len(scan)
        self.anchors = anchored
        wanted = {word for words in anchored.values() for word in words}
        self.at: dict[str, list[int]] = {}
        for at, word in word_runs(self.lowered, wanted):
            self.at.setdefault(word, []).append(at)

    def search(self, pattern: str, needle: str = "") -> bool:
        """Does ``pattern`` match the output? Compiled only if its rarest anchor word occurs
        (most detected phrases were replaced: their words are gone from the output).
        ``needle``: a lower-case string without whitespace every match holds (the term's),
        looked for by ``str.find`` before the regex runs over a stretch of the output."""
        if not needle.isascii():  # ASCII output: "ſ" (long s) matches "s" case aside
            needle = ""
        words = self.anchors.get(pattern)
        if not words:  # no word to anchor on (or a non-ASCII one): the whole output
            if needle and needle not in self.lowered:
                return False
            return _compiled(pattern).search(self.scan) is not None
        found = [self.at.get(w, ()) for w in words]
        places = min(found, key=len)
        others = [starts for starts in found if starts is not places]
        reach = len(pattern) + _WINDOW_SLACK  # the pattern is longer than its match
        compiled: re.Pattern[str] | None = None  # compiled at the first window searched
        for low, high in self._windows(places, others, reach, needle):
            compiled = compiled or _compiled(pattern)
            m = compiled.search(self.scan, low, high)
            if m is None:
                continue
            if m.end() < high - _WINDOW_SLACK // 2 or high == self.size:
                return True
            # near the window's end the lookaheads saw a false end of text: look again
            if compiled.search(self.scan, m.start()) is not None:
                return True
        return False

    def _windows(
        self, places: Sequence[int], others: Sequence[Sequence[int]], reach: int, needle: str
    ) -> Iterator[tuple[int, int]]:
        """The stretches ``[at - reach, at + reach)`` around ``places`` (ascending) that
        hold an occurrence of every list of ``others`` (``_near``) and of ``needle``, those
        that overlap merged, in order. A run of places whose stretches overlap is told to
        lack ``needle`` in one ``str.find``, with no work per place: a date's "3" is written
        thousands of times in a long note, its needle "3/8/93" seldom (it was replaced)."""
        find, size = self.lowered.find, self.size
        for first, last in _runs(places, 2 * reach):
            if needle and find(needle, max(0, places[first] - reach), places[last] + reach) < 0:
                continue
            low = high = -1
            for at in places[first : last + 1]:
                if others and not _near(at, others, reach):
                    continue
                if high >= 0 and at - reach <= high:
                    high = min(size, at + reach)
                    continue
                if high >= 0 and (not needle or find(needle, low, high) >= 0):
                    yield low, high
                low, high = max(0, at - reach), min(size, at + reach)
            if high >= 0 and (not needle or find(needle, low, high) >= 0):
                yield low, high


def _runs(places: Sequence[int], gap: int) -> Iterator[tuple[int, int]]:
    """``(first, last)`` index of each run of ``places`` (ascending) no two neighbours of
    which are more than ``gap`` apart; the gaps measured in C."""
    breaks = compress(count(1), map(gt, map(sub, places[1:], places), repeat(gap)))
    first = 0
    for start in breaks:
        yield first, start - 1
        first = start
    if places:
        yield first, len(places) - 1


def _near(at: int, others: Sequence[Sequence[int]], reach: int) -> bool:
    """Is there an occurrence of every list of ``others`` (ascending starts) within
    ``reach`` characters of ``at``? A match holds all its anchor words, near each other:
    the windows around the other places hold none. A date's numbers ("3", "8") are each
    written hundreds of times in a long note, seldom near each other."""
    for starts in others:
        k = bisect.bisect_left(starts, at - reach)
        if k == len(starts) or starts[k] > at + reach:
            return False
    return True


_RUN_PIECE_CHARS = 1 << 20


_ALTERNATION_CHARS = 16_000  # re2's default DFA memory holds an alternation this long


def word_runs(
    text: str, words: Collection[str], piece_chars: int = _RUN_PIECE_CHARS
) -> Iterator[tuple[int, str]]:
    """``(start, word)`` of each maximal run of word characters in ``text`` that is one of
    ``words``, in order: ``WORD_RUN.finditer(text)`` filtered by ``words``.

    When the text and the words are ASCII (where re2's ``\\b`` is Python's ``\\w`` boundary),
    one re2 scan of the words' alternation finds them: no match object per word of the text.
    A longer alternation (thousands of words: every string found in a 5 MB note) outgrows
    re2's DFA memory, and re2 falls back to a slower engine and logs to stderr; the filter
    over ``WORD_RUN.finditer`` is linear in the text whatever the number of words.
    """
    if not any(words):  # "" is no word run
        return
    alternation = "|".join(re.escape(w) for w in sorted(words) if w)
    if len(alternation) <= _ALTERNATION_CHARS and text.isascii() and alternation.isascii():
        pattern = re2.compile(rf"\b(?:{alternation})\b".encode("ascii"))
        for start, end in whitespace_pieces(text, piece_chars):  # one small copy at a time
            for low, high in match_spans(pattern, text[start:end].encode("ascii")):
                yield start + low, text[start + low : start + high]
        return
    for m in WORD_RUN.finditer(text):
        if m.group() in words:
            yield m.start(), m.group()


def is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def _whole_word(text: str, needle: str) -> bool:
    """Does ``needle`` occur in ``text`` with no word character right before or after it?"""
    at = text.find(needle)
    end = len(text)
    while at >= 0:
        after = at + len(needle)
        if (at == 0 or not is_word_char(text[at - 1])) and (
            after >= end or not is_word_char(text[after])
        ):
            return True
        at = text.find(needle, at + 1)
    return False
