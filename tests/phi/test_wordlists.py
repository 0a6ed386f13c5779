"""The word-list files of the recognizers: format, errors, and the shipped name cue lists."""

from __future__ import annotations

import pytest

from pipelines.phi.wordlists import WordListError, parse_roles, parse_words, role_map, word_set
from pipelines.spans import Category


def test_words_split_on_space_and_lines_and_skip_comments() -> None:
    text = "# heading\nalpha beta  # trailing note\n\n  gamma\n"
    assert parse_words(text) == {"alpha", "beta", "gamma"}


def test_roles_follow_their_section_and_the_last_section_wins() -> None:
    text = "[provider]\ndr np\n[relative]\nwife np\n[other]\naide\n"
    assert dict(parse_roles(text)) == {
        "dr": Category.NAME_PROVIDER,
        "np": Category.NAME_RELATIVE,
        "wife": Category.NAME_RELATIVE,
        "aide": Category.NAME_OTHER,
    }


@pytest.mark.parametrize(
    "text", ["wife\n[relative]\n", "[cousins]\nwife\n"], ids=["before-section", "unknown"]
)
def test_malformed_role_lists_raise(text: str) -> None:
    with pytest.raises(WordListError) as err:
        parse_roles(text, "sample")
    assert not err.value.retriable


def test_a_plain_list_with_a_section_raises() -> None:
    with pytest.raises(WordListError):
        parse_words("[provider]\ndr\n")


def test_shipped_lists_load_once() -> None:
    assert role_map("name_titles")["dr"] is Category.NAME_PROVIDER
    assert role_map("name_titles")["mrs"] is Category.NAME_PATIENT
    assert role_map("name_role_before")["daughter"] is Category.NAME_RELATIVE
    assert "catheter" in word_set("name_eponym_heads")
    assert word_set("name_joiners") == {"and", "&", "or"}
    assert word_set("name_credentials") is word_set("name_credentials")
