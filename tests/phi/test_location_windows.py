"""Every location pass that declares a window memo (``memo=True``) reads no further than its
declared window (``before``/``after``): at each word where the driver would try it, the pass
is asked again on the window's words and text alone, and must give the same verdict. A pass
that reads a word or a character outside its window (a rule added without widening the
declaration) fails here, as the narrowed windows of the last test show."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc
from pipelines.phi.lexicons import Token
from pipelines.phi.passes import Case, Pass
from pipelines.phi.recognizers.location_words import Note
from pipelines.phi.recognizers.locations import PASSES
from pipelines.phi.synthetic import generate
from pipelines.spans import Span

# invented phrases around the location cues and heads (no corpus text)
_PIECES = (
    "Pt was transferred from Elmbrook Valley Hospital to the floor.",
    "She lives at home with her husband in Marlowe Falls, Vermont.",
    "Discharged to Quillan House NH for rehab.",
    "Seen at the University of Dorrance Medical Center last week.",
    "Came in from Ashcott General Hospital by ambulance.",
    "moved to new haven in the spring, returned from ohio.",
    "Plan: to Harwick Rehab on Monday; follow up at Tinsdale Clinic.",
    "He works for Brindle Health in Oakmere.",
    "transferred to the Fenwick Memorial ICU from Ostley ED",
    "flew today was blood drawn pt in Boston today",
    "transferred from the West Palm Beach Hospital today",
    "Seen by Ashcott General today.",
    "Ate the Quillan House diet today.",
)

_MEMOIZED = [p for p in PASSES.passes if p.memo]
Widths = Callable[[Pass[Note, Span]], tuple[int, int]]


def _declared(step: Pass[Note, Span]) -> tuple[int, int]:
    return step.before, step.after


def test_the_memoized_passes_are_the_head_and_cue_passes() -> None:
    assert {p.name for p in _MEMOIZED} == {"locations.facility_head", "locations.after_cue"}
    assert {p.name: (p.before, p.after) for p in _MEMOIZED} == {
        "locations.facility_head": (5, 2),  # "Xyz Memorial Medical today"
        "locations.after_cue": (6, 5),
    }


def _relative(span: Span | None, shift: int) -> object:
    return None if span is None else (span.start - shift, span.end - shift, span.category)


def _violations(texts: list[str], widths: Widths) -> list[str]:
    out = []
    for text in texts:
        toks = lx.tokens(Doc(text))
        case = Case.of(toks)
        words = toks.words
        note = Note(words, text, case, toks.mixed_case)
        for i, tok in enumerate(words):
            for step in PASSES.steps(tok, case, tok.text.isascii()):
                if not step.memo:
                    continue
                before, after = widths(step)
                lo, hi = i - before, i + after + 1
                if lo < 0 or hi > len(words):
                    continue  # the driver asks the pass itself there
                origin, stop = words[lo].start, words[hi - 1].end
                shifted = tuple(
                    Token(w.start - origin, w.end - origin, w.text, w.lower) for w in words[lo:hi]
                )
                alone = Note(shifted, text[origin:stop], case, note.mixed)
                full = _relative(step.run(note, i), origin)
                part = _relative(step.run(alone, i - lo), 0)
                if full != part:
                    out.append(f"{step.name} at {tok.text!r}: note {full}, window alone {part}")
    return out


def _texts() -> list[str]:
    texts = [n.text for n in generate(300, 7, "dev")] + [" ".join(_PIECES)]
    return texts + [t.lower() for t in texts[-60:]] + [t.upper() for t in texts[-60:]]


def test_every_memoized_pass_keeps_to_its_window_on_invented_notes() -> None:
    assert _violations(_texts(), _declared) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6), st.sampled_from("mlu"))
def test_every_memoized_pass_keeps_to_its_window_on_mixed_pieces(
    pieces: list[str], case: str
) -> None:
    text = " ".join(pieces)
    text = text.lower() if case == "l" else text.upper() if case == "u" else text
    assert _violations([text], _declared) == []


def test_a_pass_reading_past_a_narrower_window_is_caught() -> None:
    """The check has teeth: declared narrower on either side, each pass fails. (Two words
    less before: the word five before a head is read, "University" before "of", but the name
    read back stops there whatever it is.)"""
    texts = _texts()
    for step in _MEMOIZED:
        for narrower in ((step.before - 2, step.after), (step.before, step.after - 1)):

            def widths(
                p: Pass[Note, Span],
                step: Pass[Note, Span] = step,
                narrower: tuple[int, int] = narrower,
            ) -> tuple[int, int]:
                return narrower if p is step else (p.before, p.after)

            assert any(v.startswith(step.name) for v in _violations(texts, widths)), (
                f"{step.name} narrowed to {narrower} should read further"
            )
