"""Where a note's words are: the indices of the words of a column that a set holds
(``lexicons.where``, the recognizers that find again the few words they judged once). Its
own module for the compiled helper's sake (``lexicons`` is at the size limit)."""

from __future__ import annotations

from itertools import compress
from typing import TYPE_CHECKING, Final, cast

from pipelines import compiled

if TYPE_CHECKING:
    from collections.abc import Set as AbstractSet

# Up to this many distinct words wanted, each is found by comparing it with each word.
FEW_WORDS: Final = 4


def positions(column: tuple[str, ...], present: AbstractSet[str]) -> list[int]:
    """Indices, ascending, of the items of ``column`` in ``present``, a set of items that
    occur in it (``where``: a few are found with ``tuple.index``). The compiled helper
    "words" does it in one loop (``_words_c.positions``: a few words compared by length and
    bytes, more looked up in the set); this code is its reference."""
    fast = compiled.helper("words")
    if fast is not None and isinstance(present, (set, frozenset)):
        return cast("list[int]", fast.positions(column, present, FEW_WORDS))
    if len(present) > FEW_WORDS:
        return list(compress(range(len(column)), map(present.__contains__, column)))
    found: list[int] = []
    for word in present:
        at = column.index(word)
        while True:
            found.append(at)
            try:
                at = column.index(word, at + 1)
            except ValueError:
                break
    if len(present) > 1:
        found.sort()
    return found
