"""The pass driver: declarations validated, dispatch derived from them, window memo exact."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.memo import memos
from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc
from pipelines.phi.lexicons import Token
from pipelines.phi.passes import JUDGED_MIN_TEXT, SHAPES, Case, Pass, Passes, shape_of
from pipelines.spans import Category, Span


@dataclass
class _Note:
    words: tuple[Token, ...]
    text: str


def _note(text: str) -> tuple[_Note, Case]:
    toks = lx.tokens(Doc(text))
    return _Note(toks.words, text), Case.of(toks)


def _after_dr(note: _Note, i: int) -> Span | None:
    """The capitalised word after "Dr"."""
    if i + 1 < len(note.words) and note.words[i + 1].is_title:
        nxt = note.words[i + 1]
        return Span(nxt.start, nxt.end, Category.NAME_PROVIDER, 0.9, "t.after_dr")
    return None


def _capital(tok: Token, case: Case) -> bool:
    return tok.is_title


def _lone_capital(note: _Note, i: int) -> Span | None:
    """Any capitalised word (a toy uncued pass)."""
    tok = note.words[i]
    return Span(tok.start, tok.end, Category.NAME_OTHER, 0.5)


DR = Pass[_Note, Span]("t.after_dr", _after_dr, words=frozenset({"dr"}), after=1, memo=True)
CAP = Pass[_Note, Span](
    "t.capital", _lone_capital, anywhere=True, gate=_capital, cases=frozenset({Case.MIXED})
)


def test_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="recognizer"):
        Pass("nodot", _after_dr, words=frozenset({"dr"}))
    with pytest.raises(ValueError, match="trigger"):
        Pass("t.none", _after_dr)
    with pytest.raises(ValueError, match="lower-case"):
        Pass("t.upper", _after_dr, words=frozenset({"Dr"}))
    with pytest.raises(ValueError, match="belong"):
        Passes("other", [DR])
    with pytest.raises(ValueError, match="share a name"):
        Passes("t", [DR, DR])


def test_dispatch_follows_the_declarations() -> None:
    passes = Passes("t", [DR, CAP])
    note, case = _note("Seen by Dr Hanlon today with Mr Pike")
    assert case is Case.MIXED
    words = note.words
    assert [p.name for p in passes.steps(words[2], case)] == ["t.after_dr", "t.capital"]
    assert [p.name for p in passes.steps(words[1], case)] == []  # "by": nothing starts here
    assert passes.steps(words[3], Case.UPPER) == ()  # the capital pass runs in mixed notes only
    assert passes.triggers == {"dr"} and (passes.before, passes.after) == (0, 1)
    found = passes.first(note, 2, case)
    assert found is not None and found[0] is DR
    assert note.text[found[1].start : found[1].end] == "Hanlon"
    assert Passes.stamp(Span(0, 4, Category.NAME_OTHER), CAP).source == "t.capital"


def test_window_memo_gives_what_the_pass_gives() -> None:
    passes = Passes("t", [DR, CAP])
    text = ("Seen by Dr Hanlon and dr smith. " * (JUDGED_MIN_TEXT // 30 + 2)).strip()
    note, case = _note(text)
    starts = [i for i, w in enumerate(note.words) if passes.may_start(w, case)]
    with memos(False):
        plain = [passes.first(note, i, case) for i in starts]
    remembered = [passes.first(note, i, case) for i in starts]
    assert [r and (r[0].name, r[1]) for r in remembered] == [p and (p[0].name, p[1]) for p in plain]
    assert any(r and r[0] is DR for r in remembered)


# --------------------------------------------------------------- declared shapes (session 18)

_WORDS = st.one_of(
    st.sampled_from(sorted(lx.first_names())[::40]),
    st.text(alphabet="abcxyzABCXYZéÉ'’-0123456789.", min_size=1, max_size=9),
)
_CASINGS = (str, str.lower, str.upper, str.title, str.capitalize)


def _word_passes() -> list[Passes[Any, Any]]:
    from pipelines.phi.recognizers.locations import PASSES as LOCATION_PASSES
    from pipelines.phi.recognizers.names import name_passes

    return [name_passes(), LOCATION_PASSES]


def _reference_plan(passes: Passes[Any, Any], tok: Token, case: Case) -> list[str]:
    """The passes tried at ``tok``, each asked by its declaration alone, shapes ignored."""
    return [
        p.name
        for p in passes.passes
        if case in p.cases
        and (p.anywhere or tok.lower in p.words)
        and (p.lexicon is None or tok.lower in p.lexicon())
        and p.gate(tok, case)
    ]


@settings(max_examples=400, deadline=None)
@given(word=_WORDS, casing=st.sampled_from(_CASINGS), case=st.sampled_from(list(Case)))
def test_a_declared_shape_is_what_the_gate_asks(word: str, casing: Any, case: Case) -> None:
    """Each gate holds only at words of its pass's declared shape, so the driver may ask the
    shape first; and the dispatch (memo or not) is the declarations' own."""
    text = casing(word)
    tok = Token(0, len(text), text, text.lower())
    for passes in _word_passes():
        for p in passes.passes:
            if p.shape and p.gate(tok, case):
                assert SHAPES[p.shape] & shape_of(text), (p.name, text)
            # a name pass's lexicon is what its gate asks too (the census first names); a
            # location pass's is a filter before its gate (the states)
            if passes.recognizer == "names" and p.lexicon is not None and p.gate(tok, case):
                assert tok.lower in p.lexicon(), (p.name, text)
        expected = _reference_plan(passes, tok, case)
        assert [p.name for p in passes.plan(tok, case)] == expected
        assert [p.name for p in passes.steps(tok, case, text.isascii())] == expected


def test_shapes_are_checked_and_described() -> None:
    with pytest.raises(ValueError, match="shape"):
        Pass("t.odd", _lone_capital, anywhere=True, shape="round")
    assert shape_of("J") == shape_of("J") & 15 and shape_of("J") & SHAPES["letter"]
    assert shape_of("Hale") & SHAPES["capital"] and not shape_of("hale") & SHAPES["capital"]
    assert shape_of("hale") & SHAPES["lower"] and not shape_of("1234") & 7
    shaped = Pass[_Note, Span](
        "t.cap", _lone_capital, anywhere=True, gate=_capital, shape="capital"
    )
    passes = Passes("t", [shaped])
    note, case = _note("seen by Hanlon today")
    assert [p.name for p in passes.steps(note.words[2], case)] == ["t.cap"]
    assert passes.steps(note.words[0], case) == ()
    assert passes.describe()[0]["shape"] == "capital"
