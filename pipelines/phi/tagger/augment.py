"""Surrogate-augmented training copies: each gold PHI phrase replaced by a fresh stand-in.

The model should learn the *contexts* PHI sits in, not the corpus's strings. Every copy draws
new values for every phrase: names from the census lists (both genders, every frequency band,
the list's many origins), places from the US facility gazetteer and the zipcodes city list,
dates in many written forms, identifiers and phone numbers of the original's shape. The
original's case is kept (a capitals note gets capitals).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from pipelines.phi import lexicons
from pipelines.phi.tagger.features import facility_core, facility_names
from pipelines.phi.tagger.model import Label


@dataclass(frozen=True, slots=True)
class Phrase:
    start: int
    end: int
    label: Label


@dataclass(frozen=True, slots=True)
class Example:
    """A text and its PHI phrases (the unit of training)."""

    text: str
    phrases: tuple[Phrase, ...]


@cache
def _pools() -> dict[str, tuple[str, ...]]:
    # by share, then alphabetically: ties must not follow a dict's order (a set's, hashed)
    firsts = sorted(lexicons.first_names(), key=lambda w: (-lexicons.first_names()[w], w))
    lasts = sorted(lexicons.last_names(), key=lambda w: (-lexicons.last_names()[w], w))
    cores = sorted({facility_core(n) for n in facility_names()} - {""})
    return {
        "first": tuple(firsts[:4000]),
        "last": tuple(lasts[:30000]),
        "facility": facility_names(),
        "core": tuple(cores),
        "city": tuple(sorted(lexicons.us_cities())),
        "state": tuple(sorted(s for s in lexicons.us_states() if len(s) > 2)),
    }


def _like(value: str, model: str) -> str:
    """``value`` in the case of ``model``: CAPS, lower or Title."""
    letters = [c for c in model if c.isalpha()]
    if letters and all(c.isupper() for c in letters) and len(letters) > 1:
        return value.upper()
    if letters and all(c.islower() for c in letters):
        return value.lower()
    return " ".join(w[:1].upper() + w[1:] for w in value.split())


def _reads_as_first(low: str) -> bool:
    return lexicons.first_names().get(low, 0.0) > lexicons.last_names().get(low, 0.0)


def _name(rng: random.Random, original: str) -> str:
    parts = original.split()
    pools = _pools()
    out: list[str] = []
    for k, part in enumerate(parts):
        letters = part.strip(".,")
        if len(letters) == 1:
            out.append(rng.choice("ABCDEFGHIJKLMNOPRSTVW") + part[1:])
        elif k == 0 and len(parts) > 1:
            out.append(_like(rng.choice(pools["first"]), part))
        else:
            # a lone or last word: a first name where the original reads as one ("wife Ann")
            first = len(parts) == 1 and _reads_as_first(letters.lower())
            pool = pools["first"] if first or rng.random() < 0.15 else pools["last"]
            out.append(_like(rng.choice(pool), part))
    return " ".join(out) or _like(rng.choice(pools["last"]), original)


def _location(rng: random.Random, original: str) -> str:
    pools = _pools()
    roll = rng.random()
    if roll < 0.4:
        value = rng.choice(pools["core"])
    elif roll < 0.55:
        value = rng.choice(pools["facility"])
    elif roll < 0.9:
        value = rng.choice(pools["city"])
    else:
        value = rng.choice(pools["state"])
    return _like(value, original)


def _digits_like(rng: random.Random, original: str) -> str:
    out = []
    for ch in original:
        if ch.isdigit():
            out.append(str(rng.randrange(10)))
        elif ch.isalpha():
            letter = chr(ord("A") + rng.randrange(26))
            out.append(letter if ch.isupper() else letter.lower())
        else:
            out.append(ch)
    return "".join(out)


def _date(rng: random.Random, original: str) -> str:
    month, day, year = rng.randint(1, 12), rng.randint(1, 28), rng.randint(1950, 2030)
    if any(c.isalpha() for c in original):
        name = lexicons.MONTH_NAMES[month - 1]
        if len(original.split()[0].strip(".,")) <= 4:
            name = name[:3]
        form = rng.choice(
            [
                f"{name} {day}",
                f"{name} {day}, {year}",
                f"{day} {name}",
                f"{name} {year}",
                f"{name} of {year}",
                name,
            ]
        )
        return _like(form, original)
    if original.isdigit() and len(original) in (2, 4):
        return str(year)[-len(original) :]
    seps = [c for c in original if not c.isdigit()]
    sep = seps[0] if seps else "/"
    parts = [str(month), str(day)]
    if original.count(sep) >= 2 or len(original) > 5:
        parts.append(str(year) if rng.random() < 0.6 else f"{year % 100:02d}")
    return sep.join(parts)


def stand_in(rng: random.Random, label: Label, original: str) -> str:
    if label is Label.NAME:
        return _name(rng, original)
    if label is Label.LOCATION:
        return _location(rng, original)
    if label is Label.DATE:
        return _date(rng, original)
    if label is Label.AGE:
        return str(rng.randint(90, 109)) if original.isdigit() else original
    return _digits_like(rng, original)


def augment(example: Example, rng: random.Random) -> Example:
    """One copy of ``example`` with every phrase replaced by a fresh stand-in."""
    pieces: list[str] = []
    phrases: list[Phrase] = []
    pos = 0
    length = 0
    for phrase in sorted(example.phrases, key=lambda p: p.start):
        if phrase.start < pos:
            continue
        before = example.text[pos : phrase.start]
        pieces.append(before)
        length += len(before)
        new = stand_in(rng, phrase.label, example.text[phrase.start : phrase.end]) or "X"
        phrases.append(Phrase(length, length + len(new), phrase.label))
        pieces.append(new)
        length += len(new)
        pos = phrase.end
    pieces.append(example.text[pos:])
    return Example("".join(pieces), tuple(phrases))


def augmented(examples: Sequence[Example], copies: int, seed: int) -> list[Example]:
    """The originals followed by ``copies`` surrogate copies of each (deterministic by seed)."""
    rng = random.Random(seed)  # noqa: S311 - reproducible training data, not secrets
    out = list(examples)
    for _ in range(copies):
        out.extend(augment(e, rng) for e in examples)
    return out
