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
from typing import Any

from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.registry import register
from pipelines.phi.scan import compile_words, next_char, word_set
from pipelines.spans import Category, Span

_SUFFIXES = (
    "street st avenue ave av road rd boulevard blvd lane ln drive dr court ct place pl "
    "terrace ter circle cir parkway pkwy highway hwy way square sq trail trl alley aly "
    "plaza plz turnpike tpke pike expressway expy freeway fwy route rte row"
)
_STREET = compile_words(
    r"\b(\d{1,6}(?:-\d{1,4})?)\s+"
    r"((?:(?i:n|s|e|w|ne|nw|se|sw|north|south|east|west)\.?\s+)?"
    r"(?:(?:[A-Z][A-Za-z'\-]*|[A-Z]{2,}|\d{1,3}(?:st|nd|rd|th|ST|ND|RD|TH))\.?\s+){1,4}?"
    r"(?i:" + _SUFFIXES.replace(" ", "|") + r"))\b\.?"
    r"(?:,?\s*(?i:apt|apartment|suite|ste|unit|fl|floor|rm|room|#)\.?\s*#?\s*[A-Za-z0-9\-]{1,6}\b)?"
)
_LONG_SUFFIXES = word_set(
    "street avenue road boulevard lane drive court place terrace circle parkway highway "
    "square trail alley plaza turnpike expressway freeway"
)
_PO_BOX = compile_words(r"(?i)\b(?:p\.?\s*o\.?\s*box|post\s+office\s+box)\s+#?\s*\d{1,6}\b")
# Street words that are also clinical / everyday words: a street needs more than these.
_WEAK_NAME_WORDS = word_set(
    "the a an of and or to at in on with for per from by is was be mg mcg ml cc units unit "
    "liter liters hr hrs min x iv po pt pts bp hr rr dr st in into place placed per given "
    "foley cath line lines tube way runs beat beats degree"
)


@lru_cache(maxsize=1)
def _zip_context() -> Any:
    """re2 pattern: a state (name or postal code, from ``us``) or "zip" before 5(+4) digits."""
    import us

    states = [s for s in us.states.STATES_AND_TERRITORIES] + [us.states.DC]
    names = sorted({s.name for s in states}, key=len, reverse=True)
    abbrs = sorted({s.abbr for s in states})
    return compile_words(
        r"(?:\b(?i:" + "|".join(n.replace(" ", r"\s+") for n in names) + r")"
        r"|\b(?:" + "|".join(abbrs) + r")|(?i:\bzip(?:\s*code)?|\bpostal\s+code))"
        r"\.?,?\s*[:#]?\s*(\d{5}(?:-\d{4})?)\b"
    )


_ZIP4 = compile_words(r"\b\d{5}-\d{4}\b")


def _zip_exists(code: str) -> bool:
    import zipcodes

    try:
        return bool(zipcodes.is_real(code[:5]))
    except (TypeError, ValueError):
        return False


@register("addresses")
class AddressRecognizer(Recognizer):
    """Street addresses and PO boxes (LOCATION_STREET) and ZIP codes (LOCATION_ZIP)."""

    categories = frozenset({Category.LOCATION_STREET, Category.LOCATION_ZIP})

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        spans: list[Span] = []
        for m in _STREET.finditer(text):
            start = m.start()
            if start and text[start - 1] in "-/.":
                continue
            raw = m.group(2).split()
            words = [w.strip(".").lower() for w in raw[:-1]]
            suffix = raw[-1].strip(".").lower()
            if not words or any(w in _WEAK_NAME_WORDS for w in words):
                continue  # "2 units dr", "5 mg way", "8 MCG. BP STABLE CONT"
            title = all(
                w[:1].isupper() and not w[1:].isupper() for w in raw[:-1] if w[:1].isalpha()
            )
            if not title and suffix not in _LONG_SUFFIXES:
                continue  # all-caps notes: "HR 90 SR TO ST", "PER DR SMITH"
            if suffix == "dr" and next_char(text, m.end()).isalpha():
                conf = 0.55  # "12 Smith Dr Jones" also reads as a doctor's name
            else:
                conf = 0.85 if suffix in _LONG_SUFFIXES else 0.75
            spans.append(Span(m.start(), m.end(), Category.LOCATION_STREET, conf, self.name))
        for m in _PO_BOX.finditer(text):
            spans.append(Span(m.start(), m.end(), Category.LOCATION_STREET, 0.9, self.name))
        for m in _zip_context().finditer(text):
            code = m.group(1)
            if text[m.end(1) : m.end(1) + 1].isdigit():
                continue
            conf = 0.9 if _zip_exists(code) else 0.6
            spans.append(Span(m.start(1), m.end(1), Category.LOCATION_ZIP, conf, self.name))
        for m in _ZIP4.finditer(text):
            if any(s.start <= m.start() < s.end for s in spans):
                continue
            if _zip_exists(m.group()):
                spans.append(Span(m.start(), m.end(), Category.LOCATION_ZIP, 0.7, self.name))
        return spans
