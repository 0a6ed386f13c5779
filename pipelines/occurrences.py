"""The other occurrences of the strings detected in a note (issue 26).

A string detected as PHI somewhere in a note is PHI wherever the note writes it again;
:func:`occurrences` gives each other occurrence a span of the same category, so the same
surrogate replaces it. Linear in the note (issue 24): one scan for the strings' first words,
then, at each place one starts, a walk of the note's next few tokens through a trie of the
strings, so the cost of a place does not grow with how many strings share a first word.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from operator import itemgetter

from pipelines.leak_guard import COMMON_WORD_ZIPF, NAME_OVER_WORD, is_mixed_case, word_pattern
from pipelines.leak_search import WORD_RUN, _compiled, is_word_char, word_runs
from pipelines.spans import Category, Span
from surrogates.names import SUFFIXES, TITLES

_NAME_WORDS = frozenset(TITLES | SUFFIXES)  # parts of a name that are no one's name

MIN_OCCURRENCE_CHARS = 3  # shorter strings ("MA", "Al") are no evidence on their own
MIN_OCCURRENCE_DIGITS = 4  # a string with digits (date, id) needs this many
_SHORT_ACRONYM = 3  # "CHF", "ICU": in a mixed-case note, short capitals are abbreviations
_NAME_PIECE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")


def occurrences(text: str, spans: Sequence[Span], acts: Callable[[Category], bool]) -> list[Span]:
    """Spans for the other occurrences in ``text`` of the strings detected and acted on.

    A string detected as PHI somewhere in a note is PHI wherever the note writes it again:
    each other occurrence (whole words, case-insensitive, whitespace as in the leak guard)
    gets a span of the same category, so it is replaced by the same surrogate — one miss of
    a found string then neither leaks it nor holds the note. The strings are the detected
    phrases and, of a name, its parts of three letters or more. Not propagated: strings
    under ``MIN_OCCURRENCE_CHARS`` (digits: ``MIN_OCCURRENCE_DIGITS``), common English words,
    clinical words and, in a mixed-case note, short all-capital abbreviations; the leak
    guard still holds a note where those survive. One pass over the note
    (:func:`~pipelines.leak_search.word_runs`) plus a check at each candidate.
    """
    mixed = is_mixed_case(text)
    wanted = _occurring(text, spans, acts, mixed)
    if not wanted:
        return []
    ascii_text = text.isascii()
    scan = text.lower() if ascii_text else text  # lower() keeps ASCII offsets
    firsts: set[str] = set()
    for phrase in wanted:
        first = WORD_RUN.match(phrase)
        if first is not None:
            firsts.add(first.group().lower() if ascii_text else first.group())
    trie = _PhraseTrie(wanted)
    covered = bytearray(len(text))
    for span in spans:
        covered[span.start : span.end] = b"\x01" * (span.end - span.start)
    out: list[Span] = []
    patterns: dict[str, re.Pattern[str]] = {}  # phrase -> its pattern, made once per note
    for at, _ in _first_words(scan, firsts, covered):
        for phrase, seen in trie.candidates(scan, at, ascii_text):
            # the guard's own pattern (and compiled-pattern cache); compiled only here, at an
            # occurrence outside what was found: most found strings never recur
            pattern = patterns.get(phrase)
            if pattern is None:
                pattern = patterns[phrase] = _compiled(f"(?i:{word_pattern(phrase)})")
            m = pattern.match(text, at)
            if m is not None and covered.find(1, at, m.end()) < 0:
                out.append(
                    Span(at, m.end(), seen.category, min(seen.confidence, 0.7), "occurrence")
                )
                covered[at : m.end()] = b"\x01" * (m.end() - at)
                break
    return out


_TEXT_TOKEN = re.compile(r"\S+")  # the complement of the guard pattern's \s+ between words


class _PhraseTrie:
    """The strings to look for, by their whitespace-separated tokens (lower case): at a
    place in the note, the strings that may start there are found by walking the note's
    next few tokens — a cost per place bounded by the longest string's token count, not by
    how many strings share a first word (a note full of "Dr ..." names). Each candidate is
    then checked with the guard's own pattern, as before."""

    __slots__ = ("children", "ends")

    def __init__(self, wanted: Mapping[str, Span] | None = None) -> None:
        self.children: dict[str, _PhraseTrie] = {}
        self.ends: list[tuple[int, str, Span]] = []  # (order in ``wanted``, string, span)
        for order, (phrase, seen) in enumerate((wanted or {}).items()):
            node = self
            for token in phrase.lower().split():
                node = node.children.setdefault(token, _PhraseTrie())
            node.ends.append((order, phrase, seen))

    def candidates(self, scan: str, at: int, lowered: bool) -> list[tuple[str, Span]]:
        """The strings that may occur at ``at``, in ``wanted``'s order (longest first). A
        string's last token may be followed, inside the note's token, by a character that
        is no word character ("Smith," "Smith's")."""
        found: list[tuple[int, str, Span]] = []
        node: _PhraseTrie | None = self
        for m in _TEXT_TOKEN.finditer(scan, at):
            if node is None or not node.children:
                break
            token = m.group() if lowered else m.group().lower()
            for cut in _cuts(token):
                last = node.children.get(token[:cut])
                if last is not None:
                    found.extend(last.ends)
            node = node.children.get(token)
        found.sort(key=_ORDER)
        return [(phrase, seen) for _, phrase, seen in found]


