"""The exact-repeat hash's compiled normal form (pipelines/_normalise_c.pyx) against its Python
reference: the same bytes for every ASCII text and range, the same hash for every text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.versions import _normalised_piece, normalise, normalised_hash

FAST = compiled.BUILT["normalise"]
needs_helper = pytest.mark.skipif(FAST is None, reason="the normalise helper is not built here")

# every ASCII whitespace str.split() cuts at (0x1C-0x1F too), characters that are not
# whitespace though they look like it (NUL, DEL, other controls), both cases of letters
_ASCII_TEXT = st.lists(
    st.sampled_from(
        list("aZz09 \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x00\x01\x1b\x7f.-")
        + ["Ab", "  ", " \n ", "MRN", "Dr."]
    ),
    max_size=80,
).map("".join) | st.text(alphabet=st.characters(max_codepoint=127), max_size=300)


@needs_helper
@settings(max_examples=500, deadline=None)
@given(_ASCII_TEXT, st.data())
def test_compiled_piece_matches_the_reference(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert FAST is not None
    assert FAST.ascii_normalised(text, start, end) == _normalised_piece(text, start, end)


@needs_helper
def test_compiled_piece_refuses_what_it_cannot_do() -> None:
    assert FAST is not None
    with pytest.raises(ValueError, match="ASCII"):
        FAST.ascii_normalised("caf\u00e9", 0, 4)
    for start, end in ((-1, 2), (2, 1), (0, 9)):
        with pytest.raises(ValueError, match="range"):
            FAST.ascii_normalised("abc", start, end)


def _hash(text: str, pieces: int, enabled: bool) -> bytes:
    with compiled.compiled(enabled):
        return normalised_hash("research-key", text, pieces)


@settings(max_examples=300, deadline=None)
@given(_ASCII_TEXT | st.text(max_size=200), st.sampled_from([1, 3, 16, 1 << 18]))
def test_hash_is_the_same_with_and_without_the_helper(text: str, pieces: int) -> None:
    """Any text (non-ASCII ones take the Python path), cut in pieces of any size: the hash
    of the whole normal form, whichever path normalised it."""
    import hashlib

    whole = hashlib.blake2b(
        normalise(text).encode("utf-8"), key=b"research-key", digest_size=16
    ).digest()
    assert _hash(text, pieces, True) == _hash(text, pieces, False) == whole
