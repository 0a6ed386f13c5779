"""An invented corpus of short clinician-written texts, with gold PHI spans.

The second genre of issue 13: short texts such as "a 62-year-old male, First Last, seen by
Dr. First Last at X Medical Center on <date> (MRN: AB-123456)". Every value is drawn from
lexicons the project already loads (census names, zipcodes cities, the facility gazetteer in
``data/hospitals.txt``) or invented here (facility names, identifiers, phone numbers, dates in
many formats); no sentence comes from any corpus.

Two template *families*: ``dev`` (rules are developed against it) and ``heldout`` (written
separately, with other sentence frames, wording and some value formats of its own; only its
coverage figure is read, never its texts). ``generate(n, seed, family)`` is deterministic.

Gold conventions: a facility phrase is the whole name ("Sacred Heart Memorial Hospital"); a
doctor's title ("Dr.") and an ID's cue ("MRN:") are not part of the phrase; an age over 89 is
its number or number words ("93" in "93-year-old"); a date range written as one expression is
one phrase.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from importlib import resources

from pipelines.phi import lexicons as lx
from pipelines.phi.wordlists import phrases


class Label(StrEnum):
    NAME = "NAME"
    LOCATION = "LOCATION"
    DATE = "DATE"
    ID = "ID"
    PHONE = "PHONE"
    AGE = "AGE"
    CONTACT = "CONTACT"


class Family(StrEnum):
    DEV = "dev"
    HELDOUT = "heldout"


GoldSpan = tuple[int, int, Label]


@dataclass(frozen=True, slots=True)
class SyntheticNote:
    text: str
    spans: tuple[GoldSpan, ...]


# A filled slot: its text and the gold spans inside it (offsets relative to the slot).
Piece = tuple[str, tuple[GoldSpan, ...]]


def _plain(text: str) -> Piece:
    return text, ()


def _whole(text: str, label: Label) -> Piece:
    return text, ((0, len(text), label),)


def _join(*parts: Piece | str) -> Piece:
    """Concatenate pieces (a ``str`` is plain text), shifting their spans."""
    text = ""
    spans: list[GoldSpan] = []
    for part in parts:
        piece = _plain(part) if isinstance(part, str) else part
        spans.extend((s + len(text), e + len(text), lab) for s, e, lab in piece[1])
        text += piece[0]
    return text, tuple(spans)


# --- lexicons ---------------------------------------------------------------------------


def _top(table: Mapping[str, float], n: int) -> list[str]:
    ranked = sorted(table.items(), key=lambda kv: (-kv[1], kv[0]))
    return [name.capitalize() for name, _ in ranked[:n] if name.isalpha() and len(name) > 2]


@cache
def _first_names() -> list[str]:
    return _top(lx.first_names(), 1500)


@cache
def _last_names() -> list[str]:
    return _top(lx.last_names(), 5000)


@cache
def _cities() -> list[str]:
    out = []
    for city in sorted(lx.us_cities()):
        parts = city.split()
        if len(parts) <= 2 and all(p.isalpha() and len(p) >= 3 for p in parts):
            out.append(" ".join(p.capitalize() for p in parts))
    return out


@cache
def hospitals() -> list[str]:
    """The facility gazetteer shipped in ``pipelines/phi/data/hospitals.txt`` (no comments)."""
    raw = resources.files("pipelines.phi").joinpath("data/hospitals.txt").read_text("utf-8")
    return [line.strip() for line in raw.splitlines() if line.strip() and line[0] != "#"]


@cache
def _gazetteer() -> list[str]:
    """Gazetteer names with a facility head, as a note would write them."""
    return [h for h in hospitals() if h[0].isalpha() and _GAZ_HEAD.search(h)]


_GAZ_HEAD = re.compile(
    r"\b(?:Hospital|Medical Center|Clinic|Health Center|Memorial|Rehab\w*|Nursing)\b"
)


_STATES = tuple(" ".join(p) for p in phrases("synthetic_states"))
_SAINTS = tuple(" ".join(p) for p in phrases("synthetic_saints"))
_RELIGIOUS = tuple(" ".join(p) for p in phrases("synthetic_religious_names"))
_HEADS = tuple(" ".join(p) for p in phrases("synthetic_facility_heads"))
_WARD_HEADS = ("Pavilion", "Tower", "Wing", "Building", "Unit")
_MONTHS = lx.MONTH_NAMES


# --- fillers ----------------------------------------------------------------------------


class _Filler:
    """Draws slot values; ``heldout`` switches on the value formats only that family has."""

    def __init__(self, rng: random.Random, family: Family) -> None:
        self.rng = rng
        self.heldout = family is Family.HELDOUT

    def pick(self, items: Sequence[str]) -> str:
        return items[self.rng.randrange(len(items))]

    # people
    def person(self) -> Piece:
        first, last = self.pick(_first_names()), self.pick(_last_names())
        r = self.rng.random()
        if self.heldout and r < 0.25:
            name = f"{first} {self.pick('ABCDEFGHJKLMPRSTW')}. {last}"
        elif r < 0.1:
            name = f"{first} {last}".upper()
        else:
            name = f"{first} {last}"
        return _whole(name, Label.NAME)

    def doctor(self) -> Piece:
        title = self.pick(("Dr. ", "Dr ", "Dr. ") if not self.heldout else ("Dr. ", "Doctor "))
        if self.rng.random() < 0.3:
            return _join(title, _whole(self.pick(_last_names()), Label.NAME))
        return _join(title, self.person())

    def signoff(self) -> Piece:
        first, last = self.pick(_first_names()), self.pick(_last_names())
        cred = self.pick(("MD", "RN", "NP", "PA-C", "DO"))
        lead = (
            self.pick(("", "-- ", "Signed: ", "Electronically signed by "))
            if not self.heldout
            else self.pick(("", "Dictated by ", "Reviewed by: "))
        )
        return _join(lead, _whole(f"{first} {last}".upper(), Label.NAME), f", {cred}")

    # places
    def city(self, caps: bool = False) -> Piece:
        city = self.pick(_cities())
        return _whole(city.upper() if caps or self.rng.random() < 0.15 else city, Label.LOCATION)

    def facility(self) -> Piece:
        r = self.rng.random()
        if r < 0.35:
            name = self.pick(_gazetteer())
        elif r < 0.85:
            name = self._invented_facility()
        else:
            name = self._acronym()
        r = self.rng.random()
        if r < 0.06:
            name = name.lower()
        elif r < 0.16:
            name = name.upper()
        return _whole(name, Label.LOCATION)

    def _invented_facility(self) -> str:
        kind = self.rng.randrange(5)
        head = self.pick(_HEADS)
        if kind == 0:
            saint = self.pick(("St.", "Saint", "St") if self.heldout else ("St.", "Saint"))
            return f"{saint} {self.pick(_SAINTS)}{self.pick(('', chr(39) + 's'))} {head}"
        if kind == 1:
            return f"{self.pick(_RELIGIOUS)} {head}"
        if kind == 2:
            return f"{self.pick(_cities())} {head}"
        if kind == 3:
            return (
                f"{self.pick(_last_names())} Memorial {self.pick(('Hospital', 'Medical Center'))}"
            )
        return f"{self.pick(_last_names())}-{self.pick(_last_names())} {head}"

    def _acronym(self) -> str:
        letters = "".join(self.pick("ABCDGHJKLMNPRSW") for _ in range(self.rng.randint(1, 2)))
        return letters + self.pick(("MC", "RMC", "MH", "CH", "H"))

    def ward(self) -> Piece:
        name = self.pick(_last_names())
        if self.rng.random() < 0.5:
            return _join(_whole(name, Label.LOCATION), f" {self.rng.randint(2, 12)}")
        return _whole(f"{name} {self.pick(_WARD_HEADS)}", Label.LOCATION)

    def address(self) -> Piece:
        street = f"{self.rng.randint(2, 9899)} {self.pick(_last_names())} " + self.pick(
            ("Street", "St.", "Avenue", "Ave", "Road", "Lane", "Drive")
        )
        zip_code = f"{self.rng.randint(10000, 99899):05d}"
        return _join(
            _whole(street, Label.LOCATION), ", ", self.city(), f", {self.pick(_STATES)} ",
            _whole(zip_code, Label.LOCATION),
        )  # fmt: skip

    # numbers
    def phone(self) -> Piece:
        area, exch, line = self.rng.randint(201, 989), self.rng.randint(200, 989), 0
        line = self.rng.randint(0, 9999)
        forms = [
            f"({area}) {exch}-{line:04d}",
            f"{area}-{exch}-{line:04d}",
            f"{area}.{exch}.{line:04d}",
        ]
        if self.heldout:
            forms += [f"{area} {exch} {line:04d}", f"1-{area}-{exch}-{line:04d}"]
        return _whole(self.pick(forms), Label.PHONE)

    def email(self) -> Piece:
        first, last = self.pick(_first_names()).lower(), self.pick(_last_names()).lower()
        domain = self.pick(("example.org", "mailbox.net", "example.com"))
        return _whole(f"{first}.{last}{self.rng.randint(1, 99)}@{domain}", Label.CONTACT)

    def id_value(self) -> str:
        shapes = ["LL-DDDDDD", "DDDD-LL-DD", "DDDDD-L", "LLLDDDDDDDDD", "LL-DDDDD", "LD-DDDD-DDD"]
        if self.heldout:
            shapes += ["L-DDDDD", "DDD-DDD-LL", "LLDDDDDDD", "DD-LLL-DDDD"]
        shape = self.pick(shapes)
        return "".join(
            self.pick("ABCDEFGHJKLMNPRSTUVWXYZ")
            if c == "L"
            else str(self.rng.randrange(10))
            if c == "D"
            else c
            for c in shape
        )

    def identifier(self) -> Piece:
        cues = ["MRN: ", "MRN ", "MRN# ", "ID: ", "Acct#", "Acct# ", "insurance # ",
                "License No: ", "Patient ID: "]  # fmt: skip
        if self.heldout:
            cues = ["Medical Record Number: ", "Account No. ", "Policy #: ", "Member ID: ",
                    "Insurance ID: ", "Lic. # ", "Chart # ", "Encounter #: ", "MRN: "]  # fmt: skip
        return _join(self.pick(cues), _whole(self.id_value(), Label.ID))

    # ages
    def age(self) -> Piece:
        """An age in apposition: "62-year-old" (not PHI) or "93-year-old" (PHI)."""
        n = self.rng.randint(20, 88) if self.rng.random() < 0.5 else self.rng.randint(90, 104)
        unit = self.pick(("-year-old", " year old", "-yr-old", " y/o") if self.heldout
                         else ("-year-old", "-year-old", " yo", " y/o"))  # fmt: skip
        piece = _whole(str(n), Label.AGE) if n > 89 else _plain(str(n))
        if n > 89 and self.heldout and self.rng.random() < 0.3:
            word = "ninety-" + self.pick(("one", "two", "three", "four", "six", "eight"))
            piece = _whole(word, Label.AGE)
        return _join(piece, unit)

    def age_opening(self) -> Piece:
        """An age over 89 that opens a line: "93 yo F", "Age: 95", "94M"."""
        n = str(self.rng.randint(90, 103))
        forms = [(n, " yo "), (n, " y/o "), (n, "-year-old "), ("Age: " + n, ", ")]
        if self.heldout:
            forms += [(n, " y.o. "), (n, "yo "), (n, " yr old "), ("Aged " + n, ", ")]
        head, tail = forms[self.rng.randrange(len(forms))]
        cut = len(head) - len(n)
        return _join(head[:cut], _whole(n, Label.AGE), tail)

    # dates
    def date(self) -> Piece:
        y, m, d = self.rng.randint(1995, 2024), self.rng.randint(1, 12), self.rng.randint(1, 28)
        forms: list[Callable[[], str]] = [
            lambda: f"{m:02d}/{d:02d}/{y}",
            lambda: f"{m}-{d}-{y % 100:02d}",
            lambda: f"{y}-{m:02d}-{d:02d}",
            lambda: f"{_MONTHS[m - 1]} {d}, {y}",
            lambda: f"{d} {_MONTHS[m - 1][:3]} {y}",
            lambda: f"{_MONTHS[m - 1].upper()} of {y}",
            lambda: f"{m}.{d}.{y}",
            lambda: f"{_MONTHS[m - 1]} {d}-{d + 2}, {y}",
            lambda: f"{m}/{d}-{m}/{d + 3}/{y}",
            lambda: f"the {d}{_ordinal(d)} of {_MONTHS[m - 1]}, {y}",
            lambda: f"{d:02d}-{_MONTHS[m - 1][:3].upper()}-{y}",
            lambda: f"{_MONTHS[m - 1][:3]}. {d}{_ordinal(d)}",
        ]
        if self.heldout:
            forms += [
                lambda: f"{y}/{m:02d}/{d:02d}",
                lambda: f"{y}.{m:02d}.{d:02d}",
                lambda: f"{_MONTHS[m - 1][:3]} {d} - {_MONTHS[m - 1][:3]} {d + 3}, {y}",
                lambda: f"{_MONTHS[m - 1].upper()} {y}",
                lambda: f"{_ABBREVIATIONS[m - 1]} {d}{_ordinal(d)}, {y}",
                lambda: f"{_MONTHS[m - 1][:3].upper()}-{d:02d}-{y}",
                lambda: f"{m:02d} / {d:02d} / {y}",
            ]
        return _whole(forms[self.rng.randrange(len(forms))](), Label.DATE)


_ABBREVIATIONS = [
    "Jan.",
    "Feb.",
    "Mar.",
    "Apr.",
    "May",
    "Jun.",
    "Jul.",
    "Aug.",
    "Sept.",
    "Oct.",
    "Nov.",
    "Dec.",
]


def _ordinal(d: int) -> str:
    if d in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(d % 10, "th")


# --- templates --------------------------------------------------------------------------

_DEV = (
    "A {age} {sex}, {person}, was seen by {doctor} at {facility} on {date} ({identifier}).",
    "{age_opening}{sex} transferred from {facility} to {facility} on {date} for further care.",
    "Patient {person} lives in {city} with her daughter. Contact: {phone}.",
    "Referred by {doctor} of {facility}. {identifier}. Follow-up scheduled {date}.",
    "{person}, a {age} {sex} from {city}, presented to the ED on {date} with chest pain.",
    "Discharged to {facility} in {city} on {date}.\n{signoff}",
    "Hospitalized at {facility} from {date} to {date}; {identifier}; {identifier}.",
    "Moved to {ward} on {date}. Family in {city_caps} notified at {phone}.",
    "{age_opening}{sex} with dementia, brought in from {facility} by EMS. Seen in clinic {date}.",
    "Seen at {facility} ER on {date}; records requested from {facility}. {identifier}",
    "Wife, {person}, can be reached at {phone} or {email}.",
    "Address on file: {address}. Primary care: {doctor}.",
    "CC: fall. {person} is a {age} {sex} who stayed at {facility} until {date}. "
    "Plan: return to {city} once stable.\n{signoff}",
    "Surgery performed {date} by {doctor}, {facility}. Pathology reviewed at {facility}.",
    "{identifier}\n{identifier}\nDOB: {date}\nAttending: {doctor}",
    "Echo done at {facility} ({date}) showed preserved EF. Travels to {city} often.",
)

_HELDOUT = (
    "Ms. {person} ({age}) arrived by ambulance from {city} and was evaluated at {facility} {date}.",
    "{age_opening}gentleman, {person}, followed by {doctor} in the {facility} clinic since {date}.",
    "History obtained from her son, {person}, who lives out of state in {city_caps}.",
    "Outside records ({facility}, dated {date}) reviewed. {identifier}.",
    "He was flown to {facility} and later went to {facility} for rehabilitation. "
    "Insurance verified ({identifier}).",
    "Transfer summary: sending facility {facility}; receiving {facility}; transfer date {date}.",
    "Phone consult with {doctor} ({phone}) on {date} regarding {person}.",
    "Lives alone at {address}; niece {person} checks on her daily.",
    "Seen in follow up. Next visit {date} at the {ward} office.\n{signoff}",
    "{age_opening}woman, resident of {facility}, with recurrent falls. Last admission {date}.",
    "Originally from {city_caps}; relocated to {city} to be near family.",
    "Records faxed to {facility} at {phone}. Contact e-mail: {email}.",
    "ED course at {facility}: stable. {person} discharged home to {city_caps} {date}.\n{signoff}",
    "Identifiers: {identifier}; {identifier}.",
    "Admitted to {ward} between {date} and {date} under the care of {doctor}.",
    "Mammogram {date} at {facility} was benign; she winters in {city}.",
)

_SEX = ("male", "female", "man", "woman", "M", "F")
_SLOT = re.compile(r"\{(\w+)\}")


def _fill(slot: str, f: _Filler) -> Piece:
    plain: dict[str, Callable[[], Piece]] = {
        "person": f.person,
        "doctor": f.doctor,
        "signoff": f.signoff,
        "city": f.city,
        "city_caps": lambda: f.city(caps=True),
        "facility": f.facility,
        "ward": f.ward,
        "address": f.address,
        "phone": f.phone,
        "email": f.email,
        "identifier": f.identifier,
        "age": f.age,
        "age_opening": f.age_opening,
        "date": f.date,
        "sex": lambda: _plain(f.pick(_SEX)),
    }
    return plain[slot]()


def _note(template: str, f: _Filler) -> SyntheticNote:
    parts: list[Piece | str] = []
    pos = 0
    for m in _SLOT.finditer(template):
        parts.append(template[pos : m.start()])
        parts.append(_fill(m.group(1), f))
        pos = m.end()
    parts.append(template[pos:])
    text, spans = _join(*parts)
    return SyntheticNote(text, spans)


def templates(family: str) -> tuple[str, ...]:
    return _DEV if Family(family) is Family.DEV else _HELDOUT


def generate(n: int, seed: int, family: str) -> list[SyntheticNote]:
    """``n`` notes of the template family ``family`` ("dev" or "heldout"), the same for the
    same ``seed``. Templates are used in turn from a seeded shuffle, values drawn per slot."""
    fam = Family(family)
    frames = templates(fam)
    rng = random.Random(f"{fam.value}:{seed}")  # noqa: S311 - invented test text, no secret
    filler = _Filler(rng, fam)
    order: list[str] = []
    out = []
    for _ in range(n):
        if not order:
            order = list(frames)
            rng.shuffle(order)
        out.append(_note(order.pop(), filler))
    return out
