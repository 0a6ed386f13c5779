"""The near-duplicate sketch's compiled helper (pipelines/_sketch_c.pyx) against its Python code."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled, near_duplicates


def _sketch(text: str, key: str, size: int, enabled: bool) -> tuple[int, ...]:
    with compiled.compiled(enabled):
        return near_duplicates.sketch(text, key, size)


# ASCII text dense in what the sketch decides on: word characters of every class (upper case
# folds), separators of every kind, repeated words (repeated shingles), one- and two-word texts
_SKETCH_TEXT = st.lists(
    st.sampled_from(
        list("aZz_09 \t\n\x00\x7f-.,'") + ["Ab", "ab", "AB", "x_1", "the", "The", "THE", "  "]
    ),
    max_size=60,
).map("".join) | st.text(alphabet=st.characters(max_codepoint=127), max_size=200)


@settings(max_examples=400, deadline=None)
@given(_SKETCH_TEXT, st.sampled_from(["k", "patient-key", "x" * 70]), st.sampled_from([1, 3, 64]))
def test_compiled_sketch_matches_the_python_sketch(text: str, key: str, size: int) -> None:
    assert _sketch(text, key, size, True) == _sketch(text, key, size, False)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 400), min_size=0, max_size=3000),
    st.sampled_from([1, 8, 64, 5000]),
)
def test_compiled_sketch_matches_on_long_texts(numbers: list[int], size: int) -> None:
    """Many shingles (and repeats of them): the kept bottom evicts and skips equal values."""
    text = " ".join(f"w{n}" if n % 3 else f"W{n}." for n in numbers)
    assert _sketch(text, "k", size, True) == _sketch(text, "k", size, False)


@pytest.mark.parametrize(
    "text",
    ["", "   ", "a", "A", "a b", "a b c", "_", "9 9 9 9", "x" * 300, "Straße in Köln"],
)
def test_compiled_sketch_on_edges(text: str) -> None:
    assert _sketch(text, "k", 64, True) == _sketch(text, "k", 64, False)


def test_the_compiled_sketch_refuses_text_that_is_not_ascii() -> None:
    fast = compiled.BUILT["sketch"]
    if fast is None:
        pytest.skip("the sketch helper is not built here")
    with pytest.raises(ValueError, match="ASCII"):
        fast.ascii_sketch("Straße", 1, 1, 1, 0, 64)
    with pytest.raises(ValueError, match="positive"):
        fast.ascii_sketch("word", 1, 1, 1, 0, 0)


def test_compiled_sketch_matches_past_one_block_of_shingles() -> None:
    """A text longer than the Python code's block and piece (it hashes blocks and pieces)."""
    text = "\n".join(f"word{i % 9973} and{i % 7}" for i in range(40_000))
    assert len(text) > 1 << 18
    assert _sketch(text, "k", 64, True) == _sketch(text, "k", 64, False)
