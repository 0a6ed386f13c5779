"""The compiled helpers (pipelines/compiled.py): built where a C compiler is, switchable off, and
equal to the Python code they replace."""

from __future__ import annotations

import shutil
import sysconfig

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.phi import lexicons
from pipelines.phi.casing import CAPITALS_SPAN


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


def _tokens(text: str, enabled: bool) -> lexicons.Tokens:
    with compiled.compiled(enabled):
        return lexicons._tokenize(text)


def _same_tokens(text: str) -> None:
    """The whole ``Tokens`` of ``text``, compiled and not: field for field (the columns too,
    which ``==`` leaves out), each word a ``Token``."""
    fast, slow = _tokens(text, True), _tokens(text, False)
    assert fast == slow
    assert fast.columns == slow.columns
    assert [type(word) for word in fast.words] == [lexicons.Token] * len(slow.words)
    assert [word.is_title for word in fast.words] == [word.is_title for word in slow.words]


# Words that change case, carry apostrophes, stand alone as one letter; digits, separators
_CASED = ["a", "I", "pt", "PT", "Pt", "pT", "seen", "SEEN", "Seen", "O'Neil", "o'neil", "it's"]
_OTHER = ["12", "3/4", "'", "''", "x'", "-", ".", "\n", "\t", "\x1c", "#48", "ab12CD"]
_WORDS = st.sampled_from(_CASED + _OTHER)
# one case throughout (a note in capitals, one in lower case with a few capitals)
_UPPER_NOTE = st.lists(st.sampled_from(["PT", "SEEN", "O'NEIL", "BP", "12", "I", "."])).map(
    " ".join
)
_LOWER_WORDS = st.sampled_from(
    ["pt", "seen", "o'neil", "bp", "ok", "the", "and", "was"] * 8 + ["Smith", "I", "AB", "12", "."]
)
_LOWER_NOTE = st.lists(_LOWER_WORDS).map(" ".join)
_TOKENS_TEXT = (
    st.lists(_WORDS, max_size=60).map(" ".join)
    | st.lists(_WORDS, min_size=lexicons._PER_WORD_FROM, max_size=400).map(" ".join)
    | _UPPER_NOTE
    | _LOWER_NOTE
    | st.text(alphabet="aAzZ' 0\n", max_size=120)
    | st.text(alphabet=st.characters(max_codepoint=127), max_size=200)
)


@settings(max_examples=400, deadline=None)
@given(_TOKENS_TEXT)
def test_compiled_tokens_match_the_python_tokenizer(text: str) -> None:
    _same_tokens(text)


@settings(max_examples=60, deadline=None)
@given(st.lists(_LOWER_WORDS, min_size=300, max_size=900))
def test_compiled_tokens_match_past_the_capitals_span(words: list[str]) -> None:
    """Notes longer than the span whose capitals are counted (``casing.CAPITALS_SPAN``) and
    the first words a one-case note is judged on."""
    _same_tokens(" ".join(words))


def _padded(width: int) -> str:
    """Lower-case words filling ``width`` characters."""
    return ("abcd " * width)[: width - 1] + " "


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   12 .",
        "O'Brien's 12-3 Smith,J.",
        "it's '90 x'",
        "a''b end'",
        "the The THE tHe",
        " ".join(["pt"] * 300 + ["Smith"] * 10),
        " ".join(["PT"] * 300 + ["Seen"]),
        " ".join(["PT"] * 40 + ["pt"] * 400),  # one case, but its first words in capitals
        " ".join(["pt"] * 21 + ["PT"] * 19 + ["pt"] * 400),
        " ".join(["pt"] * 20 + ["PT"] * 20 + ["pt"] * 400),
        " ".join(["pt"] * 600 + ["Pt"] * 30),  # capitals after the span only
        # lower-case words up to the span, then capitals whose count decides: at the span
        # (not counted) and just before it (counted)
        _padded(CAPITALS_SPAN) + "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJ abc",
        _padded(CAPITALS_SPAN - 1) + "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJ abc",
        "Mr. Núñez",  # not ASCII: the Python path either way
    ],
)
def test_compiled_tokens_on_edges(text: str) -> None:
    _same_tokens(text)


def test_the_compiled_tokenize_refuses_what_it_cannot_read() -> None:
    fast = compiled.BUILT["tokens"]
    if fast is None:
        pytest.skip("the tokens helper is not built here")
    with pytest.raises(ValueError, match="ASCII"):
        fast.tokenize("Núñez", lexicons.Token, 40, 2000)
    with pytest.raises(TypeError, match="tuples"):
        fast.tokenize("a", lexicons.Tokens, 40, 2000)
