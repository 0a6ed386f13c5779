"""A place told by its shape once a cue has said where to look (``locations``): an acronym
ending a clause ("at XYZ."), a saint's name ("to St. Mary's"), Title-case words ("from Good
Sam"), a short acronym or a rare word before a unit ("to XYZ ER"), a town before "area".
Each reads the word it is given and the few after it, nothing else of the note but its case."""

from __future__ import annotations

from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers.location_words import (
    CITY,
    CLAUSE_WORDS,
    GENERIC_MODIFIERS,
    HOSPITAL,
    NAMED_HEADS,
    NOT_NAMES,
    NOT_PLACES,
    SAINTS,
    UNIT_AFTER,
    UNITS,
    capital,
    ends_clause,
    next_char,
)
from pipelines.phi.wordlists import word_set
from pipelines.spans import Span


def facility_after_cue(words: tuple[Token, ...], j: int, text: str, mixed: bool) -> Span | None:
    """ "sent to XYZ", "transferred from XYZ ER", "to X 2" (a building and its floor)."""
    tok = words[j]
    low = tok.lower
    if low in NOT_NAMES or not capital(tok, mixed):
        return None
    nxt = words[j + 1] if j + 1 < len(words) else None
    if low in SAINTS and nxt is not None and _saint_pair(tok, nxt, text, mixed):
        return Span(tok.start, nxt.end, HOSPITAL, 0.7, "locations")  # "St. Mary's", "Mt Carmel"
    if low in lx.us_states():
        return None
    return _acronym_or_rare(words, j, text, mixed)


def _residence_kind(low: str) -> bool:
    """ "lives in ALF", "sent to SNF": a kind of residence of three letters or more (two
    letters may shorten a town's or a home's name)."""
    return len(low) >= 3 and low in word_set("residence_acronyms")


def _acronym_or_rare(words: tuple[Token, ...], j: int, text: str, mixed: bool) -> Span | None:
    """A short acronym or a rare word after a movement cue, told a facility by what follows
    it: a unit ("XYZ ER"), a floor ("X 2"), the end of the clause ("to XYZ.")."""
    tok = words[j]
    low = tok.lower
    if low in word_set("clinic_service_initialisms") or _residence_kind(low):
        return None  # "referred to HIV clinic", "goes to the BP clinic": a service
    unit, floor, clause = _followers(words, j, text)
    f = lx.zipf(low)
    short = 2 <= len(low) <= 5 and (tok.is_upper if mixed else f < 3.6)
    if short and (unit or floor or clause or (mixed and tok.is_upper)):
        if f >= 4.5 and not unit:
            return None
        return Span(tok.start, tok.end, HOSPITAL, 0.7, "locations")
    if _rare_facility(tok, f, mixed, unit, floor):
        return Span(tok.start, tok.end, HOSPITAL, 0.65, "locations")
    return None


def _rare_facility(tok: Token, f: float, mixed: bool, unit: bool, floor: bool) -> bool:
    """A rare word (of frequency ``f``) before a unit or a floor, or written as a name."""
    low = tok.lower
    if floor and f < 3.5 and len(low) > 3:
        return True
    return (
        f < 3.0
        and len(low) > 3
        and lx.name_score(low) < 1.0
        and (unit or floor or (mixed and tok.is_title))
    )


def _saint_pair(tok: Token, nxt: Token, text: str, mixed: bool) -> bool:
    """ "St. Mary's", "Mt Carmel": the saint's word and a name right after it."""
    gap = text[tok.end : nxt.start]
    return (nxt.is_title or not mixed) and len(gap) <= 2 and "\n" not in gap


