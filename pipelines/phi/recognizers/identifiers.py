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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from pipelines.phi import clinical
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.passes import declare
from pipelines.phi.patterns import Found, PatternPass, PatternPasses
from pipelines.phi.recognizers.date_numeric import DATE_CUES, calendar_md, cue_before
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
# - cue + optional "number/no./#" + optional linking verb ("is", "was") + a value holding
#   a digit, letters and hyphens allowed around it ("AB-123456", "4471-XK-22", "00921-B");
# - the SSN layout 3-2-4 with one separator kind;
# - long codes: 7+ digits, or 1-3 capitals and 6+ digits;
# - payment card numbers in digit groups, one separator kind, valid by the Luhn check;
# - dashed codes: digit groups 3-3-3 or 4-4-4 ("4021-7730-5519"), capitals-dash-digits
#   ("ZZ-402913").
# what a number is of, between its cue and the value: "for his car", "on the truck"
# (no bounded repeat here: "{2,12}" would multiply the scan's automaton states)
_FILLER = r"\s+(?:for|on|of)(?:\s+(?:the|his|her|their|a))?\s+[a-z]+"
_SCAN = compile_words(
    r"(?i:\b(?P<cue>" + _CUE_RE + r")\b\.?"
    # a number word or sign, maybe then a short phrase on what the number is of ("acct no. for
    # copay"); or that phrase closed by a colon, a sign or "is" ("VIN on the truck is")
    r"(?:(?:\s*(?:number|num|nbr|no\.?|#|id|registration))+(?:" + _FILLER + r")?"
    r"|" + _FILLER + r"\s*(?::|=|#|\bis\b|\bwas\b))?"
    # a linking verb: "his MRN is ZZ-402913", "MRN on file is ...", "acct noted as ..."
    r"(?:\s+(?:is|was|reads|(?:on\s+file|listed|noted|given)\s+(?:is|as)))?"
    # a part of the number: "SSN last 4: 5519", "ss# ending in 5519"
    r"(?:\s+(?:last\s+(?:4|four)(?:\s+digits)?|ending(?:\s+in)?))?"
    r"\s*[:#=]?\s*#?\s*)(?P<value>(?i:\d{3}[ \t]\d{2}[ \t]\d{4}|\d{3}[ \t]\d{3}[ \t]\d{3}"
    # dotted digit groups ("402.177.3"); capitals, a blank, then digits ("XYZ 402177301")
    r"|\d{3}\.\d{2,4}\.\d{1,4}|(?-i:[A-Z]{2,4})[ \t]\d{6,}"
    # card numbers in blank groups: 4-4-4-4(-3), 4-6-5, 6-13
    r"|\d{4}[ \t]\d{4}[ \t]\d{4}[ \t]\d{4}(?:[ \t]\d{3})?|\d{4}[ \t]\d{6}[ \t]\d{5}|\d{6}[ \t]\d{13}"
    r"|\d{4}[ \t]\d{4}[ \t]\d{4}"  # digit groups set apart by blanks: "402 77 3551"
    r"|[a-z]{0,4}-?\d[a-z0-9\-/]*\d(?:-?[a-z]{1,3})?"
    r"|[a-z]{0,4}-?\d(?:-?[a-z]{1,3})?))\b"
    r"|(?P<ssn>(?P<area>\d{3})(?P<sep1>[- ])(?P<group>\d{2})(?P<sep2>[- ])(?P<serial>\d{4}))"
    # payment card numbers in groups: 4-4-4-4 ("4111 1111 1111 1111"), 4-6-5, and the
    # 19-digit 4-4-4-4-3 and 6-13
    r"|(?P<card>\d{4}[ -]\d{4}[ -]\d{4}[ -]\d{4}(?:[ -]\d{3})?|\d{4}[ -]\d{6}[ -]\d{5}"
    r"|\d{6}[ -]\d{13})"
    r"|(?P<long>[A-Z]{1,3}\d{6,}|\d{7,})"
    r"|(?P<grouped>\d{3}-\d{3}-\d{3}|\d{4}-\d{4}-\d{4}|[A-Z]{1,3}-\d{6,})"
)
_G = dict(_SCAN.groupindex)  # numbers: re2 name lookups are slow
_CUE, _VALUE = _G["cue"], _G["value"]
# A number sign before a code: "#kq42", "# 7241983" (but not "#20", "#8ETT", "#7.5").
# A code at a sentence's end keeps its number sign ("Requisition # 402177."); a code that
# goes on after a dash is a grouped one ("# 4021-7730-5519").
_HASH = re.compile(r"#\s?([A-Za-z]{1,4}\d{2,}|\d{4,}[A-Za-z]?)(?!\w|[.\-/]\w)")
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


def _cued_mmddyyyy(text: str, start: int, end: int) -> bool:
    """Eight digits MMDDYYYY after a date cue ("DOB 07151988"): a date, as the dates
    recognizer reads it."""
    value = text[start:end]
    if len(value) != 8 or value[4:6] not in ("19", "20"):
        return False
    if not calendar_md(int(value[:2]), int(value[2:4])):
        return False
    before = cue_before(text, start, 20)
    return bool(before) and before[0] in DATE_CUES


