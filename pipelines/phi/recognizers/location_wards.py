"""Wards and buildings told by their floor (``locations``): "to Xyzward 2", "Plan: Xyzward 2",
"transferred to 209 Xyzward.", "XYZWARD3" (glued to its floor). Each reads the word it is
given and what follows it up to the next word."""

from __future__ import annotations

from pipelines.phi import lexicons as lx
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers.location_words import (
    DOSE_AFTER,
    HOSPITAL,
    UNITS,
    capital,
    ends_clause,
)
from pipelines.spans import Span


def building_floor(
    words: tuple[Token, ...], j: int, text: str, mixed: bool, cued: bool = False
) -> Span | None:
    """ "to X 2", "on X 2": a rare word and a one-digit floor (not a dose: "lasix 2 mg")."""
    tok = words[j]
    low = tok.lower
    if len(low) < 5 or not _floor_after(words, j, text):  # the word's length first: cheaper
        return None
    if low in UNITS or lx.zipf(low) >= 3.0 or lx.clinical_word(low):
        return None
    if lx.name_score(low) >= 1.0 and not cued:
        return None  # "Smith 2" alone; "to Smith 2" names a building after its donor
    if not capital(tok, mixed):
        return None
    return Span(tok.start, tok.end, HOSPITAL, 0.6, "locations")


def _floor_after(words: tuple[Token, ...], j: int, text: str) -> bool:
    """A one-digit number after the word ``j`` (one or two spaces), no decimal, fraction, time
    or dose: "X 2", not "X 2.5", "X 2/3", "X 2 mg"."""
    tok = words[j]
    pad = 2 if text[tok.end : tok.end + 2] == "  " else 1
    tail = text[tok.end + pad - 1 : tok.end + pad + 2]
    if not (tail[:1] == " " and tail[1:2].isdigit() and not tail[2:3].isalnum()):
        return False
    if tail[2:3] in {".", "/", ":"} and text[tok.end + 3 : tok.end + 4].isdigit():
        return False  # "2.5", "2/3", "2:30"
    k = j + 1
    return not (k < len(words) and words[k].start - tok.end <= 5 and words[k].lower in DOSE_AFTER)


def ward_after_room(words: tuple[Token, ...], j: int, text: str) -> Span | None:
    """ "transferred to 209 Xyz.": a rare word after a room number names a ward or building."""
    tok = words[j]
    low = tok.lower
    if low in UNITS or len(low) < 4 or lx.zipf(low) >= 2.5 or lx.clinical_word(low):
        return None
    if low in DOSE_AFTER or low.removesuffix("'s").removesuffix("s") in DOSE_AFTER:
        return None
    if not ends_clause(text, tok):
        return None
    return Span(tok.start, tok.end, HOSPITAL, 0.6, "locations")


def ward_glued_to_digit(tok: Token, text: str, mixed: bool) -> Span | None:
    """ "to Xyzward3": a rare word glued to a one- or two-digit floor or bed number."""
    if not _floor_digits(text, tok.end):
        return None
    low = tok.lower
    if len(low) < 5 or lx.zipf(low) >= 2.5 or low in UNITS or lx.clinical_word(low):
        return None
    if lx.near_english(low) or lx.is_first_name(low):
        return None
    if mixed and not (tok.is_title or tok.is_upper or tok.text.islower()):
        return None
    return Span(tok.start, tok.end, HOSPITAL, 0.6, "locations")


def _floor_digits(text: str, end: int) -> bool:
    """One or two digits at ``end``, then no letter, digit or number mark ("./:-%")."""
    if not text[end : end + 1].isdigit():
        return False
    k = end
    while k < len(text) and text[k].isdigit():
        k += 1
    return k - end <= 2 and not (k < len(text) and (text[k].isalnum() or text[k] in "./:-%"))
