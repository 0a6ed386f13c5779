"""A word one letter short of a common English word ("awating", "notifed"), asked by
``lexicons.near_english``: its dearest test, some 26 look-ups a letter of the word.

Where the compiled helper "words" is built (``pipelines.compiled``), a filter of every such
short form answers first: a bit array with two bits set for each common word less one of its
letters (made in a few milliseconds on the first question, 256 KB), so a word no common word
shortens to is told in one call; a word the filter may hold is asked of the look-ups, which
are the reference. bench/README.md, "Session 21: the rules' time"."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import ModuleType
from typing import Final

from pipelines import compiled

_LETTERS: Final = "abcdefghijklmnopqrstuvwxyz"
# the filter, made once per word list: (the list it was made of, the filter)
_FORMS: list[tuple[Mapping[str, float], bytes]] = []
_MAKING = threading.Lock()


def letter_dropped(word: str, common: Mapping[str, float], bound: float) -> bool:
    """Is some word of ``common`` with a value of ``bound`` or more ``word`` with one letter
    a-z added after its first ("awating" -> "awaiting")?"""
    fast = compiled.helper("words")
    if fast is not None and word.isascii() and not fast.may_be_short(_forms(common, fast), word):
        return False
    for i in range(1, len(word) + 1):
        head, tail = word[:i], word[i:]
        for letter in _LETTERS:
            if common.get(head + letter + tail, 0.0) >= bound:
                return True
    return False


def _forms(common: Mapping[str, float], fast: ModuleType) -> bytes:
    """The filter of the short forms of every word of ``common`` (a superset of those the
    bound keeps: the filter may say yes too often, never no too often)."""
    if not _FORMS or _FORMS[0][0] is not common:
        with _MAKING:
            if not _FORMS or _FORMS[0][0] is not common:
                _FORMS[:] = [(common, fast.short_forms(common))]
    return _FORMS[0][1]
