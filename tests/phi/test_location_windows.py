"""The location rules judged through a window (``locations._judged``) read no further than
their declared window: each recorded call is asked again on the window's words and text
alone, and must give the same verdict. A rule that reads a word or character outside its
window (a rule added without widening ``_CUE_WINDOW`` / ``_HEAD_WINDOW``) fails here, as the
narrowed windows of the last test show."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi.base import Doc
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers import locations
from pipelines.phi.recognizers.locations import LocationRecognizer
from pipelines.phi.synthetic import generate
from pipelines.spans import Span

Call = tuple[Any, Callable[..., Span | None], tuple[Token, ...], int, str, bool]

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
)


def _recorded(texts: list[str]) -> Iterator[Call]:
    calls: list[Call] = []
    real = locations._judged

    def spy(window: Any, rule: Any, words: Any, c: int, text: str, flag: bool) -> Span | None:
        calls.append((window, rule, words, c, text, flag))
        return real(window, rule, words, c, text, flag)

    recognizer = LocationRecognizer({})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(locations, "_judged", spy)
        for text in texts:
            recognizer.detect(Doc(text))
    return iter(calls)


def _alone(before: int, after: int, call: Call) -> tuple[object, object] | None:
    """The verdicts of the rule in the whole note and on its window alone, relative to the
    window's start; None where the note is too short for the window."""
    _, rule, words, c, text, flag = call
    lo, hi = c - before, c + after + 1
    if lo < 0 or hi > len(words):
        return None
    origin, stop = words[lo].start, words[hi - 1].end
    shifted = tuple(Token(w.start - origin, w.end - origin, w.text, w.lower) for w in words[lo:hi])
    full = rule(words, c, text, flag)
    part = rule(shifted, c - lo, text[origin:stop], flag)

    def rel(span: Span | None, shift: int) -> object:
        return None if span is None else (span.start - shift, span.end - shift, span.category)

    return rel(full, origin), rel(part, 0)


def _violations(texts: list[str], widths: Callable[[Any], tuple[int, int]]) -> list[str]:
    out = []
    for call in _recorded(texts):
        pair = _alone(*widths(call[0]), call)
        if pair is not None and pair[0] != pair[1]:
            words, c = call[2], call[3]
            out.append(f"{words[c].text!r}: whole note {pair[0]}, window alone {pair[1]}")
    return out


def _declared(window: Any) -> tuple[int, int]:
    return window.before, window.after


def test_every_windowed_rule_keeps_to_its_window_on_invented_notes() -> None:
    texts = [n.text for n in generate(300, 7, "dev")] + [" ".join(_PIECES)]
    assert _violations(texts, _declared) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6), st.booleans())
def test_every_windowed_rule_keeps_to_its_window_on_mixed_pieces(
    pieces: list[str], lower: bool
) -> None:
    text = " ".join(pieces)
    assert _violations([text.lower() if lower else text], _declared) == []


def test_a_rule_reading_past_a_narrower_window_is_caught() -> None:
    """The check has teeth: declared one word narrower on each side, the same rules fail."""
    texts = [n.text for n in generate(300, 7, "dev")] + [" ".join(_PIECES)]
    narrower = _violations(texts, lambda w: (max(0, w.before - 2), max(0, w.after - 2)))
    assert narrower, "narrowed windows should show a rule reading further"
