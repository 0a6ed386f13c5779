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

from pipelines.phi import clinical
from pipelines.phi.base import Doc, Recognizer
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
_SEVEN = re.compile(r"([2-9]\d\d)[.\-](\d{4})")  # "555-0187": a valid exchange first
_COUNTRY = re.compile(r"(?<![\w+])\+?1[ .\-]$")
_FAX_CUES = frozenset({"fax", "facsimile", "fx"})
_PHONE_CUES = word_set("phone_cues")


@register("phone")
class PhoneRecognizer(Recognizer):
    """US telephone, fax and pager numbers; FAX when "fax" is the nearest cue."""

    categories = frozenset({Category.PHONE, Category.FAX})

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        spans: list[Span] = []
        extensions: list[tuple[int, int]] = []
        for m in finditer(doc, _SCAN):
            if grab(text, m, _G["cued"]):
                start, end = m.start(_G["cued"]), m.end(_G["cued"])
                digits = sum(c.isdigit() for c in grab(text, m, _G["cued"]))
                if digits < 4 or text[end : end + 1].isdigit() or clinical.unit_follows(text, end):
                    continue
                fax = grab(text, m, _G["cue"]).lower() in _FAX_CUES
                spans.append(
                    Span(start, end, Category.FAX if fax else Category.PHONE, 0.9, self.name)
                )
            elif grab(text, m, _G["paren"]):
                start, end = m.start(_G["paren"]), m.end(_G["paren"])
                spans.append(Span(start, end, Category.PHONE, 0.7, self.name))
            elif grab(text, m, _G["phone"]):
                span = self._shaped(text, m.start(), m.end(), grab(text, m, _G["phone"]))
                if span is not None:
                    spans.append(span)
            else:
                extensions.append((m.start(), m.end()))
        ends = {s.end for s in spans}
        for start, end in extensions:  # an extension right after a found number
            if any(start - gap in ends for gap in range(4)):
                spans.append(Span(start, end, Category.PHONE, 0.85, self.name))
        return keep_best(spans)

    def _shaped(self, text: str, start: int, end: int, value: str) -> Span | None:
        """A number with phone shape; 7-digit and bare 10-digit forms need more evidence."""
        country = _COUNTRY.search(text, max(0, start - 4), start)
        if country and len(value) >= 10:
            start = country.start()  # "1-800-555-1212", "+1 301 555 0187"
        left = text[start - 2 : start] if start >= 2 else " " + text[:start]
        if (
            left[-1:].isdigit()
            or left[-1:] in ("/", ".")
            or left == "-"
            or (left[-1:] == "-" and left[:1].isdigit())
            or text[end : end + 1].isdigit()
        ):
            return None
        digits = sum(c.isdigit() for c in value)
        seps = value.strip("0123456789")
        before = words_before(text, start, 2, 30)
        cued = any(w in _PHONE_CUES for w in before)
        if (digits < 10 or (value[:10].isdigit() and digits == 10)) and not cued:
            # 7 digits (555-0187) or 10 bare digits: a dash/dot layout that is not a
            # range ("500-1000", "930-1130PM") and a valid exchange (2-9 first)
            seven = _SEVEN.fullmatch(value)
            if not seven or int(seven.group(2)) % 50 == 0 or text[end : end + 1].isalpha():
                return None
        if clinical.unit_follows(text, end) or clinical.vital_before(text, start, 2):
            return None
        if not cued and "/" in seps and clinical.vent_context(text, start, end):
            return None
        if start and text[start - 1] == "(" and ")" in value:
            start -= 1  # "(301) 555-0187"
        fax = any(w in _FAX_CUES for w in words_before(text, start, 4, 40))
        spaced = not any(c in value for c in "-.()/")
        conf = 0.95 if cued else (0.6 if spaced else 0.85)
        return Span(start, end, Category.FAX if fax else Category.PHONE, conf, self.name)


# re2 (linear time): with ``re`` the leading repeat made "a.a.a.…a.@x" quadratic (every
# start position re-scanned the run; tests/phi/test_linear_time.py).
_EMAIL = compile_words(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}")


@register("email")
class EmailRecognizer(Recognizer):
    """E-mail addresses (only scanned when the text has an "@")."""

    categories = frozenset({Category.EMAIL})

    def detect(self, doc: Doc) -> list[Span]:
        if not _email_at(doc.text):
            return []
        return [
            Span(m.start(), m.end(), Category.EMAIL, 0.95, self.name) for m in finditer(doc, _EMAIL)
        ]


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


@register("url")
class UrlRecognizer(Recognizer):
    """Web addresses: scheme URLs, www. hosts and bare domains with common TLDs."""

    categories = frozenset({Category.URL})

    def detect(self, doc: Doc) -> list[Span]:
        spans = []
        for m in finditer(doc, _URL):
            start, end = m.start(), m.end()
            if start and doc.text[start - 1] == "@":
                continue  # the domain of an e-mail address
            while end > start and doc.text[end - 1] in ".,;:!?":
                end -= 1
            spans.append(Span(start, end, Category.URL, 0.9, self.name))
        return spans


# Anchored on the literal "." (fast search); the first octet is found by looking left.
_IPV4_TAIL = re.compile(r"\.\d{1,3}\.\d{1,3}\.\d{1,3}(?!\d|\.\d)")
# Its look-ahead-free shape for the shared re2 prefilter (``scan.may_match``): hardly any
# note has three dotted numbers in a row. ``\p{Nd}``: Python's ``\d`` is any Unicode digit.
_IPV4_SHAPE = compile_words(r"\.\p{Nd}{1,3}\.\p{Nd}{1,3}\.\p{Nd}{1,3}")
_IPV6 = compile_words(r"(?i)[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}(?:%\w+)?")


@register("ip")
class IpRecognizer(Recognizer):
    """IPv4 and IPv6 addresses, validated with the stdlib ``ipaddress`` module."""

    categories = frozenset({Category.IP})

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        spans: list[Span] = []
        for m in led_finditer(text, _IPV4_SHAPE, _IPV4_TAIL) if may_match(doc, _IPV4_SHAPE) else ():
            start = m.start()
            while start > 0 and m.start() - start < 3 and text[start - 1].isdigit():
                start -= 1
            if start == m.start() or (start and text[start - 1] in "0123456789./"):
                continue
            if _is_ip(text[start : m.end()]):
                spans.append(Span(start, m.end(), Category.IP, 0.9, self.name))
        if "::" in text or text.count(":") >= 7:
            for m in _IPV6.finditer(text):
                value = m.group()
                if value.count(":") >= 2 and _is_ip(value.split("%")[0]):
                    spans.append(Span(m.start(), m.end(), Category.IP, 0.9, self.name))
        return spans


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True
