"""``is_mixed_case`` asks an ASCII text as bytes (session 21): the same answers as the str
tests it replaced, on every shape of text."""

from __future__ import annotations

import itertools
import random

from pipelines.leak_guard import is_mixed_case


def _reference(text: str) -> bool:
    """The earlier implementation (str.isupper / islower first)."""
    if text.isupper() or text.islower():
        return False
    if text.isascii():
        return text.upper() != text and text.lower() != text
    return any(c.islower() for c in text) and any(c.isupper() for c in text)


def _samples() -> list[str]:
    pieces = ["", " ", "a", "Z", "7", "-", "\n", "é", "É", "ß", "ǅ", "ﬁ", "Ω", "ω", "İ", "\u00aa"]
    out = ["".join(p) for n in range(4) for p in itertools.product(pieces, repeat=n)]
    rng = random.Random(21)
    alphabet = "abcXYZ 0129.,;\n\t-'éÉßǅ"
    out += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60))) for _ in range(3000)]
    out += [
        "PATIENT SEEN IN CLINIC TODAY, NO CHANGES.",
        "patient seen in clinic today, no changes.",
        "Patient seen in clinic today.",
        "PATIENT SEEN TODAY. plan: follow up",
        "12/03 0800 123-45",
        "MRI: 3.5 CM LESION" * 50 + "x",
        "x" + "CT ABDOMEN " * 200,
    ]
    return out


def test_same_answers_as_the_str_tests() -> None:
    for text in _samples():
        assert is_mixed_case(text) is _reference(text), repr(text)
