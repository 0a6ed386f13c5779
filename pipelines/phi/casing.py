"""The case model of a note, decided once per note from its tokens (``lexicons.tokens``):
the rules' passes read ``Case.of`` them, the learned tagger ``Case.of_words``.

Split from ``lexicons`` (its size)."""

from __future__ import annotations

from bisect import bisect_left
from enum import Enum
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pipelines.phi.lexicons import Tokens


class Case(Enum):
    """The case model of a note, decided once per note from its tokens: the rules' passes
    read ``of``, the learned tagger ``of_words`` (the same value, finer on a lower-case
    note)."""

    MIXED = "mixed"  # capitals tell something
    LOWER = "lower"  # written in lower case: its few capitals are signals
    UPPER = "upper"  # written in one case (capitals): case tells nothing

    @classmethod
    def of(cls, toks: Tokens) -> Case:
        if toks.mixed_case:
            return cls.MIXED
        return cls.LOWER if toks.lower_note else cls.UPPER

    @classmethod
    def of_words(cls, toks: Tokens) -> Case:
        """The case a reader of each word's own case (the learned tagger) takes: ``of``, but a
        lower-case note whose capitals are common (``Tokens.capitals_common``) is read as
        mixed case, its capitals written the way a mixed-case note writes them."""
        if toks.capitals_common:
            return cls.MIXED
        return cls.of(toks)


# The words of a note's first this many characters are asked for its capitals, and from this
# share of capitals among their letters on a lower-case note's capitals are common (short of
# ``_FEW_LETTERS`` letters, a note is not judged: its capitals are taken as common).
CAPITALS_SPAN: Final = 2000
COMMON_CAPITALS: Final = 0.02
_FEW_LETTERS: Final = 20


def capitals_common(starts: list[int], texts: tuple[str, ...]) -> bool:
    """Are ``COMMON_CAPITALS`` or more of the letters of the words starting in the note's
    first ``CAPITALS_SPAN`` characters capitals? (``Tokens.capitals_common``, on a
    lower-case note.)"""
    joined = "".join(texts[: bisect_left(starts, CAPITALS_SPAN)])
    if joined.isascii():  # counted by deleting the other bytes, in C
        raw = joined.encode("ascii")
        upper = len(raw.translate(None, _NOT_UPPER))
        letters = upper + len(raw.translate(None, _NOT_LOWER))
    else:
        letters = sum(map(str.isalpha, joined))
        upper = sum(map(str.isupper, joined))
    return capitals_counted(letters, upper)


def capitals_counted(letters: int, upper: int) -> bool:
    """``capitals_common`` from its counts: ``upper`` capitals of ``letters`` letters."""
    return letters < _FEW_LETTERS or upper >= COMMON_CAPITALS * letters


_NOT_UPPER: Final = bytes(c for c in range(256) if not 65 <= c <= 90)
_NOT_LOWER: Final = bytes(c for c in range(256) if not 97 <= c <= 122)
