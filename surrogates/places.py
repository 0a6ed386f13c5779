"""Real places for location surrogates: a city is a real city of the state beside it, a city
beside a ZIP is that ZIP's own city, and a street name comes from a street-name vocabulary.

- City, state and ZIP come out as one triple of the shipped ZIP table (``data/zips.tsv.gz``):
  the surrogate ZIP is another standard ZIP of the original ZIP's state and the city is the
  one that ZIP belongs to ("Boise, ID 83702" → "Meridian, ID 83642").
- A city beside a state only ("Boise, ID") becomes a city of that state; a city alone becomes
  a city of the state the original city name mostly belongs to (a plausible state), else of
  any state.
- A city maps through ``state.id_map`` once per patient, by its name and, where a state is
  written beside it, by name and state, so "Boise" alone and "Boise, ID" agree.
- Street names ("Main" in "12 Main Street") become a name of ``data/street_names.txt``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from surrogates import zipdata
from surrogates.context import ReplaceContext

MAX_DRAWS = 64


@dataclass(frozen=True)
class PlaceTable:
    """The standard, active ZIPs of the shipped table, indexed by city and state."""

    city_of_zip: dict[str, str]  # ZIP → its city as the table writes it
    state_of_zip: dict[str, str]  # ZIP → state abbreviation
    zips_of_state: dict[str, tuple[str, ...]]  # state → its ZIPs, in ZIP order
    zips_of_city: dict[tuple[str, str], tuple[str, ...]]  # (state, lower-case city) → ZIPs
    state_of_city: dict[str, str]  # lower-case city → the state holding most of its ZIPs

    def is_city_of(self, city: str, state: str) -> bool:
        return (state, city.lower()) in self.zips_of_city


@lru_cache(maxsize=1)
def place_table() -> PlaceTable:
    city_of_zip: dict[str, str] = {}
    state_of_zip: dict[str, str] = {}
    zips_of_state: dict[str, list[str]] = {}
    zips_of_city: dict[tuple[str, str], list[str]] = {}
    votes: dict[str, Counter[str]] = {}
    for row in zipdata.rows():
        if not row.standard or not row.city or not row.state:
            continue
        city_of_zip[row.zip_code] = row.city
        state_of_zip[row.zip_code] = row.state
        zips_of_state.setdefault(row.state, []).append(row.zip_code)
        low = row.city.lower()
        zips_of_city.setdefault((row.state, low), []).append(row.zip_code)
        votes.setdefault(low, Counter())[row.state] += 1
    return PlaceTable(
        city_of_zip=city_of_zip,
        state_of_zip=state_of_zip,
        zips_of_state={k: tuple(v) for k, v in zips_of_state.items()},
        zips_of_city={k: tuple(v) for k, v in zips_of_city.items()},
        state_of_city={c: v.most_common(1)[0][0] for c, v in votes.items()},
    )


@lru_cache(maxsize=1)
def street_names() -> tuple[str, ...]:
    """The shipped street-name vocabulary (``data/street_names.txt``, see its README)."""
    text = resources.files("surrogates").joinpath("data", "street_names.txt").read_text("utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def _fresh(ctx: ReplaceContext, candidate: str, original: str) -> bool:
    """A surrogate place never equals the original nor holds a word of the note."""
    return candidate.lower() != original and not ctx.is_original_word(candidate.split())


def street_name(ctx: ReplaceContext, original: str) -> str:
    """A street name of the vocabulary for the name part of a street (lower-case key)."""

    def make() -> str:
        names = street_names()
        chooser = ctx.chooser("street", original)
        candidate = chooser.pick(names)
        for _ in range(MAX_DRAWS):
            if _fresh(ctx, candidate, original):
                break
            candidate = chooser.pick(names)
        return candidate

    return ctx.mapped(ctx.state.id_map, f"STREET:{original}", make)


def _city_in_state(ctx: ReplaceContext, original: str, state: str) -> str:
    """A real city of ``state``, weighted by its number of ZIPs (bigger places more often)."""
    table = place_table()
    zips = table.zips_of_state[state]
    chooser = ctx.chooser(f"city:{state}", original)
    candidate = table.city_of_zip[chooser.pick(zips)]
    for _ in range(MAX_DRAWS):
        if _fresh(ctx, candidate, original):
            break
        candidate = table.city_of_zip[chooser.pick(zips)]
    return candidate


def plausible_state(ctx: ReplaceContext, original: str) -> str:
    """The state most ZIPs of a city of this name are in, else a state drawn by ZIP count."""
    table = place_table()
    known = table.state_of_city.get(original)
    if known is not None:
        return known
    every = tuple(table.state_of_zip.values())
    return ctx.chooser("city-state", original).pick(every)


def city(
    ctx: ReplaceContext,
    original: str,
    state: str | None,
    zip_code: str | None,
) -> str:
    """The surrogate of city ``original`` (lower-case, spaces normalised), beside ``state``
    and ``zip_code`` where the text writes them."""
    table = place_table()
    plain_key = f"CITY:{original}"
    if zip_code is not None and zip_code in table.state_of_zip:
        return _city_of_zip(ctx, original, zip_code)
    if state is not None and state in table.zips_of_state:
        known = ctx.state.id_map.get(plain_key)
        if known is not None and table.is_city_of(known, state):
            return known
        new = ctx.mapped(
            ctx.state.id_map,
            f"CITY:{original}|{state}",
            lambda: _city_in_state(ctx, original, state),
        )
        ctx.mapped(ctx.state.id_map, plain_key, lambda: new)
        return new
    return ctx.mapped(
        ctx.state.id_map,
        plain_key,
        lambda: _city_in_state(ctx, original, plausible_state(ctx, original)),
    )


def _city_of_zip(ctx: ReplaceContext, original: str, zip_code: str) -> str:
    """City beside a ZIP: the surrogate ZIP's own city. The ZIP is drawn here (and stored in
    the patient's map, so the ZIP's own span gets the same one): among the ZIPs of the
    city's surrogate when the patient already has one in that state, else among the
    state's ZIPs whose city shares no word with the note."""
    table = place_table()
    state = table.state_of_zip[zip_code]
    plain_key = f"CITY:{original}"
    known = ctx.state.id_map.get(plain_key)
    if known is not None and not table.is_city_of(known, state):
        known = None
    new_zip = ctx.mapped(
        ctx.state.id_map, f"ZIP:{zip_code}", lambda: _zip_with_city(ctx, original, zip_code, known)
    )
    new = table.city_of_zip.get(new_zip)
    if new is None or not _fresh(ctx, new, original):  # a ZIP drawn before, elsewhere
        fallback = known or _city_in_state(ctx, original, state)
        if new is not None and not _fresh(ctx, fallback, original):
            return new  # a state of one city (DC): the ZIP's own city, never a stray pair
        return fallback
    ctx.mapped(ctx.state.id_map, plain_key, lambda: new)
    ctx.mapped(ctx.state.id_map, f"CITY:{original}|{state}", lambda: new)
    return new


def _zip_with_city(ctx: ReplaceContext, original: str, zip_code: str, known: str | None) -> str:
    table = place_table()
    state = table.state_of_zip[zip_code]
    zips = table.zips_of_city[(state, known.lower())] if known else table.zips_of_state[state]
    chooser = ctx.chooser("zip", zip_code)
    candidate = zip_code
    for _ in range(MAX_DRAWS):
        candidate = chooser.pick(zips)
        if (
            candidate != zip_code
            and not ctx.is_note_word(candidate)
            and (known is not None or _fresh(ctx, table.city_of_zip[candidate], original))
        ):
            return candidate
    return candidate if candidate != zip_code else chooser.pick(table.zips_of_state[state])
