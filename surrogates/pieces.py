"""A long text a piece at a time, cut at whitespace: what reads a whole note (its word set,
its fingerprint, its near-duplicate sketch, the leak guard's word scan) then holds one
piece's copy or words at once, never a string per word of the note."""

from __future__ import annotations

import re
from collections.abc import Iterator

_SPACE = re.compile(r"\s")  # what str.split() splits on; never inside a word or a word run


def whitespace_pieces(text: str, size: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of consecutive pieces covering ``text``, each about ``size``
    characters and ending just before a whitespace character (so no word is split); one
    piece when there is none to cut at, none for an empty text."""
    start = 0
    while start < len(text):
        cut = _SPACE.search(text, start + size) if len(text) - start > size else None
        end = cut.start() if cut else len(text)
        yield start, end
        start = end
