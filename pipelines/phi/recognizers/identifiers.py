"""Identifying numbers: SSN, MRN, account, health plan, licence, device, vehicle, other IDs.

Two ways in: the cue word in front ("MRN: 1234567", "acct # 55-1234", "unit no. 882",
"ref # 8336652", "policy #rg17", "VIN 1HGCM82633A004352") decides the category; without a
cue only distinctive shapes count — SSN layout (3-2-4 with the SSA's validity rules), long
digit runs (7+ digits that are not phone-shaped) and letter+digit codes ("AB1234567").
Short "#" values stay: they are catheter gauges, tube sizes and "Tylenol #3" in clinical
text ("#20 IV", "#8 ETT", "#7.5", "#20fr").
"""

from __future__ import annotations

import re

from pipelines.phi import clinical
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.registry import register
from pipelines.phi.scan import compile_words, keep_best, word_set, words_before
from pipelines.spans import Category, Span

# cue word (lower-case, spaces collapsed) -> category
_CUES: dict[str, Category] = {
    "mrn": Category.MRN, "mr": Category.MRN, "medical record": Category.MRN,
    "med rec": Category.MRN, "record": Category.MRN, "unit": Category.MRN,
    "hospital": Category.MRN, "chart": Category.MRN, "patient id": Category.MRN,
    "pt id": Category.MRN,
    "acct": Category.ACCOUNT, "account": Category.ACCOUNT, "billing": Category.ACCOUNT,
    "encounter": Category.ACCOUNT, "visit": Category.ACCOUNT, "fin": Category.ACCOUNT,
    "ssn": Category.SSN, "ss": Category.SSN, "social security": Category.SSN,
    "member": Category.HEALTH_PLAN, "subscriber": Category.HEALTH_PLAN,
    "insurance": Category.HEALTH_PLAN, "health plan": Category.HEALTH_PLAN,
    "medicare": Category.HEALTH_PLAN, "medicaid": Category.HEALTH_PLAN,
    "beneficiary": Category.HEALTH_PLAN, "group": Category.HEALTH_PLAN,
    "license": Category.LICENSE, "licence": Category.LICENSE, "lic": Category.LICENSE,
    "dea": Category.LICENSE, "npi": Category.LICENSE, "certificate": Category.LICENSE,
    "serial": Category.DEVICE, "sn": Category.DEVICE, "s/n": Category.DEVICE,
    "device": Category.DEVICE, "model": Category.DEVICE, "lot": Category.DEVICE,
    "udi": Category.DEVICE,
    "vin": Category.VEHICLE, "plate": Category.VEHICLE, "license plate": Category.VEHICLE,
    "vehicle": Category.VEHICLE,
    "protocol": Category.ID, "ref": Category.ID, "reference": Category.ID,
    "policy": Category.ID, "case": Category.ID, "claim": Category.ID, "order": Category.ID,
    "accession": Category.ID, "specimen": Category.ID, "study": Category.ID, "id": Category.ID,
    "confirmation": Category.ID, "ticket": Category.ID, "tracking": Category.ID,
}  # fmt: skip
_CUE_RE = "|".join(
    sorted((re.escape(c).replace(r"\ ", r"\s+") for c in _CUES), key=len, reverse=True)
)
# cue + optional "number/no./#" + value that holds a digit (2+ chars, letters allowed)
_CUED = compile_words(
    r"(?i)\b(" + _CUE_RE + r")\b\.?(?:\s*(?:number|num|nbr|no\.?|#|id))*\s*[:#=]?\s*#?\s*"
    r"([a-z]{0,4}\d[a-z0-9\-/]*\d[a-z]?|[a-z]{0,4}\d)\b"
)
# A number sign before a code: "#rg17", "# 8336652" (but not "#20", "#8ETT", "#7.5").
_HASH = re.compile(r"#\s?([A-Za-z]{1,4}\d{2,}|\d{4,}[A-Za-z]?)(?![\w.])")
# Cue words that are everyday words too ("unit 3", "group B", "order 2") need "#"/"no."
# or a long value.
_WEAK_CUES = word_set(
    "unit hospital record group order case visit model lot id study policy protocol chart"
)
_PHONE_WORDS = word_set("pager pgr pg beeper cell home work phone tel fax office mobile ph")
# Rare shapes: re2 finds them ~4x faster than ``re`` (no look-around: edges checked below).
_SSN = compile_words(r"(\d{3})([- ])(\d{2})([- ])(\d{4})")
_LONG = compile_words(r"[A-Z]{1,3}\d{6,}|\d{7,}")


