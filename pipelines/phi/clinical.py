"""Clinical-number exclusions shared by the date, phone, age and identifier recognizers.

Nursing notes are full of numbers that look like PHI by shape: "BP 120/80", "PSV 10/5",
"pain 7/10", "GCS 3/15", "5/5 strength", "1/2 NS", "sats 95-97", "0800", "2130". These
helpers judge a numeric candidate by its neighbourhood (the cue word before it, the unit
after it) so that recognizers keep clinical values and only report identifiers. The word
lists are clinical vocabulary written by hand (abbreviations of vitals, ventilator settings
and units) — no library ships them — never strings from the PHI of any corpus.
"""

from __future__ import annotations

import re
from typing import Final

from pipelines.phi.scan import next_char, prev_char, words_after, words_before
from pipelines.phi.wordlists import word_set

# Cue words after which a number is a measurement (vitals, haemodynamics, ventilator, labs).
VITAL_CUES = word_set("vital_cues")

# Words after a number that make it a quantity, not an identifier or a date.
UNIT_WORDS = word_set("unit_words")

PAIN_CUES = word_set("pain_cues")
# Ventilator settings come in lists ("SIMV/PS, 500x10, 40%, & 5/8", "BIPAP 10/5 50%").
VENT_CUES = word_set("vent_cues")

_VENT_AFTER = word_set("vent_after")
# Cues whose values are written "a/b" with both parts small enough to pass for a month/day:
# ventilator settings, haemodynamic pairs, pupils, lung-field fractions, strength, scores.
# A lab name before "7/22" ("WBC 16.0 7/22", "HCT 7/22 was 30") does not make it a value.
SLASH_VALUE_CUES = VENT_CUES | word_set("slash_value_cues")

GCS_CUES = frozenset({"gcs", "glasgow", "coma", "score", "scale"})

_GAP = re.compile(r"[ \t]*")
_LINE_OR_SENTENCE = re.compile(r"\n|\. ")
_TIME_AFTER = re.compile(r"\s*(?:a\.?m\.?|p\.?m\.?|hrs?\b|h\b|o'?clock)", re.I)


# The letter-led word of ``scan.words_after`` (a word that starts with an ASCII letter)
_ASCII_WORD = re.compile(r"[A-Za-z](?:[A-Za-z0-9'/]*[A-Za-z0-9])?")


def unit_follows(text: str, end: int) -> bool:
    """True when a unit / quantity word or ``%`` follows the number ending at ``end``.

    Asked for most numeric candidates: after the blanks, a ``%`` or an ASCII letter is read
    on the spot (that letter starts the first word ``words_after`` would give); anything
    else but a letter means no unit; other letters take ``_unit_follows_plain``."""
    gap = _GAP.match(text, end)
    pos = gap.end() if gap else end
    ch = text[pos : pos + 1]
    if ch == "%":
        return True
    if not ch.isalpha():
        return False
    if not ch.isascii():
        return _unit_follows_plain(text, end)
    word = _ASCII_WORD.match(text, pos, pos + 16)
    return word is not None and word.group().lower() in UNIT_WORDS


def _unit_follows_plain(text: str, end: int) -> bool:
    """``unit_follows`` as defined: the next word, on this line, within 16 characters."""
    ch = next_char(text, end)
    if ch == "%":
        return True
    gap = _GAP.match(text, end)
    after = words_after(text, gap.end() if gap else end, 1, 16)
    return (
        bool(after)
        and text[gap.end() if gap else end : gap.end() + 1 if gap else end + 1].isalpha()
        and after[0] in UNIT_WORDS
    )


# Units an "a/b" pair cannot carry: a temperature is one number ("seen 4/19 c chest pain":
# "c" is "with"), and "gm" before a stain result is the Gram stain ("cx 4/19 gm neg rods").
TEMPERATURE_UNITS = frozenset({"c", "f", "deg", "degrees"})
_GRAM = frozenset({"g", "gm"})
_GRAM_STAIN_AFTER = frozenset({"neg", "pos", "negative", "positive", "stain", "variable"})


def pair_unit_follows(text: str, end: int) -> bool:
    """``unit_follows`` for a pair of numbers ("2/4 mg"), when the unit fits a pair: not a
    temperature, and "gm" not the Gram stain."""
    if not unit_follows(text, end):
        return False
    after = words_after(text, end, 2, 24)
    if not after or after[0] in TEMPERATURE_UNITS:
        return not after
    if len(after) > 1 and (_antecubital(after, 1) or _side_of_body(after)):
        return False  # "4/12 L AC", "4/19 l arm": the left side of the body, no litres
    return not (after[0] in _GRAM and len(after) > 1 and after[1] in _GRAM_STAIN_AFTER)


_CONNECTORS = word_set("vital_connectors")


# "L AC", "rt AC": the antecubital fossa (an IV site), not the assist-control vent mode.
_SIDES = frozenset({"l", "r", "lt", "rt", "left", "right", "bilat", "bilateral"})


_BODY: Final = word_set("exclusion_body")


def _side_of_body(words: list[str]) -> bool:
    """ "L arm", "r hand": a side and a body part, not litres."""
    return words[0] in {"l", "r"} and words[1] in _BODY


def _antecubital(words: list[str], k: int) -> bool:
    return words[k] == "ac" and k > 0 and words[k - 1] in _SIDES


