"""Where the propagation step (``pipelines.phi.propagate``) looks: whole-word occurrences.

One definition of a whole word for every row: no word character (``\\w``) right before or
after, no letters joined by an apostrophe ("Don" is not in "don't"), a possessive "'s" after
allowed and left out. Linear in the note (issue 24): one scan for the strings' first words,
then, at each place one starts, a walk of the note's next few tokens through a trie of the
strings, so the cost of a place does not grow with how many strings share a first word.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from operator import itemgetter
from typing import Final

from pipelines.spans import Span

# as ``pipelines.leak_search`` has them (that module, with the surrogates it reads, is
# imported only for a long note's scan: the detector's import stays light)
WORD_RUN: Final = re.compile(r"\w+")


def is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


_WORD: Final = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_APOSTROPHES: Final = "'’"
_TEXT_TOKEN: Final = re.compile(r"\S+")
_FIND_BUDGET: Final = 1 << 21  # words × characters below which str.find beats one re2 scan


def starts_word(text: str, at: int) -> bool:
    """No word (nor a word and an apostrophe: "don't") runs on into ``at``."""
    if at == 0:
        return True
    before = text[at - 1]
    if is_word_char(before):
        return False
    return not (before in _APOSTROPHES and at >= 2 and is_word_char(text[at - 2]))


def word_end(text: str, end: int) -> int | None:
    """Where the span of an occurrence ending at ``end`` ends: there, when no word runs on
    past it (a possessive "'s" may, and stays outside); None when a word does."""
    if end == len(text):
        return end
    after = text[end]
    if is_word_char(after):
        return None
    if after in _APOSTROPHES and end + 1 < len(text) and is_word_char(text[end + 1]):
        possessive = text[end + 1] in "sS" and (
            end + 2 == len(text) or not is_word_char(text[end + 2])
        )
        return end if possessive else None
    return end


def written_as_name(text: str, start: int, end: int) -> bool:
    """Every word capitalised ("Smith", "McDonald") or in capitals."""
    for word in _WORD.findall(text, start, end):
        if not ((word[0].isupper() and word[1:2].islower()) or word.isupper()):
            return False
    return True


def first_word(key: str) -> str:
    """The first word of a string: letters (maybe joined by apostrophes, "o'brien") when
    no other word character follows them, else its first run of word characters."""
    m = _WORD.match(key)
    if m is not None and (m.end() == len(key) or not is_word_char(key[m.end()])):
        return m.group()
    run = WORD_RUN.match(key)
    return run.group() if run is not None else key


def first_words(scan: str, words: Collection[str], covered: bytearray) -> Iterable[tuple[int, str]]:
    """``(start, word)``, in order, of each whole-word occurrence in ``scan`` of one of
    ``words`` starting outside ``covered``: ``str.find`` per word on a short text; on a long
    one a :func:`~pipelines.leak_search.word_runs` scan, lazily (for the words that are runs
    of word characters; the others, "o'brien", by ``str.find``)."""
    plain: Collection[str] = words
    runs: Iterator[tuple[int, str]] | None = None
    if len(words) * len(scan) > _FIND_BUDGET:
        from pipelines.leak_search import word_runs

        whole = {w for w in words if WORD_RUN.fullmatch(w)}
        runs = ((at, w) for at, w in word_runs(scan, whole) if not covered[at])
        plain = [w for w in words if w not in whole]
    found: list[tuple[int, str]] = []
    for word in plain:
        at = scan.find(word)
        while at >= 0:
            if not covered[at] and starts_word(scan, at):
                found.append((at, word))
            at = scan.find(word, at + len(word))
    found.sort()
    return found if runs is None else heapq.merge(runs, found)


class _Node:
    """A node of :class:`StringTrie`: the tokens that go on from here, the strings ending."""

    __slots__ = ("children", "ends")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.ends: list[tuple[int, str, Span]] = []  # (order in ``wanted``, string, seed)


class StringTrie(_Node):
    """The strings to look for (lower case), by their whitespace-separated tokens: at a
    place in the note the strings that may start there are found by walking the note's next
    few tokens (after the session's ``occurrences`` trie, issue 24)."""

    __slots__ = ("firsts", "words")

    def __init__(self, wanted: Mapping[str, Span] | None = None) -> None:
        super().__init__()
        self.firsts: set[str] = set()  # the strings' first words, as written in ``wanted``
        # when every string is its own first word (a name's words): string -> its seed
        self.words: dict[str, Span] | None = {}
        for order, (key, seed) in enumerate((wanted or {}).items()):
            first = first_word(key)
            self.firsts.add(first)
            if self.words is not None:
                self.words[key] = seed
                if first != key:
                    self.words = None
            node: _Node = self
            for token in key.lower().split():
                nxt = node.children.get(token)
                if nxt is None:
                    nxt = node.children[token] = _Node()
                node = nxt
            node.ends.append((order, key, seed))

    def candidates(self, scan: str, at: int, word: str) -> list[tuple[str, Span]]:
        """The strings that may occur at ``at``, where the first word ``word`` is, in
        ``wanted``'s order. A string's last token may be followed, inside the note's token,
        by a character that is no word character ("Smith," "Smith's")."""
        if self.words is not None:
            seed = self.words.get(word)
            return [(word, seed)] if seed is not None else []
        found: list[tuple[int, str, Span]] = []
        node: _Node | None = self
        for m in _TEXT_TOKEN.finditer(scan, at):
            if node is None or not node.children:
                break
            token = m.group().lower()
            for cut in _cuts(token):
                last = node.children.get(token[:cut])
                if last is not None:
                    found.extend(last.ends)
            node = node.children.get(token)
        found.sort(key=_ORDER)
        return [(key, seed) for _, key, seed in found]


def _cuts(token: str) -> list[int]:
    """Where a string's last token may end inside a note's token: before each character
    that is no word character, and at its end."""
    if token.isalnum():
        return [len(token)]  # most tokens: letters or digits only
    cuts = [k for k in range(1, len(token)) if not is_word_char(token[k])]
    cuts.append(len(token))
    return cuts


_ORDER: Final = itemgetter(0)
