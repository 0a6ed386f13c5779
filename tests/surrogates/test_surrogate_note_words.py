"""The shortcuts surrogates take must not change what they decide.

``ReplaceContext.is_note_word`` rules ASCII words out with a substring test before it builds
the note's word set; ``Chooser`` draws with one-shot HMACs. Both are checked against the plain
definitions (word set membership; ``hmac.new(seed, msg‖counter, sha256)`` blocks).
"""

from __future__ import annotations

import hashlib
import hmac

from hypothesis import given, settings
from hypothesis import strategies as st

from keystore.api import PatientState
from surrogates import context
from surrogates.choice import Chooser
from surrogates.context import ReplaceContext

# letters whose lower-casing is unusual: Kelvin sign, dotted I, final sigma, a combining
# accent, apostrophes, digits
_ALPHABET = list("abcKkSsIi '’-.0159\n") + [
    "\u212a",
    "\u0130",
    "\u03a3",
    "\u03c3",
    "\u03c2",
    "\u0301",
    "\u00df",
    "\u00c9",
]
_WORDS = st.text(st.sampled_from(_ALPHABET), min_size=1, max_size=5)


def _ctx(text: str) -> ReplaceContext:
    state = PatientState(shift_days=-3, pseudonym="p", seed=b"s" * 32)
    return ReplaceContext(state=state, text=text)


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from(_ALPHABET), max_size=40), st.lists(_WORDS, max_size=6))
def test_is_note_word_is_membership_in_the_notes_words(text: str, words: list[str]) -> None:
    ctx = _ctx(text)
    for word in [*words, *(w.lower() for w in words), *ctx.original_tokens]:
        assert ctx.is_note_word(word) == (word in _ctx(text).original_tokens)
    assert ctx.is_original_word(words) == any(
        w.lower() in _ctx(text).original_tokens for w in words
    )


def _reference_stream(seed: bytes, purpose: str, original: str, size: int) -> bytes:
    msg = purpose.encode() + b"\x1f" + original.encode() + b"\x1f"
    out, counter = b"", 0
    while len(out) < size:
        out += hmac.new(seed, msg + counter.to_bytes(4, "big"), hashlib.sha256).digest()
        counter += 1
    return out[:size]


@settings(max_examples=200, deadline=None)
@given(
    st.binary(min_size=16, max_size=40),
    st.text(max_size=8),
    st.text(max_size=8),
    st.lists(st.integers(1, 40), max_size=8),
)
def test_chooser_draws_the_hmac_stream(
    seed: bytes, purpose: str, original: str, sizes: list[int]
) -> None:
    chooser = Chooser(seed, purpose, original)
    drawn = b"".join(chooser._take(n) for n in sizes)
    assert drawn == _reference_stream(seed, purpose, original, sum(sizes))


@given(
    st.text(alphabet=st.sampled_from(list("abZ09_' \n\t.-")), max_size=200),
    st.integers(1, 30),
)
def test_a_long_note_listed_in_pieces_has_the_same_words(text: str, piece_chars: int) -> None:
    """Bounded memory for long notes: pieces cut at whitespace find exactly the note's words."""
    from surrogates.context import _WORD, note_words

    assert note_words(text, piece_chars) == frozenset(w.lower() for w in _WORD.findall(text))


@settings(max_examples=500, deadline=None)
@given(st.text(st.sampled_from([*_ALPHABET, "\t", "\x1c", "\u2028", "\xa0"]), max_size=60))
def test_the_notes_words_are_its_tokens_lower_cased(text: str) -> None:
    from surrogates.context import _WORD

    assert _ctx(text).original_tokens == frozenset(m.group().lower() for m in _WORD.finditer(text))


@given(
    st.lists(
        st.sampled_from(
            [
                "he",
                "He",
                "HIS",
                "she",
                "her's",
                "hers",
                "Himself",
                "herself",
                "the",
                "shed",
                "he-she",
                "x_he",
                "he2",
                "(her)",
                "HeRsElF",
                "h",
                "Sheila",
                "1",
                "_",
            ]
        ),
        max_size=60,
    ),
    st.lists(st.sampled_from([" ", "", "\n", "-", "\t", "."]), min_size=60, max_size=60),
)
def test_a_long_ascii_note_counts_its_pronouns_as_a_short_one_does(
    words: list[str], seps: list[str]
) -> None:
    """Above PRONOUN_SCAN_CHARS an ASCII note's pronouns are counted by re2 on the
    lower-cased bytes: the same counts as the Unicode regex."""
    text = "".join(w + s for w, s in zip(words, seps, strict=False))
    assert context._ascii_pronoun_counts(text) == context._pronoun_counts(text)
    long = (text + " ") * (context.PRONOUN_SCAN_CHARS // max(1, len(text)) + 1)
    male, female = context._pronoun_counts(long)
    expected = "M" if male and male >= 2 * female else "F" if female and female >= 2 * male else ""
    assert context.pronoun_gender(long) == expected
