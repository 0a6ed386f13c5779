"""``whitespace_pieces``: the pieces cover the text in order and cut only before whitespace."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from surrogates.pieces import whitespace_pieces


@given(st.text(alphabet="ab \n\t\u00a0é", max_size=300), st.integers(min_value=1, max_value=40))
def test_pieces_cover_the_text_and_cut_before_whitespace(text: str, size: int) -> None:
    bounds = list(whitespace_pieces(text, size))
    assert "".join(text[a:b] for a, b in bounds) == text
    assert all(a < b for a, b in bounds)
    assert all(b == len(text) or text[b].isspace() for _, b in bounds)
    assert [b for _, b in bounds[:-1]] == [a for a, _ in bounds[1:]]
    # no piece is cut early: a piece ends at the first whitespace at or after its size
    for a, b in bounds[:-1]:
        assert b - a >= size and not any(c.isspace() for c in text[a + size : b])


def test_an_empty_text_has_no_piece() -> None:
    assert list(whitespace_pieces("", 8)) == []
