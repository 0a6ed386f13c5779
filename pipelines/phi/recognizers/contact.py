"""Contact details: telephone and fax numbers, pagers, e-mail addresses, URLs, IP addresses.

Phones come in every US layout ("(301) 944-5032", "301 944-5032", "301.944.5032",
"3019445032", "944-5032", extensions "x45" / "ext. 1234"); pager and beeper numbers are
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
from pipelines.phi.scan import compile_words, keep_best, word_set, words_before
from pipelines.spans import Category, Span

# 10 digits in 3-3-4 groups (any separators, area code possibly in parentheses) or 7 digits
# in 3-4 groups; an optional extension. Left boundary is checked in Python (fast prefix).
_PHONE = re.compile(
    r"\d{3}(?:\)?[ \t]{0,3}[.\-/]?[ \t]{0,3}\d{3}|)[ \t]{0,3}[.\-/]?[ \t]{0,3}\d{4}(?!\d)"
    r"(?:[ \t]{0,2}(?:x|ext\.?|extension)[ \t]?\d{1,6}\b)?",
    re.I,
)
# Cue-led numbers: "Pager #12345", "PG 23456", "beeper: 4-1234", "fax 555 1234", "cell# ...".
_CUED = compile_words(
    r"(?i)\b(pager|pgr|pg|beeper|beep|page|tel|telephone|phone|cell|mobile|office"
    r"|fax|facsimile|call|contact|reached|extension|ext)\b\.?(?:\s*(?:number|no\.?|num|#))?"
    r"\s*[:#=]?\s*#?\s*(\d[\d\-. ]{3,14}\d)"
)
_EXTENSION = compile_words(r"(?i)\b(?:x|ext\.?\s?)(\d{2,5})\b")
_FAX_CUES = frozenset({"fax", "facsimile", "fx"})
_PHONE_CUES = word_set(
    "pager pgr pg beeper tel telephone phone ph cell mobile home work office fax call called "
    "contact reached number no # at"
)


@register("phone")
class PhoneRecognizer(Recognizer):
    """US telephone, fax and pager numbers; FAX when "fax" is the nearest cue."""

    categories = frozenset({Category.PHONE, Category.FAX})

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        spans: list[Span] = []
        for m in _PHONE.finditer(text):
            start, end = m.start(), m.end()
            left = text[start - 2 : start] if start >= 2 else " " + text[:start]
            if (
                left[-1:].isdigit()
                or left[-1:] in ("/", ".")
                or left == "-"
                or (left[-1:] == "-" and left[:1].isdigit())
            ):
                continue
            digits = sum(c.isdigit() for c in m.group())
            value = m.group()
            seps = value.strip("0123456789")
            before = words_before(text, start, 2, 30)
            cued = any(w in _PHONE_CUES for w in before)
            if (digits < 10 or (value[:10].isdigit() and digits == 10)) and not cued:
                # 7 digits (944-5032) or 10 bare digits: a dash/dot layout that is not a
                # range ("500-1000", "930-1130PM") and a valid exchange (2-9 first)
                seven = re.fullmatch(r"([2-9]\d\d)[.\-](\d{4})", value)
                if not seven or int(seven.group(2)) % 50 == 0 or text[end : end + 1].isalpha():
                    continue
            if clinical.unit_follows(text, end) or clinical.vital_before(text, start, 2):
                continue
            if not cued and "/" in seps and clinical.vent_context(text, start, end):
                continue
            if start and text[start - 1] == "(" and ")" in value:
                start -= 1  # "(301) 944-5032"
            fax = any(w in _FAX_CUES for w in words_before(text, start, 4, 40))
            category = Category.FAX if fax else Category.PHONE
            spaced = not any(c in value for c in "-.()/")
            conf = 0.95 if cued else (0.6 if spaced else 0.85)
            spans.append(Span(start, end, category, conf, self.name))
        for m in _CUED.finditer(text):
            start, end = m.start(2), m.end(2)
            cue = m.group(1).lower()
            digits = sum(c.isdigit() for c in m.group(2))
            if digits < 4 or clinical.unit_follows(text, end):
                continue
            category = Category.FAX if cue in _FAX_CUES else Category.PHONE
            spans.append(Span(start, end, category, 0.9, self.name))
        if spans:
            for m in _EXTENSION.finditer(text):  # an extension right after a found number
                if any(0 <= m.start() - s.end <= 3 for s in spans):
                    spans.append(Span(m.start(), m.end(), Category.PHONE, 0.85, self.name))
        return keep_best(spans)


_EMAIL = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}")


@register("email")
class EmailRecognizer(Recognizer):
    """E-mail addresses (only scanned when the text has an "@")."""

    categories = frozenset({Category.EMAIL})

    def detect(self, doc: Doc) -> list[Span]:
        if "@" not in doc.text:
            return []
        return [
            Span(m.start(), m.end(), Category.EMAIL, 0.95, self.name)
            for m in _EMAIL.finditer(doc.text)
        ]


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
        for m in _URL.finditer(doc.text):
            start, end = m.start(), m.end()
            if start and doc.text[start - 1] == "@":
                continue  # the domain of an e-mail address
            while end > start and doc.text[end - 1] in ".,;:!?":
                end -= 1
            spans.append(Span(start, end, Category.URL, 0.9, self.name))
        return spans


# Anchored on the literal "." (fast search); the first octet is found by looking left.
_IPV4_TAIL = re.compile(r"\.\d{1,3}\.\d{1,3}\.\d{1,3}(?!\d|\.\d)")
_IPV6 = compile_words(r"(?i)[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}(?:%\w+)?")


@register("ip")
class IpRecognizer(Recognizer):
    """IPv4 and IPv6 addresses, validated with the stdlib ``ipaddress`` module."""

    categories = frozenset({Category.IP})

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        spans: list[Span] = []
        for m in _IPV4_TAIL.finditer(text):
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