def iv_site_before(text: str, start: int) -> bool:
    """An IV site right before a number: "IV started L AC 4/4" (the antecubital fossa, where a
    line is placed and dated; no strength nor score is written after it)."""
    words = words_before(text, start, 2, 12)
    return len(words) == 2 and _antecubital(words, 1)


def iv_site_after(text: str, end: int) -> bool:
    """An IV site right after a number: "IV placed on 4/4 L AC"."""
    words = words_after(text, end, 2, 12)
    return len(words) == 2 and _antecubital(words, 1)


def vital_before(text: str, start: int, count: int = 2, cues: frozenset[str] = VITAL_CUES) -> bool:
    """True when the number at ``start`` is the value slot of a vital / lab / vent cue:
    the nearest word is a cue, or only connectors ("to", "of", "now") lie between. A number
    in between ("WBC 16.0 8/22") fills that slot, so the candidate is not the measurement."""
    lo = max(0, start - 28)
    stop = max(text.rfind(". ", lo, start), text.rfind(";", lo, start))
    if stop >= 0:
        lo = stop + 1  # a sentence break ends the cue's reach ("... O2. 10/1 went")
    words = words_before(text, start, count + 2, start - lo)  # and the word before the first
    for k in range(len(words) - 1, max(0, len(words) - count - 1) - 1, -1):
        if words[k] in cues:
            return not _antecubital(words, k)
        if words[k] not in _CONNECTORS:
            return False
    return False


def _vent_cue(words: list[str], k: int) -> bool:
    """Is ``words[k]`` (or a part of "SIMV/PS") a ventilator cue where it stands?"""
    if _antecubital(words, k):
        return False
    return any(part in VENT_CUES for part in words[k].split("/"))


def vent_context(text: str, start: int, end: int) -> bool:
    """True when ventilator / haemodynamic vocabulary surrounds the candidate on its line."""
    after = _LINE_OR_SENTENCE.split(text[end : end + 16], maxsplit=1)[0]
    percent_near = "%" in text[max(0, start - 16) : start] or "%" in after
    if not percent_near and prev_char(text, start) == "(":
        return False  # "CO/CI/SVR (10/17 0500)": a date in brackets after the label
    count = 8 if percent_near else 1
    before = words_before(text, start, count + 1, 56)  # and the word before the first
    if any(_vent_cue(before, k) for k in range(max(0, len(before) - count), len(before))):
        return True
    return any(w in _VENT_AFTER for w in words_after(text, end, 2, 20))


_CLAUSE_BREAK = re.compile(r"[.;](?:\s|$)")


def vent_cue_near(
    text: str, start: int, count: int = 4, date_cues: frozenset[str] = frozenset()
) -> bool:
    """A ventilator cue a few words before, in the same clause, the number in the value slot
    of a change ("to", "at", "now" right before it), and no number and no date cue
    (``date_cues``) between: "PS raised to 11/8" is a setting; "PS trial since 4/19",
    "CPAP trial 4/19" and "PS 10 then to 4/19" are not."""
    nearest = words_before(text, start, 1, 12)
    if not nearest or nearest[0] not in _CONNECTORS:
        return False  # (the common case, asked cheaply first)
    line = text.rfind("\n", 0, start) + 1
    lo = max(line, start - 48)
    for brk in _CLAUSE_BREAK.finditer(text, lo, start):
        lo = brk.end()  # the last clause break before the number
    words = words_before(text, start, count + 1, start - lo)  # and the word before the first
    if not words or words[-1] not in _CONNECTORS:
        return False  # the value slot of a change: "raised to", "PS now"; not "PS trial 4/19"
    for k in range(len(words) - 1, max(0, len(words) - count) - 1, -1):
        if words[k] in date_cues or words[k][:1].isdigit():
            return False
        if _vent_cue(words, k):
            return True
    return False


def time_follows(text: str, end: int) -> bool:
    return _TIME_AFTER.match(text, end) is not None


def is_hhmm(value: str) -> bool:
    """A 4-digit 24-hour clock time (0000-2400) such as "0800" or "2130"."""
    if len(value) != 4 or not value.isdigit():
        return False
    hh, mm = int(value[:2]), int(value[2:])
    return (hh < 24 and mm < 60) or value == "2400"


def is_fraction(num: int, den: int) -> bool:
    """Small proper fractions ("1/2 NS", "2/3 of", "3/4 up") rather than dates."""
    return 0 < num < den <= 4


def is_score(num: int, den: int, text: str, start: int, end: int) -> bool:
    """Scores and strengths: "pain 7/10", "GCS 3/15", "5/5 strength", "4/4 bottles"."""
    if den not in (10, 15) and not (num == den and num <= 5):
        return False
    before = words_before(text, start, 3, 30)
    after = words_after(text, end, 1, 16)
    if num == den and num <= 5:
        return True  # "5/5 strength", "4/4 bottles", "2/2 pupils"
    cues = GCS_CUES if den == 15 else PAIN_CUES
    return any(w in cues for w in before) or bool(after and after[0] in cues)


def clinical_number(text: str, start: int, end: int) -> bool:
    """The generic check: a measurement cue before or a unit after the candidate."""
    return vital_before(text, start) or unit_follows(text, end)
