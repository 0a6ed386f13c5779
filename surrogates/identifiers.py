"""Identifier surrogates (MRN, account, SSN, health plan, licence, vehicle, device, other ids).

Same length and shape (digit → digit, letter → letter, separators kept), no leading zero where
the original had none, never equal to the original nor to any word of the note. The surrogate
is derived from HMAC(seed, normalised original) and remembered in ``state.id_map`` under the
normalised form, so "123-45-6789" and "123456789" get the same digits.
SSN surrogates start with 9: the SSA never issues area numbers 900-999, so they cannot be real.
"""

from __future__ import annotations

import re

from surrogates.base import SpanLike, Surrogate
from surrogates.choice import reshape
from surrogates.context import ReplaceContext
from surrogates.redaction import group_of

MAX_DRAWS = 64


def normalise_id(text: str) -> str:
    return "".join(c for c in text if c.isalnum()).upper()


def apply_shape(template: str, chars: str) -> str:
    """Write ``chars`` into the alphanumeric positions of ``template`` (case from template)."""
    out: list[str] = []
    it = iter(chars)
    for ch in template:
        if ch.isalnum():
            new = next(it, ch)
            out.append(new.lower() if ch.islower() else new)
        else:
            out.append(ch)
    return "".join(out)


def surrogate_chars(ctx: ReplaceContext, purpose: str, normal: str, ssn: bool = False) -> str:
    """A reshaped ``normal`` that differs from it and from every word of the note."""
    chooser = ctx.chooser(purpose, normal)
    candidate = normal
    for _ in range(MAX_DRAWS):
        candidate = reshape(chooser, normal)
        if ssn and len(candidate) == 9 and candidate.isdigit():
            candidate = "9" + candidate[1:]
        if candidate != normal and not ctx.is_note_word(candidate.lower()):
            return candidate
    # A one-character id can run out of fresh values; differing from the original is what counts.
    if candidate == normal:
        candidate = "".join(
            ("1" if c == "0" else "0") if c.isdigit() else ("A" if c != "A" else "B")
            for c in normal
        )
    return candidate


class IdentifierSurrogate(Surrogate):
    categories = frozenset(
        {"MRN", "ACCOUNT", "SSN", "HEALTH_PLAN", "LICENSE", "VEHICLE", "DEVICE", "ID"}
    )

    def replace(self, span: SpanLike, ctx: ReplaceContext) -> str:
        text = ctx.original(span)
        label, value = split_label(text)
        normal = normalise_id(value)
        if not normal:
            return text
        group = group_of(span.category)
        chars = ctx.mapped(
            ctx.state.id_map,
            f"{group}:{normal}",
            lambda: surrogate_chars(ctx, f"id:{group}", normal, ssn=group == "SSN"),
        )
        return label + apply_shape(value, chars)


# possessive runs: with backtracking, a long letter run with no digit after it was split every
# possible way (2^n: 22 letters took 5 s; an id of letters only, known from PID-3, hung)
_LABEL = re.compile(r"^(?P<label>(?:[^\W\d_]++[.:#]*+\s*+)+?[:#]?\s*)(?=\S*\d)")


def split_label(text: str) -> tuple[str, str]:
    """("MRN: ", "1234567") for a span that carries its label; ("", text) otherwise.

    A leading run of letter-only words is a label when a later word holds a digit; ids
    made only of letters are reshaped whole.
    """
    m = _LABEL.match(text)
    if m is None or not any(c.isdigit() for c in text[m.end() :]):
        return "", text
    label = m.group("label")
    if not label or label[-1] not in " :#\t":
        return "", text
    return label, text[m.end() :]
