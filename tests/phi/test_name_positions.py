"""The names' starting words in one compiled pass (``Passes.positions``, ``_words_c.
start_positions``) against the Python reference and the uncached plan, and the Title-case
pair's gate with its word facts asked once (``title_pair_gate``, ``namey_zipf``) against the
formula it replaced. Invented words only."""

from __future__ import annotations

from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.compiled import compiled
from pipelines.compiled import helper as compiled_helper
from pipelines.memo import memos
from pipelines.phi import lexicons as lx
from pipelines.phi.lexicons import Token
from pipelines.phi.passes import Case
from pipelines.phi.recognizers.name_uncued import title_pair_gate
from pipelines.phi.recognizers.name_words import _base, _namey, _rare_unknown, namey_zipf
from pipelines.phi.recognizers.names import _rule_starts, name_passes
from tests.support.name_texts import name_note, note_texts

_WORD_TEXT = (
    "Oriel Vantmoor Brazzolini Quist Hazel Kowalczyk Tamsin Okonkwo Whitcombe J E Q x o a I "
    "dr Dr DR mrs Ms wife son daughter spoke with per is aware RN md R M significant other "
    "the plan pain catheter named Ellen ELLEN ellen Bartholomew Henrietta called Foley's "
    "Vantmoor's Hazel's Plan Pain Will Rose May Mark"
)
_WORDS = tuple(_WORD_TEXT.split())
_SEPARATORS = (" ", " ", ". ", ", ", "\n", " (", ") ", "-", ": ", " / ")


_texts = partial(note_texts, _WORDS, _SEPARATORS, 20)


_note = name_note


def _planned(toks: lx.Tokens, case: Case) -> list[tuple[int, tuple[object, ...]]]:
    """The driver's answer from first principles: each word's uncached plan."""
    passes = name_passes()
    found = ((i, passes.plan(tok, case)) for i, tok in enumerate(toks.words))
    return [(i, steps) for i, steps in found if steps]


@settings(max_examples=400, deadline=None)
@given(_texts(), st.sampled_from(list(Case)))
def test_the_compiled_positions_are_the_python_positions_and_the_plans(
    text: str, case: Case
) -> None:
    note, toks = _note(text, case)
    assert note.written is not None
    with compiled(False):
        plain = _rule_starts(note, toks)
    fast = _rule_starts(note, toks)
    assert fast == plain == _planned(toks, case), text
    with memos(False):
        assert _rule_starts(note, toks) == plain


_FAST = compiled_helper("words")
needs_helper = pytest.mark.skipif(_FAST is None, reason="the compiled helper is not built")


@needs_helper
def test_start_positions_computes_the_misses_through_the_memo_and_counts_the_hits() -> None:
    assert _FAST is not None
    bits = _FAST.start_filter(frozenset({"oriel", "wife"}))
    asked: list[str] = []

    def compute(word: str) -> tuple[object, ...]:
        asked.append(word)
        return ("x",) if word != "oriel" else ()

    store: dict[str, tuple[object, ...]] = {"wife": ("w",), "Quist": ()}
    texts = ("wife", "Quist", "oriel", "plan", "Vantmoor", "wife", "the")
    found, hits = _FAST.start_positions(bits, True, store, texts, compute)
    assert found == [(0, ("w",)), (4, ("x",)), (5, ("w",))]
    assert hits == 3  # "wife" twice and "Quist"; "oriel" and "Vantmoor" computed
    assert asked == ["oriel", "Vantmoor"]
    found, _ = _FAST.start_positions(bits, False, store, texts, compute)
    assert found == [(0, ("w",)), (5, ("w",))]  # no capitals: "Quist", "Vantmoor" dropped


@needs_helper
def test_start_positions_refuses_a_wrong_filter_and_words_not_ascii() -> None:
    assert _FAST is not None
    bits = _FAST.start_filter(frozenset({"oriel"}))
    with pytest.raises(ValueError):
        _FAST.start_positions(b"short", True, {}, ("oriel",), lambda w: ())
    with pytest.raises(ValueError):
        _FAST.start_positions(bits, True, {}, ("José",), lambda w: ())


def _old_namey(tok: Token) -> bool:
    low = _base(tok.lower)
    return (lx.name_score(low) >= 1.0 and lx.zipf(low) < 5.0) or (
        lx.name_score(low) == -9.0 and lx.zipf(low) < 2.5 and len(low) >= 3
    )


def _old_title_pair_gate(tok: Token, case: Case) -> bool:
    low = tok.lower
    return (
        case is not Case.UPPER
        and lx.is_title(tok.text)
        and _old_namey(tok)
        and (low in lx.first_names() or _rare_unknown(tok) or lx.zipf(low) < 2.5)
    )


_GATE_WORDS = (
    *_WORDS,
    "Zorbelquin",
    "Zorbelquin's",
    "Hazelton",
    "Okonkwo's",
    "Smithe",
    "Catheterz",
    "Notifed",
    "Tylenol",
    "Xq",
    "Ab",
    "Abc",
    "Lasixed",
    "Ellen’s",
)


@pytest.mark.parametrize("text", _GATE_WORDS)
@pytest.mark.parametrize("case", list(Case))
def test_the_title_pair_gate_is_the_formula_it_replaced(text: str, case: Case) -> None:
    for form in (text, text.capitalize(), text.upper(), text.lower()):
        tok = Token(0, len(form), form, form.lower())
        assert title_pair_gate(tok, case) == _old_title_pair_gate(tok, case), form
        assert _namey(tok) == _old_namey(tok), form
        assert (namey_zipf(_base(tok.lower)) is not None) == _old_namey(tok), form


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyzAEOZ'", min_size=1, max_size=10))
def test_the_title_pair_gate_agrees_on_any_word(word: str) -> None:
    form = word[0].upper() + word[1:]
    tok = Token(0, len(form), form, form.lower())
    for case in Case:
        assert title_pair_gate(tok, case) == _old_title_pair_gate(tok, case), form
