"""Location surrogates: streets, cities, states, zips, hospitals and other places.

The text is replaced token by token following its own pattern: house and unit numbers are
reshaped, five-digit zips become other real zips of the same state (``zipcodes`` package;
the state of the zip, else of its first three digits), a state beside a zip becomes the
zip's state (so the two agree), a city beside a state or zip becomes a real city of that
state (the zip's own city beside a zip: ``surrogates/places.py``), other states become other
states (``us`` package), the place after "St." / "Saint" in a facility becomes a saint
("St. Vincent's Hospital"), other place words become words of real US city names
(``zipcodes``), a street's name becomes a name of a street-name vocabulary, acronyms ("GH") become other letters of the same
length, and the generic words that carry no identity ("Hospital", "Street", "Apt", "of") are
kept. Each place word maps through ``state.id_map`` so "ASHCOTT HOSPITAL" and "ashcott" get
the same surrogate word for the patient.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache, partial

from surrogates import places, zipdata
from surrogates.base import SpanLike, Surrogate, apply_edits
from surrogates.context import ReplaceContext
from surrogates.identifiers import surrogate_chars
from surrogates.names import case_like, census

MAX_DRAWS = 64
# Kept verbatim: words that say what kind of place it is, never which one (street and
# facility head nouns, units, departments, directions, function words).
GENERIC_WORDS = frozenset(
    """
    street st avenue ave av road rd boulevard blvd lane ln drive dr court ct place pl way
    terrace ter circle cir highway hwy parkway pkwy square sq trail trl alley expressway
    freeway route rte apt apartment suite ste unit floor fl room rm building bldg box po p o
    north south east west n s e w ne nw se sw n.e n.w s.e s.w
    hospital hosp medical med center centre ctr clinic clinics health
    healthcare rehab rehabilitation nursing home homes care of the
    and at in a an for on county practice associates group
    institute infirmary sanatorium facility unit house assisted senior living
    state veterans va affairs hospice skilled center's hospitals pavilion wing tower campus
    emergency department dept er ed icu ccu micu sicu nicu or pacu floor ward
    city town township
    """.split()  # noqa: SIM905 - a word list reads better as text
)
# Often the distinctive part of a facility's name (organ, disease, commemorative, patron
# group, ownership words: "Heart", "Memorial", "Children's"): each becomes another of them,
# so "Oakdale Heart Memorial Hospital" keeps only its head noun ("… Cancer Regional Hospital").
FACILITY_MODIFIERS = tuple(
    """
    memorial general regional community university college children's childrens
    women's womens cancer heart surgical surgery specialty family
    pediatric pediatrics manor village
    episcopal mercy
    """.split()  # noqa: SIM905 - a word list reads better as text
)
_MODIFIER_SET = frozenset(FACILITY_MODIFIERS)
_MODIFIER_CHOICES = tuple(w for w in FACILITY_MODIFIERS if w.isalpha() and w[-1] != "s")
SAINT_TITLES = frozenset({"st", "saint", "ste", "sainte"})
# Patron saints hospitals are commonly named after: "St. Byars Hospital" reads as no
# hospital, "St. Vincent's Hospital" as one. Invented here, not a gazetteer of facilities.
SAINTS = tuple(
    """
    agnes anne anthony barnabas benedict bernard catherine charles clare dominic elizabeth
    francis gabriel helena james joseph jude luke margaret mark martha matthew michael
    monica patrick peter raphael rita rose teresa thomas vincent
    """.split()  # noqa: SIM905 - a word list reads better as text
)


@dataclass(frozen=True)
class ZipData:
    zips: tuple[str, ...]  # five-digit zips of standard, active zip codes
    words: tuple[str, ...]  # single-word city names, lower-case
    state_of: dict[str, str]  # zip → state abbreviation
    state_of_prefix: dict[str, str]  # first three digits → the state most of its zips are in
    by_state: dict[str, tuple[str, ...]]  # state abbreviation → its zips


@lru_cache(maxsize=1)
def _zip_data() -> ZipData:
    """The standard, active zips of the ``zipcodes`` package, their states and the city words."""
    state_of: dict[str, str] = {}
    words: set[str] = set()
    for row in zipdata.rows():
        if not row.standard:
            continue
        state_of[row.zip_code] = sys.intern(row.state)
        city = row.city.lower()
        if city.isalpha() and 4 <= len(city) <= 12 and city not in GENERIC_WORDS | _MODIFIER_SET:
            words.add(city)
    prefix_votes: dict[str, Counter[str]] = {}
    by_state: dict[str, list[str]] = {}
    for zip_code, state in sorted(state_of.items()):
        prefix_votes.setdefault(zip_code[:3], Counter())[state] += 1
        by_state.setdefault(state, []).append(zip_code)
    return ZipData(
        zips=tuple(sorted(state_of)),
        words=tuple(sorted(words)),
        state_of=state_of,
        state_of_prefix={p: v.most_common(1)[0][0] for p, v in prefix_votes.items()},
        by_state={k: tuple(v) for k, v in by_state.items()},
    )


def zip_state(zip_code: str) -> str | None:
    """The state of a five-digit zip, or of its first three digits; None if unknown."""
    data = _zip_data()
    return data.state_of.get(zip_code) or data.state_of_prefix.get(zip_code[:3])


@lru_cache(maxsize=1)
def _states() -> tuple[dict[str, str], dict[str, str], tuple[tuple[str, str], ...]]:
    """(abbr → name, lower name → abbr, (abbr, name) of the 50 states) from the ``us``
    package; DC and the territories are known (zips are in them) but never drawn."""
    import us

    known = tuple((s.abbr, s.name) for s in us.states.STATES_AND_TERRITORIES)
    pairs = tuple((s.abbr, s.name) for s in us.states.STATES)
    return {a: n for a, n in known}, {n.lower(): a for a, n in known}, pairs


_WHOLE_CITY = re.compile(r"[^\W\d_]+(?:(?:['’.\-][ \t]?|[ \t])[^\W\d_]+)*\.?")
_TOKEN = re.compile(r"\d+|[^\W\d_]+(?:['’][^\W\d_]+)*")


def _is_acronym(word: str) -> bool:
    if not word.isupper() or not word.isalpha():
        return False
    return len(word) <= 3 or (len(word) == 4 and not set("AEIOU") & set(word))


def _place_word(ctx: ReplaceContext, low: str, street: bool) -> str:
    pool = census().pools[("L", "")].names if street else _zip_data().words
    chooser = ctx.chooser("place", low)
    taken = ctx.taken(ctx.state.id_map)
    for _ in range(MAX_DRAWS):
        candidate = chooser.pick(pool)
        if candidate != low and not ctx.is_note_word(candidate) and candidate not in taken:
            return candidate
    return chooser.pick(pool) + "ton"


def _zip(ctx: ReplaceContext, original: str) -> str:
    """Another real zip of the same state (by the zip, else by its first three digits)."""
    data = _zip_data()
    state = zip_state(original)
    zips = data.by_state.get(state, data.zips) if state else data.zips
    chooser = ctx.chooser("zip", original)
    for _ in range(MAX_DRAWS):
        candidate = chooser.pick(zips)
        if candidate != original and not ctx.is_note_word(candidate):
            return candidate
    return surrogate_chars(ctx, "zip", original)


def _saint(ctx: ReplaceContext, key: str) -> str:
    chooser = ctx.chooser("saint", key)
    for _ in range(MAX_DRAWS):
        candidate = chooser.pick(SAINTS)
        if candidate != key and not ctx.is_note_word(candidate):
            return candidate
    return chooser.pick(SAINTS)


def _saint_run(ctx: ReplaceContext, run: list[re.Match[str]]) -> tuple[int, int, str]:
    """ "Mary's" in "St. Mary's Hospital": another saint, possessive kept."""
    words = " ".join(m.group() for m in run)
    possessive = re.search(r"['’]s$", words, re.IGNORECASE)
    core = words[: possessive.start()] if possessive else words
    key = core.lower()
    new = ctx.mapped(ctx.state.id_map, f"SAINT:{key}", partial(_saint, ctx, key))
    new = case_like(new, core) + (possessive.group() if possessive else "")
    return run[0].start(), run[-1].end(), new


def _modifier(ctx: ReplaceContext, word: str) -> str:
    """Another facility modifier for ``word`` ("Memorial" → "Regional"), per patient; never
    one another modifier of the patient's became ("Heart Memorial" → "Manor Manor")."""
    low = word.lower()

    def make() -> str:
        chooser = ctx.chooser("modifier", low)
        taken = ctx.taken(ctx.state.id_map)
        for _ in range(MAX_DRAWS):
            candidate = chooser.pick(_MODIFIER_CHOICES)
            if candidate == low.rstrip("s").rstrip("'’") or candidate in taken:
                continue
            if not ctx.is_note_word(candidate):
                return candidate
        return _place_word(ctx, low, False)

    return case_like(ctx.mapped(ctx.state.id_map, f"LOCMOD:{low}", make), word)