def _valid_ssn(area: str, group: str, serial: str) -> bool:
    """SSA rules: area not 000, 666 or 9xx; group not 00; serial not 0000."""
    return area not in {"000", "666"} and area[0] != "9" and group != "00" and serial != "0000"


@register("identifiers")
class IdentifierRecognizer(Recognizer):
    """SSN / MRN / account / plan / licence / device / vehicle / other IDs by cue and shape."""

    categories = frozenset(
        {
            Category.SSN, Category.MRN, Category.ACCOUNT, Category.HEALTH_PLAN,
            Category.LICENSE, Category.DEVICE, Category.VEHICLE, Category.ID,
        }
    )  # fmt: skip

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        spans: list[Span] = []
        for m in _CUED.finditer(text):
            cue = re.sub(r"\s+", " ", m.group(1).lower())
            value = m.group(2)
            category = _CUES.get(cue, Category.ID)
            digits = sum(c.isdigit() for c in value)
            between = text[m.end(1) : m.start(2)]
            numbered = any(c in between for c in "#:=") or re.search(
                r"(?i)\b(no|num|number|id)\b", between
            )
            after = text[m.end(2) : m.end(2) + 2]
            if clinical.unit_follows(text, m.end(2)) or (after[:1] == "." and after[1:].isdigit()):
                continue
            if cue == "id" and digits < 4:
                continue  # "ID:" heads the infectious-disease section of nursing notes
            # weak cues ("unit 3", "group 2", "order 5", "case 1") need a marker or a long value
            if digits < 4 and not (numbered and (digits >= 2 or value[:1].isalpha())):
                continue
            if cue in _WEAK_CUES and not numbered and (digits < 5 or not value.isalnum()):
                continue  # "unit 3", "hospital 8/20/02" (a date), "group 2-3"
            conf = 0.9 if numbered else 0.75
            spans.append(Span(m.start(2), m.end(2), category, conf, self.name))
        if "#" in text:
            for m in _HASH.finditer(text):
                before = words_before(text, m.start(), 1, 16)
                if before and before[0] in _PHONE_WORDS:
                    continue  # "Pager #12345" belongs to the phone recognizer
                if not clinical.unit_follows(text, m.end()):
                    spans.append(Span(m.start(1), m.end(1), Category.ID, 0.7, self.name))
        for m in _SSN.finditer(text):
            start = m.start()
            if start and (text[start - 1].isdigit() or text[start - 1] in "-/."):
                continue
            if text[m.end() : m.end() + 1] in ("-", "/") or text[m.end() : m.end() + 1].isdigit():
                continue
            if m.group(2) != m.group(4):
                continue
            if _valid_ssn(m.group(1), m.group(3), m.group(4)):
                conf = 0.9 if m.group(2) == "-" else 0.6
                spans.append(Span(start, m.end(), Category.SSN, conf, self.name))
        for m in _LONG.finditer(text):
            start = m.start()
            if start and (text[start - 1].isalnum() or text[start - 1] in "-/.,"):
                continue
            if text[m.end() : m.end() + 2][:1] == "." and text[m.end() + 1 : m.end() + 2].isdigit():
                continue
            if clinical.unit_follows(text, m.end()):
                continue
            spans.append(Span(start, m.end(), Category.ID, 0.6, self.name))
        return keep_best(spans)

