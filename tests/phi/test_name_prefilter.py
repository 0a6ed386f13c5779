"""The passes' prefilter (``Passes.prefilter``, ``Passes.candidates``) and the names' use of it: a
necessary condition derived from the declarations, so it never drops a word where some pass
starts. Invented names only."""

from __future__ import annotations

from functools import partial
from string import ascii_lowercase

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.compiled import compiled
from pipelines.compiled import helper as compiled_helper
from pipelines.phi.lexicons import Token
from pipelines.phi.passes import Case, Pass, Passes
from pipelines.phi.recognizers.names import _rule_starts, _scan, name_passes
from tests.support.name_texts import name_note, note_texts


def _run(note: object, i: int) -> None:
    return None


def _passes(*passes: Pass[object, None]) -> Passes[object, None]:
    return Passes("t", passes)


LEXICON = frozenset({"oriel", "tamsin"})
CUE = Pass[object, None]("t.cue", _run, words=frozenset({"wife"}))
LISTED = Pass[object, None]("t.listed", _run, anywhere=True, lexicon=lambda: LEXICON)
CAPITAL = Pass[object, None]("t.capital", _run, anywhere=True, shape="capital")
LETTER = Pass[object, None]("t.letter", _run, anywhere=True, shape="letter")
LOWER = Pass[object, None]("t.lower", _run, anywhere=True, shape="lower")
ANY = Pass[object, None]("t.any", _run, anywhere=True)
UPPER_ONLY = Pass[object, None](
    "t.upper", _run, anywhere=True, shape="capital", cases=frozenset({Case.UPPER})
)


def test_the_bound_is_the_trigger_words_and_the_lexicons() -> None:
    pre = _passes(CUE, LISTED).prefilter(Case.MIXED)
    assert pre is not None
    assert pre.bound == {"wife", "oriel", "tamsin"}
    assert not pre.capitals


def test_a_pass_at_any_capital_lets_every_word_not_lower_case_through() -> None:
    pre = _passes(CUE, CAPITAL).prefilter(Case.MIXED)
    assert pre is not None and pre.capitals and pre.bound == {"wife"}


def test_a_pass_at_a_single_letter_adds_every_letter_to_the_bound() -> None:
    pre = _passes(CUE, LETTER).prefilter(Case.UPPER)
    assert pre is not None and pre.bound == {"wife", *ascii_lowercase} and not pre.capitals


@pytest.mark.parametrize("roaming", [LOWER, ANY])
def test_no_prefilter_when_a_pass_with_no_lexicon_may_start_at_a_lower_case_word(
    roaming: Pass[object, None],
) -> None:
    assert _passes(CUE, roaming).prefilter(Case.MIXED) is None


def test_the_prefilter_of_a_case_reads_the_passes_of_that_case_only() -> None:
    passes = _passes(CUE, UPPER_ONLY)
    upper, mixed = passes.prefilter(Case.UPPER), passes.prefilter(Case.MIXED)
    assert upper is not None and upper.capitals
    assert mixed is not None and not mixed.capitals


_WORD_TEXT = (
    "Oriel Vantmoor Brazzolini Quist Hazel Kowalczyk Tamsin Okonkwo Whitcombe J E Q x o "
    "dr Dr DR mrs wife son daughter spoke with per is aware RN md significant other the "
    "plan pain catheter named Ellen ELLEN ellen Bartholomew Henrietta called"
)
_WORDS = tuple(_WORD_TEXT.split())
_SEPARATORS = (" ", " ", ". ", ", ", "\n", " (", ") ", "-", ": ")


_texts = partial(note_texts, _WORDS, _SEPARATORS, 14)


_note = name_note


@settings(max_examples=300, deadline=None)
@given(_texts(), st.sampled_from(list(Case)))
def test_every_word_some_pass_starts_at_meets_the_prefilter(text: str, case: Case) -> None:
    """A word of the note where the driver would try some pass (``Passes.steps``) is among
    the words ``_may_start`` keeps, in every case."""
    note, toks = _note(text, case)
    assert note.written is not None
    passes = name_passes()
    with compiled(False):
        kept = set(passes.candidates(note.written, case))
    for tok in toks.words:
        if passes.steps(tok, case):
            assert tok.text in kept, (tok.text, case, text)