def _cuts(token: str) -> list[int]:
    """Where a string's last token may end inside a note's token: before each character
    that is no word character, and at its end."""
    cuts = [k for k in range(1, len(token)) if not is_word_char(token[k])]
    cuts.append(len(token))
    return cuts


_ORDER = itemgetter(0)


_FIND_BUDGET = 1 << 21  # words × characters below which str.find beats one re2 scan


def _first_words(
    scan: str, words: Collection[str], covered: bytearray
) -> Iterator[tuple[int, str]]:
    """``(start, word)`` of each maximal word run of ``scan`` that is one of ``words`` and
    starts outside ``covered``: ``str.find`` per word on a short note (no pattern to build),
    one :func:`~pipelines.leak_search.word_runs` scan on a long one."""
    if len(words) * len(scan) > _FIND_BUDGET:
        yield from ((at, w) for at, w in word_runs(scan, words) if not covered[at])
        return
    found: list[tuple[int, str]] = []
    for word in words:
        at = scan.find(word)
        while at >= 0:
            end = at + len(word)
            if (
                not covered[at]
                and (at == 0 or not is_word_char(scan[at - 1]))
                and (end == len(scan) or not is_word_char(scan[end]))
            ):
                found.append((at, word))
            at = scan.find(word, end)
    yield from sorted(found)


def _occurring(
    text: str, spans: Sequence[Span], acts: Callable[[Category], bool], mixed: bool
) -> dict[str, Span]:
    """Each string to look for again (longest first) → the first span it comes from."""
    wanted: dict[str, Span] = {}
    for span in spans:
        if not acts(span.category):
            continue
        phrase = " ".join(text[span.start : span.end].split())
        strings = [phrase]
        if span.category.is_name:
            strings += [p for p in _NAME_PIECE.findall(phrase) if p.lower() not in _NAME_WORDS]
        for string in strings:
            if string not in wanted and _propagates(string, mixed):
                wanted[string] = span
    return dict(sorted(wanted.items(), key=lambda item: -len(item[0])))


def _propagates(string: str, mixed: bool) -> bool:
    """Is the string evidence of itself wherever it recurs (see :func:`occurrences`)?"""
    if len(string) < MIN_OCCURRENCE_CHARS or not is_word_char(string[0]):
        return False
    if any(c.isdigit() for c in string):  # dates, ids: by their digits
        return sum(c.isdigit() for c in string) >= MIN_OCCURRENCE_DIGITS
    return any(_distinctive(word, mixed) for word in WORD_RUN.findall(string))


def _distinctive(word: str, mixed: bool) -> bool:
    """A word that names something: not common English, not clinical vocabulary, not a
    short abbreviation ("CHF") where the note writes other words in lower case."""
    from pipelines.phi.lexicons import clinical_word, name_score, zipf

    low = word.lower()
    if len(word) < MIN_OCCURRENCE_CHARS or (
        mixed and word.isupper() and len(word) <= _SHORT_ACRONYM
    ):
        return False
    if zipf(low) >= COMMON_WORD_ZIPF and name_score(low) < NAME_OVER_WORD:
        return False
    return not clinical_word(low)
