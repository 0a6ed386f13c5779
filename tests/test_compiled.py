"""The compiled helpers (pipelines/compiled.py): built where a C compiler is, switchable off, and
equal to the Python code they replace."""

from __future__ import annotations

import shutil
import sysconfig

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled, near_duplicates
from pipelines.phi import lexicons


@pytest.mark.skipif(
    shutil.which(
        sysconfig.get_config_var("CC").split()[0] if sysconfig.get_config_var("CC") else "cc"
    )
    is None,
    reason="no C compiler here: the Python code runs in the helpers' place",
)
def test_every_helper_is_built_where_a_compiler_is() -> None:
    assert compiled.missing() == []


def test_the_switch_turns_every_helper_off_and_back() -> None:
    built = {name: compiled.helper(name) for name in compiled.MODULES}
    with compiled.compiled(False):
        assert all(compiled.helper(name) is None for name in compiled.MODULES)
        with compiled.compiled(True):
            assert {name: compiled.helper(name) for name in compiled.MODULES} == compiled.BUILT
    assert {name: compiled.helper(name) for name in compiled.MODULES} == built


def _columns(text: str, enabled: bool) -> lexicons.Columns:
    with compiled.compiled(enabled):
        return lexicons.token_columns(text)


# ASCII text dense in what the tokenizer decides on: letters, digits, apostrophes, every
# ASCII space and separator, punctuation, control characters
_ASCII_TEXT = st.lists(
    st.sampled_from(
        list("aZz'09 \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x00\x7f-./,#") + ["Ab", "o'", "''"]
    ),
    max_size=40,
).map("".join) | st.text(alphabet=st.characters(max_codepoint=127), max_size=80)


@settings(max_examples=400, deadline=None)
@given(_ASCII_TEXT)
def test_compiled_token_columns_match_the_splitter(text: str) -> None:
    assert _columns(text, True) == _columns(text, False)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "O'Brien's 12-3 Smith,J.",
        "it's '90 x'",
        "a''b",
        "end'",
        "\x1cfield\x1dsep\x1f99",
        "Mr. Núñez",  # not ASCII: the splitter
    ],
)
def test_compiled_token_columns_on_edges(text: str) -> None:
    assert _columns(text, True) == _columns(text, False)


def test_the_compiled_columns_refuse_text_that_is_not_ascii() -> None:
    fast = compiled.BUILT["tokens"]
    if fast is None:
        pytest.skip("the tokens helper is not built here")
    with pytest.raises(ValueError, match="ASCII"):
        fast.columns("Núñez")


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
