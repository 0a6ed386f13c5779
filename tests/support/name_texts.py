"""Invented notes for the name passes' property tests: words drawn from a list, each in one of
several cases, joined by separators; and a note's name-recognizer view."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc
from pipelines.phi.passes import Case
from pipelines.phi.recognizers.names import _Note

_CASES = (str, str, str.upper, str.lower, str.capitalize)


def note_texts(
    words: Sequence[str], separators: Sequence[str], most: int
) -> st.SearchStrategy[str]:
    """Texts of 1 to ``most`` of ``words``, each as written or upper, lower or capitalised."""

    @st.composite
    def texts(draw: st.DrawFn) -> str:
        parts: list[str] = []
        for _ in range(draw(st.integers(1, most))):
            case = draw(st.sampled_from(_CASES))
            parts += [case(draw(st.sampled_from(words))), draw(st.sampled_from(separators))]
        return "".join(parts)

    return texts()


def name_note(text: str, case: Case | None = None) -> tuple[_Note, lx.Tokens]:
    """The name recognizer's note of ``text`` and its tokens."""
    doc = Doc(text)
    toks = lx.tokens(doc)
    return _Note(doc, toks, case), toks