@dataclass(slots=True)
class _Note:
    text: str


def _valid_ssn(area: str, group: str, serial: str) -> bool:
    """SSA rules: area not 000, 666 or 9xx; group not 00; serial not 0000."""
    return area not in {"000", "666"} and area[0] != "9" and group != "00" and serial != "0000"


@dataclass(frozen=True, slots=True)
class _Cued:
    """A value after an identifier cue, as the cue vetoes see it."""

    cue: str  # lower-case, spaces collapsed
    value: str
    between: str  # the text between the cue and the value
    digits: int
    numbered: bool  # a "#", ":", "=", "no", "number" or "id" between


def _not_a_value(text: str, end: int, c: _Cued) -> bool:
    """A quantity ("MRN 12 mg") or a decimal ("no. 12.5")."""
    after = text[end : end + 2]
    return clinical.unit_follows(text, end) or (after[:1] == "." and after[1:].isdigit())


def _negation(text: str, end: int, c: _Cued) -> bool:
    """ "no." is a cue; "no 12345" is a negation before a number."""
    return c.cue == "no" and not c.between.startswith(".")


def _id_section(text: str, end: int, c: _Cued) -> bool:
    """ "ID:" heads the infectious-disease section of nursing notes."""
    return c.cue == "id" and c.digits < 4


def _short_value(text: str, end: int, c: _Cued) -> bool:
    """Fewer than four digits need a marker and two digits or a letter first."""
    return c.digits < 4 and not (c.numbered and (c.digits >= 2 or c.value[:1].isalpha()))


def _weak_cue(text: str, end: int, c: _Cued) -> bool:
    """Weak cues ("unit 3", "hospital 8/20/02", "group 2-3") need a marker, a long value or
    a code ("policy ZZ-402913", "ID 4021-7730-5519": six digits or more, no slash, no
    blank) or a card number ("card 4111 1111 1111 1111 110")."""
    if c.cue not in _WEAK_CUES or c.numbered:
        return False
    code = c.digits >= 6 and "/" not in c.value and " " not in c.value  # "unit 120 130 140"
    card = (c.cue == "card" or _CUES.get(c.cue) is Category.ACCOUNT) and _card_digits(c.value)
    return not code and (c.digits < 5 or not c.value.isalnum()) and not card


def _card_digits(value: str) -> bool:
    """A card number in any grouping: 13 to 19 digits, a network's first digit (2-6), a valid
    Luhn check digit ("card 4111 1111 1111 1111 110")."""
    digits = value.replace(" ", "").replace("\t", "").replace("-", "")
    return (
        digits.isdigit() and 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn_valid(digits)
    )


def _intake(text: str, end: int, c: _Cued) -> bool:
    """ "Ins: 1200, out: 800": fluids in (intake), no insurance number: "ins" before a volume
    of four digits or fewer, or before an "out" that follows."""
    if c.cue != "ins" or not c.value.isdigit():
        return False
    return len(c.value) <= 4 or "out" in text[end : end + 24].lower()


# The vetoes of a cued value, by name, in the order they are asked.
CUE_VETOES: Final[tuple[tuple[str, Callable[[str, int, _Cued], bool]], ...]] = (
    ("not_a_value", _not_a_value),
    ("negation", _negation),
    ("id_section", _id_section),
    ("short_value", _short_value),
    ("weak_cue", _weak_cue),
    ("intake", _intake),
)


def _cued(note: _Note, m: Any) -> Found | None:
    """A value after an identifier cue ("MRN: 1234567", "acct # 55-1234"); the cue decides
    the category."""
    text = note.text
    cue = grab(text, m, _CUE).lower()
    if not cue.isalpha():  # "medical  record", "s/n": spaces collapsed
        cue = _SPACES.sub(" ", cue)
    value = grab(text, m, _VALUE)
    start, end = m.start(_VALUE), m.end(_VALUE)
    between = text[m.end(_CUE) : start]
    numbered = any(c in between for c in "#:=") or bool(_NUMBERED.search(between))
    found = _Cued(cue, value, between, sum(map(str.isdigit, value)), numbered)
    if any(veto(text, end, found) for _, veto in CUE_VETOES):
        return None
    category = _CUES.get(cue, Category.ID)
    if cue == "card" and _card_digits(value):
        category = Category.ACCOUNT  # "card 4111 ...": a payment card, not a member card
    return (start, _hyphen_break(text, end), category, 0.9 if numbered else 0.75)


def _hyphen_break(text: str, end: int) -> int:
    """The end of a cued value that a hyphen and a line break split ("MRN 4021-\n773"): its
    digits on the next line are its end."""
    if text[end : end + 2] != "-\n":
        return end
    k = end + 2
    while k < len(text) and text[k].isdigit():
        k += 1
    return k if k > end + 2 and not text[k : k + 1].isalpha() else end