def _state(ctx: ReplaceContext, abbr: str) -> str:
    pairs = _states()[2]
    chooser = ctx.chooser("state", abbr)
    for _ in range(MAX_DRAWS):
        candidate = chooser.pick(pairs)[0]
        if candidate != abbr:
            return candidate
    return "VT" if abbr != "VT" else "NH"


class LocationSurrogate(Surrogate):
    categories = frozenset(
        {"LOCATION_STREET", "LOCATION_CITY", "LOCATION_ZIP", "LOCATION_HOSPITAL", "LOCATION_OTHER"}
    )

    def replace(self, span: SpanLike, ctx: ReplaceContext) -> str:
        text = ctx.original(span)
        if span.category == "LOCATION_CITY" and _WHOLE_CITY.fullmatch(text):
            # a city as written, directions included ("North Granby"): one real city
            state, zip_code = _state_after(ctx, span.end)
            key = " ".join(text.lower().split())
            return case_like(places.city(ctx, key, state, zip_code), text)
        walk = _Walk(ctx, span, text)
        by_abbr, by_name, _ = _states()
        for i, m in enumerate(walk.tokens):
            kind = self._kind(text, walk.tokens, i, walk.street, by_abbr, by_name)
            walk.token(i, m, kind)
        walk.flush()
        if not walk.edits and any(c.isalnum() for c in text):
            # Only generic words ("the VA", "Hospital"): a place word instead, never the text.
            key = " ".join(text.lower().split())
            new = ctx.mapped(ctx.state.id_map, f"LOC:{key}", partial(_place_word, ctx, key, False))
            return case_like(new, text)
        return apply_edits(text, walk.edits)

    @staticmethod
    def _kind(
        text: str,
        tokens: list[re.Match[str]],
        i: int,
        street: bool,
        by_abbr: dict[str, str],
        by_name: dict[str, str],
    ) -> str:
        word = tokens[i].group()
        low = word.lower()
        if word.isdigit():
            return "number"
        if low in GENERIC_WORDS or (low in SAINT_TITLES and i + 1 < len(tokens)):
            return "generic"
        if low in _MODIFIER_SET:
            return "place" if street else "modifier"  # "Memorial Drive": the street's name
        prev = text[: tokens[i].start()].rstrip()
        if word in by_abbr and (
            prev.endswith(",")
            or i == len(tokens) - 1
            or (i + 1 < len(tokens) and tokens[i + 1].group().isdigit())
        ):
            return "state_abbr"
        if low in by_name:
            return "state_name"
        if _is_acronym(word):
            return "acronym"
        return "place"

    @staticmethod
    def _number(ctx: ReplaceContext, tokens: list[re.Match[str]], i: int, street: bool) -> str:
        word = tokens[i].group()
        after_zip = i > 0 and tokens[i - 1].group().isdigit() and len(tokens[i - 1].group()) == 5
        house_number = street and i == 0
        if len(word) == 5 and not house_number:
            return ctx.mapped(ctx.state.id_map, f"ZIP:{word}", partial(_zip, ctx, word))
        if after_zip and len(word) == 4:
            return surrogate_chars(ctx, "zip4", word)
        return ctx.mapped(
            ctx.state.id_map, f"LOCNUM:{word}", partial(surrogate_chars, ctx, "locnum", word)
        )