_INVENTED_NOTES = (
    "Seen today with Oriel Vantmoor at bedside; plan unchanged.",
    "SPOKE WITH J. BRAZZOLINI, RN. ORIEL QUIST AWARE.",
    "spoke with wife hazel kowalczyk and dr okonkwo about the plan. J Whitcombe called.",
    "pt comfortable. Tamsin Okonkwo (daughter) called, aware of plan.",
    "Henrietta is family contact. E. Whitcombe aware.",
)


@pytest.mark.parametrize("text", _INVENTED_NOTES)
@pytest.mark.parametrize("recase", [str, str.upper, str.lower])
def test_the_prefilter_takes_every_name_the_unfiltered_starts_take(
    text: str, recase: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same names, roles and passes with the prefilter as with every distinct word
    judged (a prefilter that dropped a real name's word fails here)."""
    text = recase(text)  # type: ignore[operator]
    note, toks = _note(text)
    _scan(note, _rule_starts(note, toks))
    filtered = dict(note.taken)
    monkeypatch.setattr(Passes, "prefilter", lambda self, case: None)
    plain, toks = _note(text)
    _scan(plain, _rule_starts(plain, toks))
    assert filtered == dict(plain.taken)
    if recase is str:
        assert filtered, text  # each invented note, as written, holds a name


def test_a_capitalised_word_in_no_list_is_judged_where_capitals_tell() -> None:
    """ "Vantmoor" is in no lexicon and no trigger: a mixed-case note judges it all the same
    (the capitals' passes), a note in capitals does not need to."""
    mixed, _ = _note("Seen with Oriel Vantmoor today.")
    assert mixed.written is not None
    assert "Vantmoor" in name_passes().candidates(mixed.written, Case.MIXED)
    tok = Token(0, 8, "Vantmoor", "vantmoor")
    assert not name_passes().steps(Token(0, 8, "VANTMOOR", "vantmoor"), Case.UPPER)
    assert name_passes().steps(tok, Case.MIXED)


_FAST = compiled_helper("words")
needs_helper = pytest.mark.skipif(_FAST is None, reason="the compiled helper is not built")


@settings(max_examples=300, deadline=None)
@given(_texts(), st.sampled_from(list(Case)))
def test_the_compiled_filter_keeps_every_word_the_python_code_keeps(text: str, case: Case) -> None:
    """``Passes.candidates`` with the helper (a bit filter, some words too many) keeps a
    superset of its Python reference (exact), and the driver's starts are the same."""
    note, toks = _note(text, case)
    assert note.written is not None
    passes = name_passes()
    with compiled(False):
        exact = set(passes.candidates(note.written, case))
        plain = _rule_starts(note, toks)
    fast = set(passes.candidates(note.written, case))
    assert exact <= fast, (exact - fast, text)
    assert _rule_starts(note, toks) == plain


@needs_helper
def test_the_filter_holds_every_word_of_the_bound_in_any_case() -> None:
    pre = name_passes().prefilter(Case.UPPER)
    assert pre is not None and not pre.capitals
    words = sorted(pre.bound)
    assert _FAST is not None
    bits = _FAST.start_filter(pre.bound)
    for form in (str, str.upper, str.capitalize):
        written = [form(w) for w in words if w.isascii()]
        assert _FAST.may_start(bits, written, False) == written


@needs_helper
def test_the_filter_keeps_capitals_and_drops_most_other_words() -> None:
    assert _FAST is not None
    bits = _FAST.start_filter(frozenset({"oriel", "wife"}))
    words = ["Vantmoor", "quist", "wIfe", "oriel", "plan", "the", "xq"]
    assert {"Vantmoor", "wIfe", "oriel"} <= set(_FAST.may_start(bits, words, True))
    assert {"oriel", "wIfe"} <= set(_FAST.may_start(bits, words, False))
    assert "Vantmoor" not in _FAST.may_start(bits, ["Vantmoor"], False)
    with pytest.raises(ValueError):
        _FAST.may_start(b"short", words, True)
    with pytest.raises(ValueError):
        _FAST.may_start(bits, ["José"], True)
