"""Identifying numbers: SSN, MRN, account, health plan, licence, device, vehicle, other IDs.

Two ways in: the cue word in front ("MRN: 1234567", "acct # 55-1234", "unit no. 882",
"ref # 7241983", "policy #kq42", "VIN 1HGCM82633A004352") decides the category; without a
cue only distinctive shapes count — SSN layout (3-2-4 with the SSA's validity rules), long
digit runs (7+ digits that are not phone-shaped) and letter+digit codes ("AB1234567").
Short "#" values stay: they are catheter gauges, tube sizes and "Tylenol #3" in clinical
text ("#20 IV", "#8 ETT", "#7.5", "#20fr"). Long digit runs that are compact HL7-style
timestamps ("20190423", "201904231139") are reported as DATE, so that date shifting rather
than ID replacement handles them.
"""

from __future__ import annotations

import re
from typing import Any

from pipelines.phi import clinical
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.registry import register
from pipelines.phi.scan import compile_words, finditer, grab, keep_best, words_before
from pipelines.phi.wordlists import category_phrases, word_set
from pipelines.spans import Category, Span

# cue word (lower-case, spaces collapsed) -> category
_CUES = category_phrases("identifier_cues")
_CUE_RE = "|".join(
    sorted((re.escape(c).replace(r"\ ", r"\s+") for c in _CUES), key=len, reverse=True)
)
# One re2 pass (edges checked in Python; re2 has no look-around):
# - cue + optional "number/no./#" + a value holding a digit, letters and hyphens allowed
#   around it ("AB-123456", "4471-XK-22", "00921-B");
# - the SSN layout 3-2-4 with one separator kind;
# - long codes: 7+ digits, or 1-3 capitals and 6+ digits.
_SCAN = compile_words(
    r"(?i:\b(?P<cue>" + _CUE_RE + r")\b\.?(?:\s*(?:number|num|nbr|no\.?|#|id))*"
    r"\s*[:#=]?\s*#?\s*)(?P<value>(?i:[a-z]{0,4}-?\d[a-z0-9\-/]*\d(?:-?[a-z]{1,3})?"
    r"|[a-z]{0,4}-?\d(?:-?[a-z]{1,3})?))\b"
    r"|(?P<ssn>(?P<area>\d{3})(?P<sep1>[- ])(?P<group>\d{2})(?P<sep2>[- ])(?P<serial>\d{4}))"
    r"|(?P<long>[A-Z]{1,3}\d{6,}|\d{7,})"
)
_G = dict(_SCAN.groupindex)  # numbers: re2 name lookups are slow
# A number sign before a code: "#kq42", "# 7241983" (but not "#20", "#8ETT", "#7.5").
_HASH = re.compile(r"#\s?([A-Za-z]{1,4}\d{2,}|\d{4,}[A-Za-z]?)(?![\w.])")
# Cue words that are everyday words too ("unit 3", "group B", "order 2") need "#"/"no."
# or a long value.
_WEAK_CUES = word_set("identifier_weak_cues")
_NUMBERED = re.compile(r"(?i)\b(?:no|num|number|id)\b")
_SPACES = re.compile(r"\s+")  # compiled once: module-level re.sub looks it up per call
_PHONE_WORDS = word_set("identifier_phone_words")


def _compact_timestamp(value: str) -> bool:
    """HL7-style dates and times written without separators: YYYYMMDD[hhmm[ss]]."""
    if len(value) not in (8, 12, 14) or not value.isdigit() or value[:2] not in ("19", "20"):
        return False
    month, day = int(value[4:6]), int(value[6:8])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return False
    return len(value) == 8 or (int(value[8:10]) < 24 and int(value[10:12]) < 60)


def _valid_ssn(area: str, group: str, serial: str) -> bool:
    """SSA rules: area not 000, 666 or 9xx; group not 00; serial not 0000."""
    return area not in {"000", "666"} and area[0] != "9" and group != "00" and serial != "0000"