class _Walk:
    """One location span token by token: runs of place words, edits of the other kinds."""

    def __init__(self, ctx: ReplaceContext, span: SpanLike, text: str) -> None:
        self.ctx, self.span, self.text = ctx, span, text
        self.street = span.category == "LOCATION_STREET"
        self.city_span = span.category == "LOCATION_CITY"
        self.edits: list[tuple[int, int, str]] = []
        self.run: list[re.Match[str]] = []  # consecutive place words: "Middle River", "Bel Air"
        tokens = list(_TOKEN.finditer(text))
        self.zip_state = _zip_state_in(tokens, self.street)
        found = _address_city(text)
        if found is not None:  # "…, Missouri City, TX 77459": the city as a whole
            self.edits.append(_address_city_edit(ctx, text, found))
            tokens = [m for m in tokens if not found[0] <= m.start() < found[1]]
        self.tokens = tokens

    def token(self, i: int, m: re.Match[str], kind: str) -> None:
        if kind == "place":
            if self.run and not self.text[self.run[-1].end() : m.start()].isspace():
                self.flush()
            self.run.append(m)
            return
        self.flush()
        new = self._new(i, m.group(), kind)
        if new is not None:
            self.edits.append((m.start(), m.end(), new))

    def _new(self, i: int, word: str, kind: str) -> str | None:
        """The surrogate of a token that is not a place word (None: kept)."""
        ctx = self.ctx
        if kind == "number":
            return LocationSurrogate._number(ctx, self.tokens, i, self.street)
        by_abbr, by_name, _ = _states()
        # beside a zip, the state stays the zip's (the zip's surrogate is in it too)
        if kind == "state_abbr":
            return self.zip_state or _state(ctx, word)
        if kind == "state_name":
            return case_like(by_abbr[self.zip_state or _state(ctx, by_name[word.lower()])], word)
        if kind == "modifier":
            return _modifier(ctx, word)
        if kind == "acronym":
            make = partial(surrogate_chars, ctx, "acronym", word)
            return ctx.mapped(ctx.state.id_map, f"LOCACR:{word}", make)
        return None

    def flush(self) -> None:
        run, text, ctx = self.run, self.text, self.ctx
        if not run:
            return
        in_street = self.street and "," not in text[: run[0].start()]  # "…, Boston" is a city
        if in_street:
            self.edits.extend(_place_run(ctx, run, True))
        elif self.city_span or _beside_state(ctx, self.span.start + run[-1].end()):
            self.edits.append(
                _city_run(ctx, _with_direction(text, self.tokens, run), self.span.start)
            )
        elif _after_saint_title(text, self.tokens, run[0]):
            self.edits.append(_saint_run(ctx, run))
        else:
            self.edits.extend(_place_run(ctx, run, False))
        self.run = []