def _followers(words: tuple[Token, ...], j: int, text: str) -> tuple[bool, bool, bool]:
    """What follows the word ``j``: a unit ("XYZ ER"), a floor number ("X 2"), the end of a
    clause ("to XYZ.", "to XYZ for cath")."""
    tok = words[j]
    nxt = words[j + 1] if j + 1 < len(words) else None
    gap = text[tok.end : nxt.start] if nxt is not None else ""
    joined = nxt is not None and "\n" not in gap
    tail = text[tok.end : tok.end + 4]
    unit = joined and gap.strip() == "" and nxt is not None and nxt.lower in UNIT_AFTER
    floor = tail[:1] == " " and tail[1:2].isdigit() and not tail[2:3].isalpha()
    clause = next_char(text, tok) in ".,;:)\n" or (
        joined and nxt is not None and nxt.lower in CLAUSE_WORDS
    )
    return unit, floor, clause


def saint(words: tuple[Token, ...], j: int, text: str, mixed: bool) -> Span | None:
    """ "to St. Mary's", "from Mt Carmel": a saint's or mount's name after a place preposition."""
    tok = words[j]
    if tok.lower not in SAINTS or j + 1 >= len(words):
        return None
    nxt = words[j + 1]
    gap = text[tok.end : nxt.start]
    if len(gap) > 2 or "\n" in gap or gap.strip() not in {"", "."}:
        return None
    if (mixed and not nxt.is_title) or lx.zipf(nxt.lower) >= 5.5 or nxt.lower in UNITS:
        return None
    base = nxt.lower.removesuffix("'s")
    if not (lx.is_first_name(base) or (mixed and tok.text[0].isupper())):
        return None  # "sr to st": sinus tachycardia, not a saint
    return Span(tok.start, nxt.end, HOSPITAL, 0.7, "locations")


def bare_acronym(
    words: tuple[Token, ...], j: int, text: str, mixed: bool, clause: bool = False
) -> Span | None:
    """ "at XYZ,", "leave XYZ.", "at XYZ (3/2)": an unknown acronym ending a clause (or before a
    bracket) after a place preposition (in capitals in a mixed-case note; a short unknown word
    in a one-case note). After a being-verb (``clause``) a clause word ends it too: "I'm in
    XYZ and ..."."""
    tok = words[j]
    low = tok.lower
    if not 2 <= len(low) <= 4 or low in UNITS or (mixed and not tok.is_upper):
        return None
    if low in NOT_PLACES:
        return None  # "murmur at LUSB", "seen at PT": a landmark, a service
    if not mixed and not _short_unknown(low):
        return None  # one-case note: a short unknown word only ("at xyz.", "the wxyz.")
    if low in lx.us_states() or lx.zipf(low) >= 3.5 or low in GENERIC_MODIFIERS:
        return None
    # "at XYZ (3/2)": a date or a remark in brackets ends the place too
    ends = ends_clause(text, tok) or next_char(text, tok) == "("
    if not ends and not (clause and _clause_word_after(words, j, text)):
        return None
    return Span(tok.start, tok.end, HOSPITAL, 0.55, "locations")


def _short_unknown(low: str) -> bool:
    """A word of a one-case note short and rare enough to be an acronym."""
    if len(low) <= 3 and lx.zipf(low) < 3.3:
        return True
    return len(low) == 4 and lx.zipf(low) < 1.0 and not lx.clinical_word(low)


def _clause_word_after(words: tuple[Token, ...], j: int, text: str) -> bool:
    nxt = words[j + 1] if j + 1 < len(words) else None
    return nxt is not None and nxt.lower in CLAUSE_WORDS and text[words[j].end : nxt.start] == " "


def _usable(tok: Token) -> bool:
    """A Title-case word that may name a place (not a unit, a head, a state or a country)."""
    low = tok.lower
    return (
        tok.is_title
        and low not in NOT_NAMES
        and lx.zipf(low) < 5.2
        and low not in lx.us_states()
        and low not in lx.countries()
    )


def _placeish(tok: Token) -> bool:
    return tok.lower in lx.us_cities() or lx.name_score(tok.lower) > -1.0