@register("identifiers")
class IdentifierRecognizer(Recognizer):
    """SSN / MRN / account / plan / licence / device / vehicle / other IDs by cue and shape."""

    categories = frozenset(
        {
            Category.SSN, Category.MRN, Category.ACCOUNT, Category.HEALTH_PLAN,
            Category.LICENSE, Category.DEVICE, Category.VEHICLE, Category.ID, Category.DATE,
        }
    )  # fmt: skip

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        spans: list[Span] = []
        for m in finditer(doc, _SCAN):
            if grab(text, m, _G["value"]):
                span = self._cued(text, m)
            elif grab(text, m, _G["ssn"]):
                span = self._ssn(text, m)
            else:
                span = self._long(text, m.start(), m.end())
            if span is not None:
                spans.append(span)
        if "#" in text:
            for m in _HASH.finditer(text):
                before = words_before(text, m.start(), 1, 16)
                if before and before[0] in _PHONE_WORDS:
                    continue  # "Pager #12345" belongs to the phone recognizer
                if not clinical.unit_follows(text, m.end()):
                    spans.append(Span(m.start(1), m.end(1), Category.ID, 0.7, self.name))
        return keep_best(spans)

    def _cued(self, text: str, m: Any) -> Span | None:
        cue = grab(text, m, _G["cue"]).lower()
        if not cue.isalpha():  # "medical  record", "s/n": spaces collapsed
            cue = _SPACES.sub(" ", cue)
        value = grab(text, m, _G["value"])
        start, end = m.start(_G["value"]), m.end(_G["value"])
        category = _CUES.get(cue, Category.ID)
        digits = sum(map(str.isdigit, value))
        between = text[m.end(_G["cue"]) : start]
        numbered = any(c in between for c in "#:=") or bool(_NUMBERED.search(between))
        after = text[end : end + 2]
        if clinical.unit_follows(text, end) or (after[:1] == "." and after[1:].isdigit()):
            return None
        if cue == "no" and not between.startswith("."):
            return None  # "no." is a cue; "no 12345" is a negation before a number
        if cue == "id" and digits < 4:
            return None  # "ID:" heads the infectious-disease section of nursing notes
        # weak cues ("unit 3", "group 2", "order 5", "case 1") need a marker or a long value
        if digits < 4 and not (numbered and (digits >= 2 or value[:1].isalpha())):
            return None
        if cue in _WEAK_CUES and not numbered and (digits < 5 or not value.isalnum()):
            return None  # "unit 3", "hospital 8/20/02" (a date), "group 2-3"
        return Span(start, end, category, 0.9 if numbered else 0.75, self.name)

    def _ssn(self, text: str, m: Any) -> Span | None:
        start, end = m.start(), m.end()
        if start and (text[start - 1].isdigit() or text[start - 1] in "-/."):
            return None
        if text[end : end + 1] in ("-", "/") or text[end : end + 1].isdigit():
            return None
        if grab(text, m, _G["sep1"]) != grab(text, m, _G["sep2"]):
            return None
        if not _valid_ssn(
            grab(text, m, _G["area"]), grab(text, m, _G["group"]), grab(text, m, _G["serial"])
        ):
            return None
        return Span(
            start, end, Category.SSN, 0.9 if grab(text, m, _G["sep1"]) == "-" else 0.6, self.name
        )

    def _long(self, text: str, start: int, end: int) -> Span | None:
        if start and (text[start - 1].isalnum() or text[start - 1] in "-/.,"):
            return None
        if text[end : end + 1].isdigit() or (
            text[end : end + 1] == "." and text[end + 1 : end + 2].isdigit()
        ):
            return None
        if clinical.unit_follows(text, end):
            return None
        if _compact_timestamp(text[start:end]):
            return Span(start, end, Category.DATE, 0.7, self.name)  # 20190423 / 201904231139
        return Span(start, end, Category.ID, 0.6, self.name)