def _zip_state_in(tokens: list[re.Match[str]], street: bool) -> str | None:
    """The state of the span's zip code (a five-digit number that is not a house number)."""
    by_abbr = _states()[0]
    for i, m in enumerate(tokens):
        word = m.group()
        if word.isdigit() and len(word) == 5 and not (street and i == 0):
            state = zip_state(word)
            return state if state in by_abbr else None
    return None


def _after_saint_title(text: str, tokens: list[re.Match[str]], first: re.Match[str]) -> bool:
    before = [m for m in tokens if m.end() <= first.start()]
    if not before or before[-1].group().lower() not in SAINT_TITLES:
        return False
    return text[before[-1].end() : first.start()].strip() in ("", ".")


def _place_run(
    ctx: ReplaceContext, run: list[re.Match[str]], street: bool
) -> list[tuple[int, int, str]]:
    """A run of place words: a street name of the vocabulary for a street's name, else a
    real city name of as many words, else word by word."""
    words = [m.group() for m in run]
    key = " ".join(w.lower() for w in words)
    if street:
        text = " ".join(words)
        return [(run[0].start(), run[-1].end(), case_like(places.street_name(ctx, key), text))]
    pool = _multiword_cities().get(len(words), ()) if len(words) > 1 else ()
    if pool:
        new = ctx.mapped(ctx.state.id_map, f"LOCRUN:{key}", partial(_multiword, ctx, key, pool))
        return [
            (m.start(), m.end(), case_like(part, m.group()))
            for m, part in zip(run, new.split(" "), strict=True)
        ]
    return [
        (
            m.start(),
            m.end(),
            case_like(
                ctx.mapped(
                    ctx.state.id_map,
                    f"LOC:{m.group().lower()}",
                    partial(_place_word, ctx, m.group().lower(), False),
                ),
                m.group(),
            ),
        )
        for m in run
    ]


