"""Contact details: telephone and fax numbers, pagers, e-mail addresses, URLs, IP addresses.

Phones come in every US layout ("(301) 555-0187", "301 555-0187", "301.555.0187",
"3015550187", "555-0187", extensions "x37" / "ext. 1234"); pager and beeper numbers are
short ("Pager #12345") so they need the cue word. Clinical number runs that happen to have
phone shape ("CO/CI/SVR 5/2.5/800", "BP 120 110 1000") are kept by the shared clinical
checks. E-mail / URL / IP scans run only when a cheap substring test says they can match.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
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
    keep_best,
    led_finditer,
    may_match,
    words_before,
)
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category, Span

# One re2 pass (no look-around; edges are checked in Python):
# - cue-led numbers: "Pager #12345", "PG 23456", "beeper: 4-1234", "cell# 410-555-0163";
# - phone shapes: 10 digits in 3-3-4 groups (any separators, area code possibly in
#   parentheses) or 7 digits in 3-4 groups, with an optional extension;
# - a lone extension ("x37", "ext. 221"), kept only right after a found number;
# - three digit groups alone in brackets, 10-11 digits ("(301 273 45166)"): a number
#   given as a contact, even when mistyped.
_SCAN = compile_words(
    r"(?i:\b(?P<cue>pager|pgr|pg|beeper|beep|page|tel|telephone|phone|cell|mobile|office"
    r"|fax|facsimile|call|contact|reached|extension|ext)\b\.?(?:\s*(?:number|no\.?|num|#))?"
    r"\s*[:#=]?\s*#?\s*)(?P<cued>\d[\d\-. ]{3,14}\d)"
    r"|(?P<phone>\d{3}(?:\)?[ \t]{0,3}[.\-/]?[ \t]{0,3}\d{3}|)[ \t]{0,3}[.\-/]?[ \t]{0,3}\d{4}"
    r"(?i:[ \t]{0,2}(?:x|ext\.?|extension)[ \t]?\d{1,6}\b)?)"
    r"|(?i:\b(?:x|ext\.?\s?))(?P<ext>\d{2,5})\b"
    r"|\((?P<paren>\d{3}[ \-]\d{3}[ \-]\d{4,5})\)"
)
_G = dict(_SCAN.groupindex)  # numbers: re2 name lookups are slow
_CUE, _CUED, _PAREN, _PHONE = (_G[name] for name in ("cue", "cued", "paren", "phone"))
_SEVEN = re.compile(r"([2-9]\d\d)[.\-](\d{4})")  # "555-0187": a valid exchange first
_COUNTRY = re.compile(r"(?<![\w+])\+?1[ .\-]$")
_FAX_CUES = frozenset({"fax", "facsimile", "fx"})
_PHONE_CUES = word_set("phone_cues")
_PLACE_CUES = frozenset({"office", "home", "work"})  # a fax's place as much as a phone's


@dataclass(slots=True)
class _Note:
    text: str
    extensions: list[tuple[int, int]] = field(default_factory=list)  # lone "x37"s, for later


def _cued(note: _Note, m: Any) -> Found | None:
    """A number after a phone, pager or fax cue: "Pager #12345", "cell# 410-555-0163"."""
    text = note.text
    start, end = m.start(_CUED), m.end(_CUED)
    digits = sum(c.isdigit() for c in grab(text, m, _CUED))
    if digits < 4 or text[end : end + 1].isdigit() or clinical.unit_follows(text, end):
        return None
    fax = grab(text, m, _CUE).lower() in _FAX_CUES
    return (start, end, Category.FAX if fax else Category.PHONE, 0.9)


def _bracketed(note: _Note, m: Any) -> Found | None:
    """Three digit groups alone in brackets: "(301 273 45166)", a number given as a contact."""
    return (m.start(_PAREN), m.end(_PAREN), Category.PHONE, 0.7)


def _edge_blocked(text: str, start: int, end: int) -> bool:
    """The digits continue a number, a date or a range on either side."""
    left = text[start - 2 : start] if start >= 2 else " " + text[:start]
    return (
        left[-1:].isdigit()
        or left[-1:] in ("/", ".")
        or left == "-"
        or (left[-1:] == "-" and left[:1].isdigit())
        or text[end : end + 1].isdigit()
    )


def _uncued_phone(text: str, end: int, value: str) -> bool:
    """With no cue, 7 digits (555-0187) or 10 bare digits need a dash/dot layout that is no
    range ("500-1000", "930-1130PM") and a valid exchange (2-9 first)."""
    digits = sum(c.isdigit() for c in value)
    if digits >= 10 and not (value[:10].isdigit() and digits == 10):
        return True
    seven = _SEVEN.fullmatch(value)
    if seven is None:
        return False
    return int(seven.group(2)) % 50 != 0 and not text[end : end + 1].isalpha()


def _clinical_run(text: str, start: int, end: int, value: str, cued: bool) -> bool:
    """A clinical number run of phone shape: a unit after, a vital before, vent settings."""
    if clinical.unit_follows(text, end) or clinical.vital_before(text, start, 2):
        return True
    seps = value.strip("0123456789")
    return not cued and "/" in seps and clinical.vent_context(text, start, end)


def _country_start(text: str, start: int, value: str) -> int:
    """Where a 10-digit number starts with its country code: "1-800-555-1212", "+1 301 …"."""
    country = _COUNTRY.search(text, max(0, start - 4), start)
    return country.start() if country and len(value) >= 10 else start


def _shaped(note: _Note, m: Any) -> Found | None:
    """A number with phone shape; 7-digit and bare 10-digit forms need more evidence."""
    text, start, end = note.text, m.start(), m.end()
    value = grab(text, m, _PHONE)
    start = _country_start(text, start, value)
    if _edge_blocked(text, start, end):
        return None
    cued = any(w in _PHONE_CUES for w in words_before(text, start, 2, 30))
    if not cued and not _uncued_phone(text, end, value):
        return None
    if _clinical_run(text, start, end, value, cued):
        return None
    if start and text[start - 1] == "(" and ")" in value:
        start -= 1  # "(301) 555-0187"
    fax = _fax_nearest(text, start)
    spaced = not any(c in value for c in "-.()/")
    conf = 0.95 if cued else (0.6 if spaced else 0.85)
    return (start, end, Category.FAX if fax else Category.PHONE, conf)


def _fax_nearest(text: str, start: int) -> bool:
    """Is "fax" the nearest contact cue among the eight words before a number ("fax number for
    the office is 617-...", "fax the form to dr hale at 617-..."; not "fax sent, call
    617-...")? "office", "home" and "work" name a fax's place as much as a phone's."""
    for word in reversed(words_before(text, start, 8, 60)):
        if word in _FAX_CUES:
            return True
        if word in _PHONE_CUES and word not in _PLACE_CUES:
            return False
    return False


def _extension(note: _Note, m: Any) -> Found | None:
    """A lone extension ("x37", "ext. 221"): kept only right after a number found."""
    note.extensions.append((m.start(), m.end()))
    return None


PASSES: Final = declare(
    PatternPasses[_Note](
        "phone",
        [
            PatternPass("phone.cued", _cued, "cued", "phone"),
            PatternPass("phone.bracketed", _bracketed, "paren", "phone"),
            PatternPass("phone.shaped", _shaped, "phone", "phone"),
            PatternPass("phone.extension", _extension, "", "phone"),
        ],
    )
)
_TABLE = PASSES.table("phone", _G)


@register("phone")
class PhoneRecognizer(Recognizer):
    """US telephone, fax and pager numbers; FAX when "fax" is the nearest cue."""

    categories = frozenset({Category.PHONE, Category.FAX})

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        spans: list[Span] = []
        note = _Note(text)
        for m in finditer(doc, _SCAN):
            PASSES.judge(_TABLE, note, text, m, spans)
        ends = {s.end for s in spans}
        for start, end in note.extensions:  # an extension right after a found number
            if any(start - gap in ends for gap in range(4)):
                spans.append(PASSES.make("phone.extension", (start, end, Category.PHONE, 0.85)))
        return keep_best(spans)


# re2 (linear time): with ``re`` the leading repeat made "a.a.a.…a.@x" quadratic (every
# start position re-scanned the run; tests/phi/test_linear_time.py).
_EMAIL = compile_words(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}")


def _email(note: str, m: Any) -> Found | None:
    """E-mail addresses (scanned only when the text has an "@" between address characters)."""
    return (m.start(), m.end(), Category.EMAIL, 0.95)


_EMAIL_PASSES: Final = declare(
    PatternPasses[str]("email", [PatternPass("email.address", _email, scan="email")])
)
_EMAIL_TABLE = _EMAIL_PASSES.table("email", {})


@register("email")
class EmailRecognizer(Recognizer):
    """E-mail addresses (only scanned when the text has an "@")."""

    categories = frozenset({Category.EMAIL})

    def detect(self, doc: Doc) -> list[Span]:
        spans: list[Span] = []
        if _email_at(doc.text):
            for m in finditer(doc, _EMAIL):
                _EMAIL_PASSES.judge(_EMAIL_TABLE, doc.text, doc.text, m, spans)
        return spans


_LOCAL_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+-")
_DOMAIN_CHARS = _LOCAL_CHARS - frozenset("._%+")


def _email_at(text: str) -> bool:
    """An "@" with an address character on each side, as every ``_EMAIL`` match has. Why: notes
    write "@" for "at" ("@ 0800"), and on such a note ``_EMAIL`` tries a match from every word
    character (the local part is a leading repeat, so the search has no fast skip)."""
    at = text.find("@", 1)
    while at > 0:
        if text[at - 1] in _LOCAL_CHARS and text[at + 1 : at + 2] in _DOMAIN_CHARS:
            return True
        at = text.find("@", at + 1)
    return False


_URL = compile_words(
    r"(?i)\b(?:(?:https?|ftp)://[^\s<>\"')\]]+|www\.[^\s<>\"')\]]+"
    r"|[a-z0-9][a-z0-9\-]*(?:\.[a-z0-9\-]+)*\.(?:com|org|net|edu|gov|mil|info|biz|us|io)"
    r"(?:/[^\s<>\"')\]]*)?\b)"
)


def _url(text: str, m: Any) -> Found | None:
    """Scheme URLs, www. hosts and bare domains with common TLDs (not an e-mail's domain)."""
    start, end = m.start(), m.end()
    if start and text[start - 1] == "@":
        return None
    while end > start and text[end - 1] in ".,;:!?":
        end -= 1
    return (start, end, Category.URL, 0.9)


_URL_PASSES: Final = declare(
    PatternPasses[str]("url", [PatternPass("url.address", _url, scan="url")])
)
_URL_TABLE = _URL_PASSES.table("url", {})


@register("url")
class UrlRecognizer(Recognizer):
    """Web addresses: scheme URLs, www. hosts and bare domains with common TLDs."""

    categories = frozenset({Category.URL})

    def detect(self, doc: Doc) -> list[Span]:
        spans: list[Span] = []
        for m in finditer(doc, _URL):
            _URL_PASSES.judge(_URL_TABLE, doc.text, doc.text, m, spans)
        return spans


# Anchored on the literal "." (fast search); the first octet is found by looking left.
_IPV4_TAIL = re.compile(r"\.\d{1,3}\.\d{1,3}\.\d{1,3}(?!\d|\.\d)")
# Its look-ahead-free shape for the shared re2 prefilter (``scan.may_match``): hardly any
# note has three dotted numbers in a row. ``\p{Nd}``: Python's ``\d`` is any Unicode digit.
_IPV4_SHAPE = compile_words(r"\.\p{Nd}{1,3}\.\p{Nd}{1,3}\.\p{Nd}{1,3}")
_IPV6 = compile_words(r"(?i)[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}(?:%\w+)?")


def _v4(text: str, m: Any) -> Found | None:
    """Dotted IPv4 addresses: the first octet found by looking left of the dotted tail."""
    start = m.start()
    while start > 0 and m.start() - start < 3 and text[start - 1].isdigit():
        start -= 1
    if start == m.start() or (start and text[start - 1] in "0123456789./"):
        return None
    return (start, m.end(), Category.IP, 0.9) if _is_ip(text[start : m.end()]) else None


def _v6(text: str, m: Any) -> Found | None:
    """IPv6 addresses (scanned only when the text has "::" or seven colons)."""
    value = m.group()
    if value.count(":") >= 2 and _is_ip(value.split("%")[0]):
        return (m.start(), m.end(), Category.IP, 0.9)
    return None


_IP_PASSES: Final = declare(
    PatternPasses[str](
        "ip", [PatternPass("ip.v4", _v4, scan="v4"), PatternPass("ip.v6", _v6, scan="v6")]
    )
)
_V4_TABLE = _IP_PASSES.table("v4", {})
_V6_TABLE = _IP_PASSES.table("v6", {})


@register("ip")
class IpRecognizer(Recognizer):
    """IPv4 and IPv6 addresses, validated with the stdlib ``ipaddress`` module."""

    categories = frozenset({Category.IP})

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        spans: list[Span] = []
        judge = _IP_PASSES.judge
        for m in led_finditer(text, _IPV4_SHAPE, _IPV4_TAIL) if may_match(doc, _IPV4_SHAPE) else ():
            judge(_V4_TABLE, text, text, m, spans)
        if "::" in text or text.count(":") >= 7:
            for m in _IPV6.finditer(text):
                judge(_V6_TABLE, text, text, m, spans)
        return spans


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True
