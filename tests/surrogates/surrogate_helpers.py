"""Helpers shared by the surrogate tests (imported by name: tests/surrogates is on sys.path)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from keystore.api import PatientState
from surrogates.base import Surrogate
from surrogates.context import ReplaceContext, SurrogateSettings


@dataclass(frozen=True)
class FakeSpan:
    start: int
    end: int
    category: str


def make_state(seed: bytes = b"s" * 32, shift: int = -45) -> PatientState:
    return PatientState(shift_days=shift, pseudonym="p", seed=seed)


def make_ctx(
    text: str,
    state: PatientState | None = None,
    reference: date | None = None,
    settings: SurrogateSettings | None = None,
    known_given: frozenset[str] = frozenset(),
    known_family: frozenset[str] = frozenset(),
) -> ReplaceContext:
    return ReplaceContext(
        state=state or make_state(),
        text=text,
        settings=settings or SurrogateSettings(),
        reference_date=reference,
        known_given=known_given,
        known_family=known_family,
    )


def replace_all(replacer: Surrogate, ctx: ReplaceContext, category: str, *parts: str) -> list[str]:
    """Replace each of ``parts`` (found in this order in ``ctx.text``); return the results."""
    out = []
    pos = 0
    for part in parts:
        start = ctx.text.index(part, pos)
        out.append(replacer.replace(FakeSpan(start, start + len(part), category), ctx))
        pos = start + len(part)
    return out


def replace_one(replacer: Surrogate, text: str, category: str, **kwargs: object) -> str:
    ctx = make_ctx(text, **kwargs)  # type: ignore[arg-type]
    return replacer.replace(FakeSpan(0, len(text), category), ctx)