def title_place(words: tuple[Token, ...], j: int, text: str) -> Span | None:
    """ "at Holy Cross", "to Harbor": Title-case words after at/to/from, one of them a listed
    city or a surname (not a state, a country or a care unit)."""
    tok = words[j]
    if not _usable(tok):
        return None
    nxt = words[j + 1] if j + 1 < len(words) else None
    pair = nxt is not None and text[tok.end : nxt.start] == " " and _usable(nxt)
    if pair and nxt is not None and (_placeish(tok) or _placeish(nxt)):
        end = _named_head_after(words, j + 1, text)
        return Span(tok.start, words[end].end, HOSPITAL, 0.55, "locations")
    if _placeish(tok):
        end = _named_head_after(words, j, text)
        return Span(tok.start, words[end].end, HOSPITAL, 0.55, "locations")
    return None


def _named_head_after(words: tuple[Token, ...], k: int, text: str) -> int:
    """ "Gentle Lamb memorial": a name-part head written in lower case right after the
    name's last word ``k`` is part of the name; the index of the name's last word."""
    if k + 1 < len(words) and text[words[k].end : words[k + 1].start] == " ":
        nxt = words[k + 1]
        if nxt.lower in NAMED_HEADS and nxt.text.islower():
            return k + 1
    return k


def area(words: tuple[Token, ...], j: int, mixed: bool) -> Span | None:
    """ "in X area", "in X county": the word before is a place."""
    if j + 1 >= len(words) or words[j + 1].lower not in {"area", "county"}:
        return None
    tok = words[j]
    if (mixed and not tok.is_title) or tok.lower in UNITS or lx.zipf(tok.lower) >= 4.0:
        return None
    return Span(tok.start, tok.end, CITY, 0.6, "locations")


def title_run(words: tuple[Token, ...], j: int, text: str, mixed: bool) -> Span | None:
    """ "transferred from Good Sam": Title-case words after a movement cue in a mixed-case note."""
    if not mixed:
        return None
    k = _title_words_end(words, j, text)
    if k - j < 2 and not (k - j == 1 and lx.zipf(words[j].lower) < 3.0):
        return None
    if all(lx.zipf(w.lower) >= 5.0 for w in words[j:k]):
        return None
    end = _named_head_after(words, k - 1, text)
    return Span(words[j].start, words[end].end, HOSPITAL, 0.6, "locations")


def _title_words_end(words: tuple[Token, ...], j: int, text: str) -> int:
    """The end of the run of up to three Title-case words from ``j``, one space apart, none a
    unit, a describing word or a head."""
    k = j
    while k < len(words) and k - j < 3 and words[k].is_title:
        if words[k].lower in NOT_NAMES:
            break
        if k > j and text[words[k - 1].end : words[k].start] != " ":
            break
        k += 1
    return k


# Nouns after a saint's name that make it an eponym, not a hospital ("St. John's wort").
_EPONYM_NOUNS: Final = frozenset({"wort", "valve", "dance", "encephalitis"})


def saint_alone(
    words: tuple[Token, ...], j: int, text: str, upper: bool = False, lower: bool = False
) -> Span | None:
    """ "St. Hildegard has a bed", "a bed at St M.": a saint's name (a first name, or an
    initial and its period) names a hospital with no head noun or cue. In a note written in
    capitals (``upper``) "ST" is also sinus tachycardia or speech therapy ("ST MAY BE PAIN",
    "ST WILL SEE"): the name must be rarer, and an initial needs a place cue before "ST". In
    a lower-case note (``lower``) the name is a possessive or follows "st." ("st elizabeth's
    called"; "st changes" are an ECG's)."""
    if j + 1 >= len(words):
        return None
    tok, nxt = words[j], words[j + 1]
    gap = text[tok.end : nxt.start]
    if gap not in {" ", ".", ". "}:
        return None
    if lower:
        eponym = j + 2 < len(words) and words[j + 2].lower in _EPONYM_NOUNS
        return None if eponym else _lower_saint(words, j, text, gap)
    if len(nxt.text) == 1:  # an initial: "St M."
        return _saint_initial(words, j, text, upper)
    low = nxt.lower
    if not (nxt.is_upper if upper else nxt.is_title) or low in UNITS:
        return None
    if not _saint_rare(words, j + 1, text, gap, upper):
        return None
    if not lx.is_first_name(low.removesuffix("'s")):
        return None
    if j + 2 < len(words) and words[j + 2].lower in _EPONYM_NOUNS:
        return None
    return _span(tok, nxt, 0.6)


