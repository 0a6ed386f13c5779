"""Street addresses and ZIP codes.

Streets: a house number, up to four name words and a USPS street suffix ("12 Main St",
"4410 N. Charles Street", "77 MASSACHUSETTS AVE APT 4"), and PO boxes. The suffix list is
the common part of USPS Publication 28 (no maintained Python package ships it on its own;
``usaddress`` parses with a CRF model, far too slow for this budget), written by hand.

ZIP codes: five-digit numbers are everywhere in clinical text (doses, counts, volumes), so
a ZIP needs context — a state name or postal abbreviation (from the ``us`` package) right
before it, a "zip" cue, or the ZIP+4 layout — and the code must exist (``zipcodes``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Final

from pipelines.phi import clinical
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.passes import declare
from pipelines.phi.patterns import Found, PatternPass, PatternPasses
from pipelines.phi.registry import register
from pipelines.phi.scan import (
    compile_words,
    finditer,
    grab,
    may_match,
    next_char,
    stand_in,
    words_before,
)
from pipelines.phi.wordlists import word_list, word_set
from pipelines.spans import Category, Span

_SUFFIXES = " ".join(word_list("street_suffixes"))
# A street up to its suffix: where it matches, the street with its unit after it does too
# (the prefilter's stand-in, ``scan.stand_in``).
_STREET_CORE = (
    r"\b(?P<house>\d{1,6}(?:-\d{1,4})?)\s+"
    r"(?P<street>(?:(?i:n|s|e|w|ne|nw|se|sw|north|south|east|west)\.?\s+)?"
    r"(?:(?:[A-Z][A-Za-z'\-]*|[A-Z]{2,}|\d{1,3}(?:st|nd|rd|th|ST|ND|RD|TH))\.?\s+){1,4}?"
    r"(?i:" + _SUFFIXES.replace(" ", "|") + r"))\b"
)
_STREET = (
    _STREET_CORE
    + r"\.?"
    + r"(?:,?\s*(?i:apt|apartment|suite|ste|unit|fl|floor|rm|room|#)\.?\s*#?\s*[A-Za-z0-9\-]{1,6}\b)?"
)
# Highways and rural routes by number: "Route 9", "200 Rte 28", "Hwy 61", "Interstate 95",
# "RR 2 Box 14". "Rt"/"Rte"/"Route" (a side, a route of giving) only as written so, with a
# house number or a place word before (checked in ``_highway``).
_HIGHWAY_CORE = (
    r"\b(?P<hwkind>Rt|RT|Rte|RTE|Route|ROUTE|(?i:hwy|highway|interstate"
    r"|state[ \t]+route|rural[ \t]+route|county[ \t]+road|rr))\.?[ \t]*#?[ \t]*\d{1,3}\b"
)
_HIGHWAY = r"(?P<hw>(?:\b\d{1,6}[ \t]+)?" + _HIGHWAY_CORE + r"(?:[ \t]+(?i:box)[ \t]+\d{1,5}\b)?)"
# A house number with a letter ("12B Oak Street", "14A ELM AVE"): a scan of its own, run
# where the shared pre-check saw a cheap probe of its start (in the address scan it cost
# every note 7 % more, session 17; as an alternative of the highway scan 0.9 %; the whole
# pattern in the pre-check cost more than this probe: bench/README.md, session 18)
_HOUSE_PROBE = r"\b\d{1,6}[A-RT-Za-rt-z][ \t]+[A-Z0-9]"
_HOUSE_LETTER = (
    r"(?P<hl>\b\d{1,6}[A-RT-Za-rt-z][ \t]+"
    r"(?P<hlstreet>(?:(?:[A-Z][A-Za-z'\-]*|\d{1,3}(?:st|nd|rd|th|ST|ND|RD|TH))\.?[ \t]+){1,3}?"
    r"(?i:" + _SUFFIXES.replace(" ", "|") + r"))\b\.?)"
)
_HIGHWAY_CUES: Final = word_set("street_highway_cues")
_LONG_SUFFIXES = word_set("street_suffixes_long")
_SUFFIXES_NOT_DR = word_set("street_suffixes") - {"dr"}  # "4B SMITH DR" is a doctor
_PO_BOX = r"(?P<box>(?i:\b(?:p\.?\s*o\.?\s*box|post\s+office\s+box)\s+#?\s*\d{1,6})\b)"
# Street words that are also clinical / everyday words: a street needs more than these.
_WEAK_NAME_WORDS = word_set("street_weak_words")


@lru_cache(maxsize=1)
def address_groups() -> dict[str, int]:
    """Group numbers of ``address_scan()`` (re2's name lookups are slow)."""
    return dict(address_scan().groupindex)


@lru_cache(maxsize=1)
def address_scan() -> Any:
    """One re2 pass for streets, PO boxes and ZIPs. A ZIP needs a state (name or postal
    code, from ``us``) or "zip" before it, or the ZIP+4 layout."""
    import us

    states = [*us.states.STATES_AND_TERRITORIES, us.states.DC]
    names = sorted({s.name for s in states}, key=len, reverse=True)
    abbrs = sorted({s.abbr for s in states})
    zip_context = (
        r"(?:\b(?i:" + "|".join(n.replace(" ", r"\s+") for n in names) + r")"
        r"|\b(?:" + "|".join(abbrs) + r")|(?i:\bzip(?:\s*code)?|\bpostal\s+code))"
        r"\.?,?\s*[:#]?\s*(?P<zip>\d{5}(?:-\d{4})?)\b"
    )
    others = "|" + _PO_BOX + "|" + zip_context + r"|\b(?P<zip4>\d{5}-\d{4})\b"
    scan = compile_words(_STREET + others)
    stand_in(scan, _STREET_CORE + others)
    return scan


# A scan of its own: in the address scan its alternatives cost every note more
@lru_cache(maxsize=1)
def _highway_scan() -> Any:
    scan = compile_words(_HIGHWAY)
    stand_in(scan, _HIGHWAY_CORE)  # the house number before and the box after are optional
    return scan


@lru_cache(maxsize=1)
def _house_probe() -> Any:
    return compile_words(_HOUSE_PROBE)


@lru_cache(maxsize=1)
def _house_scan() -> Any:
    return compile_words(_HOUSE_LETTER)


@lru_cache(maxsize=1)
def _real_zips() -> frozenset[str]:
    """Every ZIP code the ``zipcodes`` package knows, from its shipped copy (one load, then
    set lookups)."""
    from surrogates import zipdata

    return frozenset(zipdata.column(0))


def _zip_exists(code: str) -> bool:
    return code[:5] in _real_zips()


def _street(text: str, m: Any) -> Found | None:
    """A house number, up to four name words and a USPS suffix: "12 Main St", "4410 N.
    Charles Street Apt 4" (not "2 units dr", "HR 90 SR TO ST")."""
    return _street_at(text, m.start(), m.end(), grab(text, m, address_groups()["street"]))


def _house_letter(text: str, m: Any) -> Found | None:
    """A house number with a letter, as a street: "12B Oak Street", "14A ELM AVE"."""
    groups = _house_groups()
    street = grab(text, m, groups["hlstreet"])
    start, end = m.start(groups["hl"]), m.end(groups["hl"])
    words = street.split()
    if not any(w[:1].isalpha() for w in words[:-1]) and words[-1].lower() not in _LONG_SUFFIXES:
        return None  # "1st AV block": an ordinal and a short suffix
    # a number with a letter of a unit's ("2L NC") or before an abbreviation is no house
    # number in capitals; else a short suffix will do there ("14A ELM AVE")
    plain = text[start : m.start(groups["hlstreet"])].rstrip()[-1:] in "ABCDEFabcdef"
    clinical = word_set("clinical_acronyms") | word_set("exclusion_clinical_abbreviations")
    plain = plain and not any(w.strip(".").lower() in clinical for w in words[:-1])
    return _street_at(text, start, end, street, _SUFFIXES_NOT_DR if plain else _LONG_SUFFIXES)


def _street_at(
    text: str, start: int, end: int, street: str, capitals: frozenset[str] = _LONG_SUFFIXES
) -> Found | None:
    """The street of house number ``text[start:...]``; in capitals only a suffix of
    ``capitals`` makes it one."""
    if start and text[start - 1] in "-/.":
        return None
    raw = street.split()
    words = [w.strip(".").lower() for w in raw[:-1]]
    suffix = raw[-1].strip(".").lower()
    if not words or any(w in _WEAK_NAME_WORDS for w in words):
        return None  # "2 units dr", "5 mg way", "8 MCG. BP STABLE CONT"
    title = all(w[:1].isupper() and not w[1:].isupper() for w in raw[:-1] if w[:1].isalpha())
    if not title and suffix not in capitals:
        return None  # all-caps notes: "HR 90 SR TO ST", "PER DR SMITH"
    if suffix == "dr" and next_char(text, end).isalpha():
        conf = 0.55  # "12 Smith Dr Jones" also reads as a doctor's name
    else:
        conf = 0.85 if suffix in _LONG_SUFFIXES else 0.75
    return (start, end, Category.LOCATION_STREET, conf)


def _po_box(text: str, m: Any) -> Found | None:
    """PO boxes: "PO Box 123", "Post Office Box #12"."""
    return (m.start(), m.end(), Category.LOCATION_STREET, 0.9)


def _highway(text: str, m: Any) -> Found | None:
    """A highway or rural route by its number: "Route 9", "Hwy 61", "RR 2 Box 14"; a short
    form ("Rt 9", "Route 9") needs a house number or a place word before it ("MVC on Rt 9"),
    and no unit after ("Rt 2 cm")."""
    groups = _highway_groups()
    start, end = m.start(groups["hw"]), m.end(groups["hw"])
    written = grab(text, m, groups["hwkind"])
    kind = written.lower()
    if clinical.unit_follows(text, end) or next_char(text, end) in "/%":
        return None
    if kind == "rr" and "box" not in text[start:end].lower():
        return None  # "vent at RR 14" is a rate
    if kind in {"rt", "rte", "route"} and not text[start].isdigit():
        if written == "RT":
            return None  # "RT 2 hrs ago" is respiratory therapy: a house number first
        before = words_before(text, start, 1, 12)
        if not before or before[0] not in _HIGHWAY_CUES:
            return None
    return (start, end, Category.LOCATION_STREET, 0.8)


def _zip(text: str, m: Any) -> Found | None:
    """A ZIP after a state or a "zip" cue ("MD 21201"; not "IN 12345 units")."""
    group = address_groups()["zip"]
    if text[m.end() : m.end() + 1].isdigit() or clinical.unit_follows(text, m.end()):
        return None
    conf = 0.9 if _zip_exists(grab(text, m, group)) else 0.6
    return (m.start(group), m.end(), Category.LOCATION_ZIP, conf)


def _zip4(text: str, m: Any) -> Found | None:
    """ZIP+4 alone ("21201-1234"), when the ZIP exists."""
    if not _zip_exists(grab(text, m, address_groups()["zip4"])):
        return None
    return (m.start(), m.end(), Category.LOCATION_ZIP, 0.7)


PASSES: Final = declare(
    PatternPasses[str](
        "addresses",
        [
            PatternPass("addresses.street", _street, "street", "addresses"),
            PatternPass("addresses.po_box", _po_box, "box", "addresses"),
            PatternPass("addresses.highway", _highway, "hw", "highways"),
            PatternPass("addresses.house_letter", _house_letter, "hl", "house_letters"),
            PatternPass("addresses.zip", _zip, "zip", "addresses"),
            PatternPass("addresses.zip4", _zip4, "", "addresses"),
        ],
    )
)


@lru_cache(maxsize=1)
def _table() -> Any:
    """The passes' table (built with the scan, on first use: the state names)."""
    return PASSES.table("addresses", address_groups())


@register("addresses")
class AddressRecognizer(Recognizer):
    """Street addresses and PO boxes (LOCATION_STREET) and ZIP codes (LOCATION_ZIP)."""

    categories = frozenset({Category.LOCATION_STREET, Category.LOCATION_ZIP})

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        spans: list[Span] = []
        table = _table()
        for m in finditer(doc, address_scan()):
            PASSES.judge(table, text, text, m, spans)
        highways = _highway_table()
        for m in finditer(doc, _highway_scan()):
            PASSES.judge(highways, text, text, m, spans)
        if may_match(doc, _house_probe()):
            houses = _house_table()
            for m in _house_scan().finditer(text):
                PASSES.judge(houses, text, text, m, spans)
        return spans


@lru_cache(maxsize=1)
def _highway_groups() -> dict[str, int]:
    return dict(_highway_scan().groupindex)


@lru_cache(maxsize=1)
def _highway_table() -> Any:
    return PASSES.table("highways", _highway_groups())


@lru_cache(maxsize=1)
def _house_groups() -> dict[str, int]:
    return dict(_house_scan().groupindex)


@lru_cache(maxsize=1)
def _house_table() -> Any:
    return PASSES.table("house_letters", _house_groups())
