"""The name recognizer as declared passes: the driver's dispatch never disagrees with the
passes it dispatches to, and every span names the pass that made it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc
from pipelines.phi.passes import Case, declared
from pipelines.phi.recognizers.names import NameRecognizer, _Note, _rule_starts, _scan, name_passes

VOCAB_WORDS = (
    "Dr dr Mrs ms RN md wife son daughter daugher spoke with w by to is other significant per "
    "aware notified named name John Mary Will Ann Ed Al Hazel Rose Smith Kowalski Harcourt "
    "Vantmoor Oriel Brazzolini Plan Pain the a i J E S T A M R Foley catheter disease Parkinson "
    "Hospital family contact discussed seen called at length"
)
VOCAB = tuple(VOCAB_WORDS.split())
_SEPARATORS = (" ", " ", " ", " ", ". ", ". ", ", ", "\n", " (", ") ", "-", "'s ", ": ")


@st.composite
def name_texts(draw: st.DrawFn) -> str:
    """Texts made of cue words, names, initials and common words in any case and spacing."""
    count = draw(st.integers(1, 12))
    parts: list[str] = []
    for _ in range(count):
        word = draw(st.sampled_from(VOCAB))
        case = draw(st.sampled_from((str, str, str.upper, str.lower)))
        parts += [case(word), draw(st.sampled_from(_SEPARATORS))]
    return "".join(parts)


def _note(text: str, case: Case | None = None) -> _Note:
    doc = Doc(text)
    return _Note(doc, lx.tokens(doc), case)


@settings(max_examples=400, deadline=None)
@given(name_texts(), st.sampled_from(list(Case)))
def test_a_pass_the_driver_would_not_try_at_a_word_takes_nothing_there(
    text: str, case: Case
) -> None:
    """Each pass, run directly at each word where its declaration (trigger words or gate, note
    cases) would not try it, finds and takes nothing: loosening a pass without its declaration
    fails here instead of silently missing names."""
    passes = name_passes()
    words = lx.tokens(Doc(text)).words
    for i, tok in enumerate(words):
        tried = passes.plan(tok, case)
        for step in passes.passes:
            if step in tried:
                continue
            note = _note(text, case)
            assert step.run(note, i) is None, (step.name, text, i)
            assert note.taken == {}, (step.name, text, i)


def _every_word_every_pass(text: str) -> dict[int, tuple[object, ...]]:
    note = _note(text)
    everything = name_passes().passes
    _scan(note, [(i, everything) for i in range(note.n)])
    return dict(note.taken)


def _driven(text: str, ascii_path: bool) -> dict[int, tuple[object, ...]]:
    doc = Doc(text)
    toks = lx.tokens(doc)
    note = _Note(doc, toks)
    if not ascii_path:
        note.written = None  # each word works its passes out
    _scan(note, _rule_starts(note, toks))
    return dict(note.taken)


@settings(max_examples=400, deadline=None)
@given(name_texts(), st.booleans())
def test_visiting_the_derived_starts_takes_what_every_pass_at_every_word_takes(
    text: str, ascii_path: bool
) -> None:
    """The driver visits only the words where some pass is tried, and tries only those passes
    (per distinct word, or per token): the same names, roles and passes as trying every pass at
    every word."""
    assert _driven(text, ascii_path) == _every_word_every_pass(text), text


_NOTE_CASES = (
    ("Seen today and then ", " in room."),  # mixed case
    (  # lower case: its capitals count
        "seen today and the pt is in the room with all of the family as we had planned, "
        "she is resting well and then ",
        " in room.",
    ),
    ("SEEN TODAY AND THEN ", " IN ROOM."),  # one case
)
_SECOND = ("John", "Mary", "Kowalski", "Smith", "Vantmoor", "Harcourt", "J", "catheter")


def test_derived_starts_take_what_every_pass_takes_for_any_two_words() -> None:
    """Every vocabulary word, in three cases, before a name-like word, in notes of each case."""
    cases = (str, str.upper, str.lower)
    for head, tail in _NOTE_CASES:
        for first in {c(w) for w in VOCAB for c in cases}:
            for second in {c(w) for w in _SECOND for c in cases}:
                for sep in (" ", ". "):
                    text = f"{head}{first}{sep}{second}{tail}"
                    assert _driven(text, True) == _every_word_every_pass(text), text


_CRAFTED = (
    "Pt seen today. Spoke at length with John Kowalski about the plan.",
    "Family meeting held; significant other Mary Vantmoor at bedside, is aware.",
    "Discussed with wife Hazel and son, explained to Harcourt by phone.",
    "Plan reviewed w Dr. Oriel; seen by J. Smith, RN. Rose is family contact.",
)


def test_derived_starts_take_what_every_pass_takes_in_invented_notes() -> None:
    from pipelines.phi.synthetic import generate

    texts = [*_CRAFTED, *(n.text for f in ("dev", "heldout") for n in generate(150, 3, f))]
    for text in texts:
        for case in (str, str.upper, str.lower):
            every = _every_word_every_pass(case(text))
            assert _driven(case(text), True) == every
            assert _driven(case(text), False) == every


@pytest.mark.parametrize(
    ("text", "name", "source"),
    [
        ("Seen by Dr. Okonkwo this am.", "Okonkwo", "names.after_title"),
        ("Report given to Ellen Whitcombe, RN", "Ellen Whitcombe", "names.before_credential"),
        ("E. Kowalczyk aware of K 3.1, repleted.", "E. Kowalczyk", "names.before_role_after"),
        ("Call Bartholomew Quist (son) at home.", "Bartholomew Quist", "names.role_in_parens"),
        ("Henrietta is family contact.", "Henrietta", "names.family_contact"),
        ("Wife Margaret called twice overnight.", "Margaret", "names.role"),
        ("Team spoke briefly with Radomir Okafor.", "Radomir Okafor", "names.talked_with"),
        (
            "RN IN TO HELP AND T. VRANDOSKI PLACING A STITCH",
            "T. VRANDOSKI",
            "names.initial_then_surname",
        ),
        ("Pt resting and Oriel Vantmoor at bedside.", "Oriel Vantmoor", "names.title_case_pair"),
        ("PT RESTING AND J KOWALSKI IN TO VISIT", "J KOWALSKI", "names.capital_initial_surname"),
        (
            "son here all day, supportive to pt, Robert. Plan same.",
            "Robert",
            "names.lone_first_name",
        ),
        ("HAZEL KOWALSKI IN TO VISIT. PT RESTING.", "HAZEL KOWALSKI", "names.one_case_full_name"),
        ("PT RESTING. ODETTE R. CALLED FOR UPDATE.", "ODETTE R", "names.one_case_first_initial"),
        ("Pt resting. Odette R. called for an update.", "Odette R", "names.first_name_initial"),
        (
            "Seen by Team. Later lisa kowalski in to visit, BP stable.",
            "lisa kowalski",
            "names.lower_full_name",
        ),
    ],
)
def test_every_span_names_the_pass_that_took_it(text: str, name: str, source: str) -> None:
    spans = {text[s.start : s.end]: s.source for s in NameRecognizer().detect(Doc(text))}
    assert spans.get(name) == source, spans


def test_note_level_steps_name_themselves() -> None:
    text = "Seen by Dr. Vantmoor. Plan: Vantmoor to call."
    sources = [(text[s.start : s.end], s.source) for s in NameRecognizer().detect(Doc(text))]
    assert sources == [("Vantmoor", "names.after_title"), ("Vantmoor", "names.propagated")]
    text = "PT RESTING. HR 80 NSR. PLAN UNCHANGED.\nSUSAN"
    sources = [(text[s.start : s.end], s.source) for s in NameRecognizer().detect(Doc(text))]
    assert sources == [("SUSAN", "names.signature")]


def test_the_passes_are_declared_for_explain() -> None:
    passes = name_passes()
    assert passes in list(declared())
    rows = passes.describe()
    assert [r["pass"] for r in rows] == [p.name for p in passes.passes]
    assert all(r["does"] for r in rows)
    # the cue passes start at their cue words only; the uncued ones where their gate holds
    assert all(p.words or p.anywhere for p in passes.passes)
    assert {"dr", "rn", "wife", "spoke", "is"} <= passes.triggers