def _ssn(note: _Note, m: Any) -> Found | None:
    """The SSN layout 3-2-4, one separator kind, valid by the SSA's rules."""
    text = note.text
    start, end = m.start(), m.end()
    if start and (text[start - 1].isdigit() or text[start - 1] in "-/."):
        return None
    if text[end : end + 1] in ("-", "/") or text[end : end + 1].isdigit():
        return None
    sep = grab(text, m, _G["sep1"])
    if sep != grab(text, m, _G["sep2"]):
        return None
    if not _valid_ssn(*(grab(text, m, _G[name]) for name in ("area", "group", "serial"))):
        return None
    return (start, end, Category.SSN, 0.9 if sep == "-" else 0.6)


def _long(note: _Note, m: Any) -> Found | None:
    """Long codes with no cue: 7+ digits, or 1-3 capitals and 6+ digits; a compact timestamp
    ("20190423", "201904231139") is a DATE, a card number in one run (15 to 19 digits, Luhn
    valid) an ACCOUNT."""
    text, start, end = note.text, m.start(), m.end()
    if start and (text[start - 1].isalnum() or text[start - 1] in "-/.,+~<>"):
        return None  # "+1250000": a signed value, no code
    if text[end : end + 1].isdigit() or (
        text[end : end + 1] == "." and text[end + 1 : end + 2].isdigit()
    ):
        return None
    if clinical.unit_follows(text, end):
        return None
    if _compact_timestamp(text[start:end]) or _cued_mmddyyyy(text, start, end):
        return (start, end, Category.DATE, 0.7)
    if end - start >= 15 and _card_digits(text[start:end]):
        return (start, end, Category.ACCOUNT, 0.7)  # a card number written in one run
    return (start, end, Category.ID, 0.6)


def _stands_alone(text: str, start: int, end: int) -> bool:
    """Whether a digit code at ``start:end`` is whole: no word or number before it, and no
    digit (or a separator then a digit) after it, so it is no part of a longer code."""
    if start and (text[start - 1].isalnum() or text[start - 1] in "-/.,"):
        return False
    nxt = text[end : end + 2]
    return not (nxt[:1].isdigit() or (nxt[:1] in ("-", ".", "/") and nxt[1:].isdigit()))


def _grouped(note: _Note, m: Any) -> Found | None:
    """Dashed codes with no cue: 3-3-3 or 4-4-4 digit groups ("4021-7730-5519") and capitals,
    a dash and 6+ digits ("ZZ-402913"); not a number run of a vital ("HR 100-110-120")."""
    text, start, end = note.text, m.start(), m.end()
    if not _stands_alone(text, start, end):
        return None
    if clinical.unit_follows(text, end) or clinical.vital_before(text, start):
        return None
    return (start, end, Category.ID, 0.6)


def luhn_valid(digits: str) -> bool:
    """The Luhn check digit of payment card numbers (ISO/IEC 7812): every second digit from
    the right doubled (less 9 above 9), the sum a multiple of ten."""
    total = 0
    for k, ch in enumerate(reversed(digits)):
        d = int(ch)
        if k % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card(note: _Note, m: Any) -> Found | None:
    """A payment card number with no cue: 4-4-4-4, 4-6-5, 4-4-4-4-3 or 6-13 digit groups
    ("6011 0000 0000 0000 004"), one separator kind,
    a card network's first digit (2-6) and a valid Luhn check digit ("4111 1111 1111 1111");
    not clock times in a row ("2000 2200 0000 0200") nor a number that goes on."""
    text, start, end = note.text, m.start(), m.end()
    if not _stands_alone(text, start, end):
        return None
    value = text[start:end]
    groups = value.replace("-", " ").split(" ")
    if len({ch for ch in value if not ch.isdigit()}) != 1:
        return None  # "4111-1111 1111-1111": two separator kinds
    digits = "".join(groups)
    if digits[0] not in "23456" or not luhn_valid(digits):
        return None
    if all(clinical.is_hhmm(g) for g in groups):
        return None
    return (start, end, Category.ACCOUNT, 0.85)


def _hashed(note: _Note, m: Any) -> Found | None:
    """A number sign before a code: "#kq42", "# 7241983" (not "Pager #12345": a phone)."""
    text = note.text
    before = words_before(text, m.start(), 1, 16)
    if before and before[0] in _PHONE_WORDS:
        return None
    if clinical.unit_follows(text, m.end()):
        return None
    return (m.start(1), m.end(1), Category.ID, 0.7)


PASSES: Final = declare(
    PatternPasses[_Note](
        "identifiers",
        [
            PatternPass("identifiers.cued", _cued, "value", "codes"),
            PatternPass("identifiers.ssn", _ssn, "ssn", "codes"),
            PatternPass("identifiers.card", _card, "card", "codes"),
            PatternPass("identifiers.grouped", _grouped, "grouped", "codes"),
            PatternPass("identifiers.long", _long, "", "codes"),
            PatternPass("identifiers.hash", _hashed, "", "hash"),
        ],
    )
)
_TABLE = PASSES.table("codes", _G)
_HASH_TABLE = PASSES.table("hash", {})


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
        note = _Note(text)
        for m in finditer(doc, _SCAN):
            PASSES.judge(_TABLE, note, text, m, spans)
        if "#" in text:
            for m in _HASH.finditer(text):
                PASSES.judge(_HASH_TABLE, note, text, m, spans)
        return keep_best(spans)