def _lower_saint(words: tuple[Token, ...], j: int, text: str, gap: str) -> Span | None:
    """ "st elizabeth's", "st. agnes" in a lower-case note: a first name written lower-case
    after "st" or "saint", a possessive, after a period or a saint's name for sure."""
    tok, nxt = words[j], words[j + 1]
    low = nxt.lower
    if not nxt.text.islower():
        return None
    if not (low.endswith("'s") or "." in gap or _saint_name(words, j + 1, text)):
        return None
    name = low.removesuffix("'s")
    if not lx.is_first_name(name) or lx.zipf(name) >= 5.0 or low in UNITS:
        return None
    return _span(tok, nxt, 0.6)


def _saint_rare(words: tuple[Token, ...], k: int, text: str, gap: str, upper: bool) -> bool:
    """The name at ``k`` after "St" is rare enough for a saint's (in capitals, see
    ``_upper_saint_zipf``, or a saint's name for sure: ``_saint_name``)."""
    low = words[k].lower
    if not upper:
        return lx.zipf(low) < 5.5
    return lx.zipf(low) < _upper_saint_zipf(gap, low) or _saint_name(words, k, text)


_RHYTHM_AFTER: Final = frozenset({"to", "from", "up", "down", "in", "into", "at", "by"})


def _saint_name(words: tuple[Token, ...], k: int, text: str) -> bool:
    """The word at ``k`` after an unmarked "st" names a saint: a first name English hardly
    uses, or one far more a name than a word ("st bernadette", "ST LUKE HAS A BED"; not "st
    elevation", "ST MAY BE", "st rose to 130s": a rhythm's word, a verb, a move after)."""
    low = words[k].lower
    if not lx.is_first_name(low) or lx.zipf(low) >= 5.0:
        return False
    nxt = text[words[k].end : words[k].end + 2].strip()
    if nxt[:1].isdigit() or (k + 1 < len(words) and words[k + 1].lower in _RHYTHM_AFTER):
        return False
    return lx.zipf(low) < 3.5 or lx.name_score(low) >= 1.0


def _saint_initial(words: tuple[Token, ...], j: int, text: str, upper: bool) -> Span | None:
    """ "bed at St M.": a saint's initial and its period (in capitals, after a place cue)."""
    nxt = words[j + 1]
    cued = j > 0 and words[j - 1].lower in _SAINT_CUES
    if not nxt.is_upper or (nxt.text == "T" and _t_wave(words, j + 1)):
        return None  # "ST. T waves"
    if text[nxt.end : nxt.end + 1] != "." and not (cued and "." in text[words[j].end : nxt.start]):
        return None  # "at St. Q for rehab": the period after "St", a place cue before
    if upper and not cued:
        return None
    return _span(words[j], nxt, 0.6)


def _t_wave(words: tuple[Token, ...], k: int) -> bool:
    """ "ST. T waves", "ST T-WAVE": the letter after "ST" is an ECG's T wave."""
    return k + 1 < len(words) and words[k + 1].lower in {"wave", "waves", "wv", "abn", "changes"}


# Place prepositions before "ST M." in a note written in capitals.
_SAINT_CUES: Final = frozenset({"at", "to", "from", "in"})


def _upper_saint_zipf(gap: str, low: str) -> float:
    """The word frequency a saint's name stays under in capitals: "ST. AGNES", "ST AGNES'S";
    without the period or the "'s" only a rarer name ("ST ROSE TO 130" is a rhythm)."""
    return 5.0 if "." in gap or low.endswith("'s") else 4.0


def _span(first: Token, last: Token, confidence: float) -> Span:
    return Span(first.start, last.end, HOSPITAL, confidence, "locations")