def _multiword(ctx: ReplaceContext, key: str, pool: tuple[str, ...]) -> str:
    chooser = ctx.chooser("city-run", key)
    for _ in range(MAX_DRAWS):
        candidate = chooser.pick(pool)
        if candidate != key and not ctx.is_original_word(candidate.split()):
            return candidate
    return chooser.pick(pool)


# After a city: ", ID 83702", " Idaho", ", ID" (the state as the table or ``us`` writes it)
_STATE_AFTER = re.compile(
    r"[ \t]*,?[ \t]*(?P<state>[A-Z]{2}|[A-Z][a-z]+(?:[ \t][A-Z][a-z]+)?)\.?,?[ \t]*"
    r"(?P<zip>\d{5})?(?![\w])"
)


def _state_after(ctx: ReplaceContext, end: int) -> tuple[str | None, str | None]:
    """The state (abbreviation) and five-digit ZIP written right after ``end``, if any."""
    m = _STATE_AFTER.match(ctx.text, end, end + 48)
    if m is None:
        return None, None
    by_abbr, by_name, _ = _states()
    word = m.group("state")
    state = word if word in by_abbr else by_name.get(word.lower())
    if state is None:
        return None, None
    return state, m.group("zip")


def _beside_state(ctx: ReplaceContext, end: int) -> bool:
    return _state_after(ctx, end)[0] is not None


# A city between a comma (or the span's start) and ", ST" or ", ST 12345"
_ADDRESS_CITY = re.compile(
    r"(?:^|,)[ \t]*(?P<city>[^\W\d_]+(?:[ .'’\-]+[^\W\d_]+)*)[ \t]*,[ \t]*"
    r"(?P<state>[A-Z]{2}|[A-Z][a-z]+(?:[ \t][A-Z][a-z]+)?)\.?(?:,?[ \t]*(?P<zip>\d{5}))?(?!\w)"
)


def _address_city(text: str) -> tuple[int, int, str, str | None] | None:
    """(start, end, state, ZIP or None) of the city of an address written in ``text``."""
    by_abbr, by_name, _ = _states()
    pos = 0
    while (m := _ADDRESS_CITY.search(text, pos)) is not None:
        word = m.group("state")
        state = word if word in by_abbr else by_name.get(word.lower())
        if state is not None:
            return m.start("city"), m.end("city"), state, m.group("zip")
        pos = m.start() + 1
    return None


def _address_city_edit(
    ctx: ReplaceContext, text: str, found: tuple[int, int, str, str | None]
) -> tuple[int, int, str]:
    start, end, state, zip_code = found
    original = text[start:end]
    new = places.city(ctx, " ".join(original.lower().split()), state, zip_code)
    return start, end, case_like(new, original)


DIRECTIONS = frozenset({"north", "south", "east", "west"})


def _with_direction(
    text: str, tokens: list[re.Match[str]], run: list[re.Match[str]]
) -> list[re.Match[str]]:
    """The run with the direction or saint word that starts the city's name ("West Chester",
    "St. Louis")."""
    at = tokens.index(run[0])
    before = tokens[at - 1] if at > 0 else None
    if (
        before is not None
        and before.group().lower() in DIRECTIONS | SAINT_TITLES
        and text[before.end() : run[0].start()].strip() in ("", ".")
    ):
        return [before, *run]
    return run


def _city_run(ctx: ReplaceContext, run: list[re.Match[str]], offset: int) -> tuple[int, int, str]:
    """A city: a real city of the state written after it, the ZIP's own city beside a ZIP."""
    original = " ".join(m.group() for m in run)
    state, zip_code = _state_after(ctx, offset + run[-1].end())
    new = places.city(ctx, original.lower(), state, zip_code)
    return run[0].start(), run[-1].end(), case_like(new, original)


@lru_cache(maxsize=1)
def _multiword_cities() -> dict[int, tuple[str, ...]]:
    """Real US city names of two and three words (``zipcodes``), lower-case, by word count."""
    by_count: dict[int, set[str]] = {}
    for row in zipdata.rows():
        words = row.city.lower().split()
        if 2 <= len(words) <= 3 and all(w.isalpha() for w in words):
            by_count.setdefault(len(words), set()).add(" ".join(words))
    return {n: tuple(sorted(names)) for n, names in by_count.items()}
