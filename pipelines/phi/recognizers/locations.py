"""Hospitals, other facilities and cities named in the narrative.

Why by context: facility names are mostly invented or local ("X Memorial", "X rehab", an
acronym like "XYZ ER"), so no list can hold them; what gives them away is the facility head
after them ("Hospital", "Medical Center", "Rehab", "Nursing Home", "campus") or a movement
cue before them ("transferred from", "sent to", "lives in"). Cities come from the zipcodes
database, but only after such a cue, since many city names are English words. States and
countries alone are not identifying under Safe Harbor; they are kept unless part of a name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from itertools import compress
from operator import attrgetter
from typing import Final, cast

from pipelines.memo import Memo
from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers import facility_phrases as fp
from pipelines.phi.registry import register
from pipelines.phi.scan import compile_words, finditer
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category, Span

_lower = attrgetter("lower")

HOSPITAL, CITY, OTHER = (
    Category.LOCATION_HOSPITAL,
    Category.LOCATION_CITY,
    Category.LOCATION_OTHER,
)


# Facility heads that close a name and are not part of the PHI ("Ashcott [Hospital]").
GENERIC_HEADS: Final = word_set("facility_heads_generic")
# Strong heads: a hospital for sure, so any non-function word before them is its name.
STRONG_HEADS: Final = word_set("facility_heads_strong")
# Words between a name and its head ("X [Medical] Center", "X [Nursing] Home").
HEAD_FILLERS: Final = word_set("facility_head_fillers")
# Heads that are part of the facility's name ("X Memorial", "X Health", "X House NH").
NAMED_HEADS: Final = word_set("facility_heads_named")
# Movement / residence cues before a place ("transferred to X", "lives in X").
MOVE_VERBS: Final = word_set("place_move_verbs")
# Verbs of going back or commuting: a city may follow, but so may a ventilator mode
# ("returned to SIMV"), so only listed cities count after them.
RETURN_VERBS: Final = word_set("place_return_verbs")
RESIDENCE_VERBS: Final = word_set("place_residence_words")
# Who comes from a place ("daughter from X", "he is from X").
PEOPLE: Final = word_set("place_people")
# Care units and departments: where a patient goes inside a hospital, not a facility name.
# Written by hand: generic hospital vocabulary that no package lists.
UNITS: Final = word_set("care_units")
# Adjectives that describe rather than name a hospital ("outside hospital").
GENERIC_MODIFIERS: Final = word_set("facility_generic_modifiers")
_FUNCTION_ZIPF = 5.6  # function words ("to", "from", "the", "at") are more frequent than this


# Staff of a place: "XYZ nurse", "XYZ attorneys" make the acronym before them a hospital.
_STAFF: Final = word_set("place_staff")
# Acronyms of people and tests, never places.
# ... and clinical services, whose staff are people too ("pulm team", "nsg staff").
_NOT_PLACES: Final = word_set("acronyms_not_places")
_CUES: Final = frozenset({"to", "from", "at", "in", "of", "on", "leave", "near"})
# Words at which some rule starts (heads, cues, unit words); any other word is skipped fast.
_TRIGGERS: Final = frozenset(
    {*GENERIC_HEADS, *NAMED_HEADS, *_CUES, "home", "plan", "cath", "er", "ew", "ed", "tcu"}
    | {"shore", "coast", "side", "end"}
    | _STAFF
)


@cache
def _starts() -> frozenset[str]:
    """The words at which a rule may start: triggers, states and "<state>'s" (the loop skips
    every other word without a Python call per word)."""
    states = lx.us_states()
    return frozenset({*_TRIGGERS, *states, *(f"{s}'s" for s in states)})


def _mixed_start(word: str) -> bool:
    """May the loop start at ``word`` as written in a mixed-case ASCII note: a trigger, or a
    state written capitalised or in capitals. A state word written otherwise ("or", "me",
    "pa", common words) starts nothing there: the state rules (``_city_before_state``,
    ``_compass_state``) want a capitalised or all-caps state in a mixed-case note."""
    low = word.lower()
    return low in _starts() and (low in _TRIGGERS or lx.is_title(word) or word.isupper())


def _loop_starts(toks: lx.Tokens, ascii_note: bool, picked: list[int]) -> Iterable[int]:
    """Indices of the words the loop visits, of those ``picked``: the words of ``_starts`` —
    in a mixed-case ASCII note less the state words that can start nothing there."""
    if not (toks.mixed_case and ascii_note):
        return compress(picked, map(_starts().__contains__, map(toks.lowers.__getitem__, picked)))
    return compress(picked, map(_mixed_start, map(toks.texts.__getitem__, picked)))


@cache
def _picked_words() -> frozenset[str]:
    """The words at which the loop of ``detect`` or a facility phrase starts."""
    return _starts() | fp.head_words()


_SERVICES: Final = "facility_services"


@cache
def _stops() -> frozenset[str]:
    """Words that end a facility name read backwards from its head: care units, articles and
    describing adjectives ("the", "outside"), less the words facility names are made of."""
    kept = word_set("facility_prefixes") | word_set("facility_modifiers")
    return (UNITS | GENERIC_MODIFIERS | word_set("facility_stop_function_words")) - kept


@register("locations")
class LocationRecognizer(Recognizer):
    """Hospitals and facilities (by head word or movement cue) and cities (after a cue)."""

    categories = frozenset({HOSPITAL, CITY, OTHER})

    def detect(self, doc: Doc) -> list[Span]:
        toks = lx.tokens(doc)
        words, mixed, text = toks.words, toks.mixed_case, doc.text
        # places glued to a head or a number need no cue word
        out: list[Span] = _glued_heads(text) + _wards_with_numbers(doc, mixed)
        n = len(words)
        states = lx.us_states()
        if toks.lower_set.isdisjoint(_TRIGGERS) and toks.lower_set.isdisjoint(states):
            return _propagate(out, toks, text, mixed) if out else []
        # whole facility names, head included unless the policy says otherwise
        # ("Sacred Heart Memorial Hospital"; option facility_heads = false: "Sacred Heart")
        with_head = bool(self.options.get("facility_heads", True))
        # the words at which this loop or a facility phrase starts, picked in one pass
        lowers = toks.lowers
        picked = list(compress(range(n), map(_picked_words().__contains__, lowers)))
        heads = compress(picked, map(fp.head_words().__contains__, map(lowers.__getitem__, picked)))
        out += fp.facility_phrases(words, lowers, text, mixed, _stops(), with_head, heads)
        out += fp.hospital_acronyms(toks, text, mixed)
        for h in _loop_starts(toks, text.isascii(), picked):
            tok = words[h]
            low = tok.lower
            span: Span | None = None
            is_home = low == "home" and h > 0 and words[h - 1].lower == "nursing"
            if low in GENERIC_HEADS or low in NAMED_HEADS or is_home:
                # a capitalised head in a lower-case note reads as in a mixed-case one
                cased = mixed or (toks.lower_note and tok.is_title)
                span = _judged(_HEAD_WINDOW, self._facility, words, h, text, cased)
                if span is not None:
                    also = _facility_list(words, h, text, mixed)
                    if also is not None:
                        out.append(also)
            elif low in _CUES and h + 1 < n:
                span = self._after_cue(words, h, text, mixed)
                if span is None and low == "of" and h > 0:
                    span = _university_of(words, h, text, mixed)
            elif low in {"shore", "coast", "side", "end"}:
                span = _region(words, h, text, mixed)
            elif low == "plan" and h + 1 < n and text[tok.end : words[h + 1].start].strip() == ":":
                span = _building_floor(words, h + 1, text, mixed)
            elif h > 0 and (
                low in _EMERGENCY or (low == "cath" and h + 1 < n and words[h + 1].lower == "lab")
            ):
                span = _acronym_before_unit(words, h, text, mixed)
            elif h > 0 and low in _STAFF:
                prev = words[h - 1]
                short_caps = prev.is_upper and len(prev.lower) <= 4
                if prev.lower not in _NOT_PLACES and lx.zipf(prev.lower) < (
                    4.0 if short_caps else 3.3
                ):
                    span = _acronym_before_unit(words, h, text, mixed, staff=True)
            elif (low in states or low.removesuffix("'s") in states) and h > 0:
                gap = text[words[h - 1].end : tok.start]
                # both rules want a comma before a two-letter state ("this or that", "X MD")
                if gap == ", " or (gap == " " and len(low) > 2):
                    span = _city_before_state(words, h, text, mixed) or _compass_state(
                        words, h, text, mixed
                    )
            if span is not None:
                out.append(span)
        return _propagate(out, toks, text, mixed)

    def _facility(self, words: tuple[Token, ...], h: int, text: str, mixed: bool) -> Span | None:
        """The name words before a facility head: "Ashcott Hospital", "Univ of X Medical".
        Reads no word beyond ``_HEAD_WINDOW`` and nothing else of the note but ``mixed``."""
        head = words[h]
        if mixed and not (head.is_title or head.is_upper) and head.lower in NAMED_HEADS:
            return None  # "general hospital", "good health" written in lower case
        named_head = head.lower in NAMED_HEADS
        # a strong head, or any head written as a name in a mixed-case note ("Heart Center")
        strong = head.lower in STRONG_HEADS or (mixed and head.is_title)
        if named_head and not strong and not _head_closes(words, h, text, mixed):
            return None
        j = h - 1
        first = None
        while j >= 0 and h - j <= 4:
            tok = words[j]
            gap = text[tok.end : words[j + 1].start]
            if "\n" in gap or gap.strip() not in {"", "-", "'", "."}:
                break
            if gap.strip() == "." and tok.lower not in {"st", "mt"}:
                break
            if (
                tok.lower == "of"
                and first is not None
                and j > 0
                and words[j - 1].lower in {"university", "univ", "u", "college", "sisters"}
            ):
                j -= 1
                continue
            if (tok.lower in HEAD_FILLERS or tok.lower in GENERIC_HEADS) and first is None:
                j -= 1  # "X Medical Center": skip "Medical"
                continue
            if not _namelike(tok, mixed, strong) or tok.lower in GENERIC_MODIFIERS:
                break
            first = j
            j -= 1
        if first is None:
            return None
        end_tok = h if named_head else _last_name_word(words, first, h)
        if (
            named_head
            and words[h].lower == "general"
            and h + 1 < len(words)
            and words[h + 1].lower not in GENERIC_HEADS
        ):
            return None
        start, end = words[first].start, words[end_tok].end
        if start >= end:
            return None
        return Span(start, end, HOSPITAL, 0.8, "locations")

    def _after_cue(self, words: tuple[Token, ...], c: int, text: str, mixed: bool) -> Span | None:
        """A place right after "to/from/at/in/of" when a movement verb or place shape says so."""
        cue = words[c].lower
        nxt = words[c + 1] if words[c + 1].lower != "the" or c + 2 >= len(words) else words[c + 2]
        # fast reject: every rule below wants a capitalised word in a mixed-case note, and a
        # rare word, a city or a country in a one-case note; none wants a care unit
        if nxt.lower in UNITS:
            return None
        if text[nxt.end : nxt.end + 1].isdigit() and cue in {"to", "from", "on", "at"}:
            glued = _ward_glued_to_digit(nxt, text, mixed)  # "to Xyzward3", "on xyzward4"
            if glued is not None:
                return glued
        if mixed and not nxt.text[0].isupper():
            # "returned to new haven": a lower-case city of two or more words, after a verb
            if cue in _LOWER_CITY_CUES and nxt.lower in lx.city_first_words():
                return _lower_city(words, c, text)
            return None
        if (
            not mixed
            and lx.zipf(nxt.lower) >= 5.0
            and nxt.lower not in lx.city_first_words()
            and nxt.lower not in lx.countries()
        ):
            return None
        return _judged(_CUE_WINDOW, self._cue_context, words, c, text, mixed)

    def _cue_context(self, words: tuple[Token, ...], c: int, text: str, mixed: bool) -> Span | None:
        """The rules of ``_after_cue`` that read the words around the cue: the movement verbs
        before it, the city, facility or acronym after it. They read no word more than
        ``_CUE_WINDOW.before`` before the cue or ``_CUE_WINDOW.after`` after it, no character
        past the last of those, and nothing else of the note but its case (:func:`_judged`
        relies on it: a rule added here must keep to that window, or widen it)."""
        cue = words[c].lower
        before = set(map(_lower, words[max(0, c - 3) : c]))
        prev = words[c - 1].lower if c > 0 else ""
        moved = not before.isdisjoint(MOVE_VERBS)
        resident = not before.isdisjoint(RESIDENCE_VERBS)
        j = c + 1
        if j < len(words) and words[j].lower == "the":
            j += 1
        if j >= len(words):
            return None
        if cue == "of" and not resident and (c == 0 or not _person_before(words[c - 1], mixed)):
            return None
        gap = text[words[c].end : words[j].start]
        if j == c + 2:  # "from the XYZ": the article is no gap
            gap = gap.replace(words[c + 1].text, " ", 1)
        if "\n" in gap:
            return None
        if gap.strip().isdigit() and gap[:1] == " " and gap[-1:] == " " and cue in {"to", "from"}:
            # "transferred to 209 Xward.": a room number, then the ward or building
            return _ward_after_room(words, j, text, mixed) if moved else None
        if gap.strip() not in {"", ":"}:
            return None
        tok = words[j]
        # a city from the zipcodes list (longest first, up to three words)
        city_end = _city_at(words, j, text, mixed)
        if city_end is not None:
            phrase = " ".join(w.lower for w in words[j : city_end + 1])
            single = city_end == j
            f = lx.zipf(phrase)
            rare = not single or f < 3.5
            people = _people(prev) or (c > 1 and _people(words[c - 2].lower))
            loose = cue == "of" or (
                cue in {"in", "from"} and (people or f < (3.0 if mixed else 2.5))
            )
            if (
                (
                    resident
                    or ((moved or loose) and rare)
                    or (people and cue == "from" and f < 5.0)  # "daughter from Miami"
                    or (f < 5.0 and _travelled(words, c))  # asked last: it looks back six words
                )
                and phrase not in lx.us_states()
                and (not single or tok.lower not in UNITS)
                and not _facility_follows(words, city_end)
            ):
                last = city_end
                if (
                    last + 1 < len(words)
                    and words[last + 1].lower in PLACE_SUFFIXES
                    and text[words[last].end : words[last + 1].start] == " "
                    and (not mixed or words[last + 1].text[0].isupper())
                ):
                    last += 1  # "Frostburg Heights", "Glen Burnie Heights": a neighbouring place
                return Span(tok.start, words[last].end, CITY, 0.75, "locations")
        return self._after_cue_rest(
            words, c, j, text, mixed, before=before, moved=moved, resident=resident
        )

    def _after_cue_rest(
        self,
        words: tuple[Token, ...],
        c: int,
        j: int,
        text: str,
        mixed: bool,
        *,
        before: set[str],
        moved: bool,
        resident: bool,
    ) -> Span | None:
        """The rules of ``_after_cue`` after the city look-up, for the word ``j`` after the cue."""
        cue = words[c].lower
        prev = words[c - 1].lower if c > 0 else ""
        tok = words[j]
        if (  # "Medical Center in Marlowvale": a rare word after a facility and "in" is its town
            cue == "in"
            and prev in _HEADS
            and (tok.is_title or tok.is_upper or not mixed)
            and lx.zipf(tok.lower) < 3.0
            and tok.lower not in UNITS
            and not lx.clinical_word(tok.lower)
        ):
            return Span(tok.start, tok.end, CITY, 0.6, "locations")
        if resident and tok.lower == "dc" and (tok.is_upper or not mixed):
            return Span(tok.start, tok.end, CITY, 0.7, "locations")  # the District: a city
        if cue in {"in", "at"} and prev in _BEING and c > 0:
            where = _bare_acronym(words, j, text, mixed, clause=True)  # "knows he is in XYZ,"
            if where is not None:
                return where
        # a country after a residence or travel cue ("lives in Italy"): not identifying alone
        if tok.lower in lx.countries() and (resident or _travelled(words, c)):
            return Span(tok.start, tok.end, OTHER, 0.55, "locations")
        floor = _building_floor(words, j, text, mixed, cued=cue in {"to", "on", "from", "at"})
        if floor is not None and cue in {"to", "on", "from", "at"}:
            return floor
        if cue == "on":
            return None  # "on X 2" is a floor; "received on SIMV" is a ventilator mode
        saint = _saint(words, j, text, mixed)
        if saint is not None and cue in {"to", "from", "at"}:
            return saint
        bare = _bare_acronym(words, j, text, mixed)
        if bare is not None and (cue in {"at", "leave"} or (cue == "from" and j == c + 2)):
            return bare  # "at XYZ,", "leave XYZ.", "a consult from the XYZ."
        if mixed and cue in {"at", "from"} and not moved:
            placed = _title_place(words, j, text)
            if placed is not None:
                return placed
        if cue in {"in", "of"} and not resident:
            return _area(words, j, text, mixed) if cue == "in" else None
        if not moved or (cue == "from" and not before.isdisjoint(_SAMPLED)):
            return None  # "blood sent from the A-line": a sample, not a patient, moves
        return (
            self._facility_after_cue(words, j, text, mixed)
            or _title_run(words, j, text, mixed)
            or (_title_place(words, j, text) if mixed else None)
        )

    def _facility_after_cue(
        self, words: tuple[Token, ...], j: int, text: str, mixed: bool
    ) -> Span | None:
        """ "sent to XYZ", "transferred from XYZ ER", "to X 2" (a building and its floor)."""
        tok = words[j]
        low = tok.lower
        if low in UNITS or low in GENERIC_HEADS or low in GENERIC_MODIFIERS or low in HEAD_FILLERS:
            return None
        if mixed and not (tok.is_title or tok.is_upper):
            return None
        nxt = words[j + 1] if j + 1 < len(words) else None
        if (  # "St. Mary's", "Mt Carmel"
            low in {"st", "saint", "mt", "mount"}
            and nxt is not None
            and (nxt.is_title or not mixed)
            and len(text[tok.end : nxt.start]) <= 2
            and "\n" not in text[tok.end : nxt.start]
        ):
            return Span(tok.start, nxt.end, HOSPITAL, 0.7, "locations")
        gap = text[tok.end : nxt.start] if nxt is not None else ""
        tail = text[tok.end : tok.end + 4]
        f = lx.zipf(low)
        followed_by_unit = (
            nxt is not None and "\n" not in gap and gap.strip() == "" and nxt.lower in _UNIT_AFTER
        )
        followed_by_floor = tail[:1] == " " and tail[1:2].isdigit() and not tail[2:3].isalpha()
        after = text[tok.end : tok.end + 2].lstrip(" ")[:1]
        clause_end = (after == "" or after in ".,;:)\n") or (
            nxt is not None and "\n" not in gap and nxt.lower in _CLAUSE_WORDS
        )
        short = 2 <= len(low) <= 5 and (tok.is_upper if mixed else f < 3.6)
        if low in lx.us_states():
            return None
        if short and (
            followed_by_unit or followed_by_floor or clause_end or (mixed and tok.is_upper)
        ):
            if f >= 4.5 and not followed_by_unit:
                return None
            return Span(tok.start, tok.end, HOSPITAL, 0.7, "locations")
        rare = f < 3.0 and len(low) > 3 and lx.name_score(low) < 1.0
        if rare and (followed_by_unit or followed_by_floor or (mixed and tok.is_title)):
            return Span(tok.start, tok.end, HOSPITAL, 0.65, "locations")
        if followed_by_floor and f < 3.5 and len(low) > 3:
            return Span(tok.start, tok.end, HOSPITAL, 0.65, "locations")
        return None


# Verbs of taking a sample: "sent from X" names a line or a site, not a place.
_SAMPLED: Final = frozenset({"sent", "drawn", "obtained", "taken", "cultured"})
# Words after an acronym that make it a hospital ("XYZ ER", "XYZ cath lab", "XYZ TCU").
_UNIT_AFTER: Final = word_set("facility_unit_after")
# Words after a number that make it a dose or a setting, not a floor ("lasix 20 iv").
_DOSE_AFTER: Final = word_set("dose_after")
# Words that may follow a facility named after a movement cue ("sent to XYZ for cath").
_CLAUSE_WORDS: Final = word_set("facility_clause_words")


# Emergency-department words after a hospital's acronym ("XYZ ER", "XYZ EW").
_EMERGENCY: Final = frozenset({"er", "ew", "ed", "tcu"})
# Travel verbs: a city after them may be a common word ("flying in from Rome").
TRAVEL_VERBS: Final = word_set("place_travel_verbs")
_TRAVEL_OR_RETURN: Final = TRAVEL_VERBS | RETURN_VERBS
_MOVE_OR_RETURN: Final = MOVE_VERBS | RETURN_VERBS
_HEADS: Final = GENERIC_HEADS | NAMED_HEADS


def _acronym_before_unit(
    words: tuple[Token, ...], h: int, text: str, mixed: bool, staff: bool = False
) -> Span | None:
    """ "XYZ ER": an unknown acronym right before an emergency department is a hospital."""
    tok = words[h - 1]
    low = tok.lower
    if text[tok.end : words[h].start] != " " or low in UNITS or low in GENERIC_MODIFIERS:
        return None
    if not (2 <= len(low) <= 5) or (mixed and not tok.is_upper) or lx.zipf(low) >= 4.0:
        return None
    if mixed and not words[h].is_upper and words[h].lower != "cath" and not staff:
        return None
    return Span(tok.start, tok.end, HOSPITAL, 0.7, "locations")


def _university_of(words: tuple[Token, ...], c: int, text: str, mixed: bool) -> Span | None:
    """ "University of X", "U of X": the university's (hospital's) name."""
    uni = words[c - 1]
    if uni.lower not in {"university", "univ", "u"} or c + 1 >= len(words):
        return None
    nxt = words[c + 1]
    if "\n" in text[uni.end : nxt.start] or (mixed and not (nxt.is_title or nxt.is_upper)):
        return None
    if nxt.lower not in lx.us_states() and nxt.lower not in lx.us_cities():
        return None
    return Span(uni.start, nxt.end, HOSPITAL, 0.75, "locations")


def _city_before_state(words: tuple[Token, ...], h: int, text: str, mixed: bool) -> Span | None:
    """ "Middle River, MD", "Frostburg Maryland": a listed city right before a state; also
    "U Maryland" (a state university's hospital)."""
    state = words[h]
    uni = words[h - 1]
    if (
        uni.lower in {"u", "uof", "univ", "university"}
        and text[uni.end : state.start] == " "
        and len(state.lower) > 2
        and (state.is_title or state.is_upper or not mixed)
    ):
        return Span(uni.start, state.end, HOSPITAL, 0.7, "locations")
    if text[words[h - 1].end : state.start] == " " and len(state.lower) <= 2:
        return None  # "X MD" without a comma: a doctor, not a state
    if mixed and not (state.is_upper or state.is_title):
        return None
    for size in (3, 2, 1):
        first = h - size
        if first < 0:
            continue
        parts = words[first:h]
        if any(text[a.end : b.start] != " " for a, b in zip(parts, parts[1:], strict=False)):
            continue
        if mixed and not all(p.is_title or p.is_upper for p in parts):
            continue
        phrase = " ".join(p.lower for p in parts)
        if phrase in lx.us_cities() and (size > 1 or lx.zipf(phrase) < 4.5):
            return Span(parts[0].start, parts[-1].end, CITY, 0.75, "locations")
    return None


def _building_floor(
    words: tuple[Token, ...], j: int, text: str, mixed: bool, cued: bool = False
) -> Span | None:
    """ "to X 2", "on X 2": a rare word and a one-digit floor (not a dose: "lasix 2 mg")."""
    tok = words[j]
    low = tok.lower
    pad = 2 if text[tok.end : tok.end + 2] == "  " else 1
    tail = text[tok.end + pad - 1 : tok.end + pad + 2]
    if not (tail[:1] == " " and tail[1:2].isdigit() and not tail[2:3].isalnum()):
        return None
    if tail[2:3] in {".", "/", ":"} and text[tok.end + 3 : tok.end + 4].isdigit():
        return None  # "2.5", "2/3", "2:30"
    if (
        j + 1 < len(words)
        and words[j + 1].start - tok.end <= 5
        and words[j + 1].lower in _DOSE_AFTER
    ):
        return None
    if low in UNITS or len(low) < 5 or lx.zipf(low) >= 3.0 or lx.clinical_word(low):
        return None
    if lx.name_score(low) >= 1.0 and not cued:
        return None  # "Smith 2" alone; "to Smith 2" names a building after its donor
    if mixed and not (tok.is_title or tok.is_upper):
        return None
    return Span(tok.start, tok.end, HOSPITAL, 0.6, "locations")


def _saint(words: tuple[Token, ...], j: int, text: str, mixed: bool) -> Span | None:
    """ "to St. Mary's", "from Mt Carmel": a saint's or mount's name after a place preposition."""
    tok = words[j]
    if tok.lower not in {"st", "saint", "mt", "mount"} or j + 1 >= len(words):
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


def _compass_state(words: tuple[Token, ...], h: int, text: str, mixed: bool) -> Span | None:
    """ "western Maryland", "NORTHERN VIRGINIA": a part of a state is a region, smaller than
    a state (states alone are kept under Safe Harbor)."""
    if h < 1:
        return None
    compass = words[h - 1]
    if compass.lower not in _COMPASS or text[compass.end : words[h].start] != " ":
        return None
    state = words[h]
    if len(state.lower) <= 2:
        return None  # "west MD": a doctor or an abbreviation
    if mixed and not (state.is_title or state.is_upper):
        return None
    return Span(compass.start, state.end, OTHER, 0.6, "locations")


def _region(words: tuple[Token, ...], h: int, text: str, mixed: bool) -> Span | None:
    """ "the Eastern Shore", "the west coast": a region named by a compass word."""
    if h < 2 or words[h - 2].lower != "the":
        return None
    compass = words[h - 1]
    if compass.lower not in _COMPASS or text[compass.end : words[h].start] != " ":
        return None
    if mixed and not (compass.is_title or compass.is_upper):
        return None
    return Span(compass.start, words[h].end, OTHER, 0.6, "locations")


_BEING: Final = frozenset({"is", "am", "i'm", "are", "was", "were"})
_COMPASS: Final = frozenset(
    {"eastern", "western", "northern", "southern", "east", "west", "north", "south"}
)


def _bare_acronym(
    words: tuple[Token, ...], j: int, text: str, mixed: bool, clause: bool = False
) -> Span | None:
    """ "at XYZ,", "leave XYZ.": an unknown acronym ending a clause after a place preposition
    (a mixed-case note only, where all-caps marks an acronym)."""
    tok = words[j]
    low = tok.lower
    if not 2 <= len(low) <= 4 or low in UNITS:
        return None
    if mixed and not tok.is_upper:
        return None
    if (
        not mixed
        and (len(low) > 3 or lx.zipf(low) >= 3.3)
        and not (len(low) == 4 and lx.zipf(low) < 1.0 and not lx.clinical_word(low))
    ):
        return None  # one-case note: a short unknown word only ("at xyz.", "the wxyz.")
    if low in lx.us_states() or lx.zipf(low) >= 3.5 or low in GENERIC_MODIFIERS:
        return None
    after = text[tok.end : tok.end + 2].lstrip(" ")[:1]
    if after not in {",", ".", ";", ")", "\n", ""}:
        nxt = words[j + 1] if j + 1 < len(words) else None
        if (
            not clause
            or nxt is None
            or nxt.lower not in _CLAUSE_WORDS
            or text[tok.end : nxt.start] != " "
        ):
            return None  # "I'm in XYZ and ...": after a being-verb a clause word ends it too
    return Span(tok.start, tok.end, HOSPITAL, 0.55, "locations")


def _title_place(words: tuple[Token, ...], j: int, text: str) -> Span | None:
    """ "at Holy Cross", "to Harbor": Title-case words after at/to/from, one of them a listed
    city or a surname (not a state, a country or a care unit)."""

    def usable(tok: Token) -> bool:
        low = tok.lower
        return (
            tok.is_title
            and low not in UNITS
            and low not in GENERIC_MODIFIERS
            and low not in GENERIC_HEADS
            and low not in HEAD_FILLERS
            and lx.zipf(low) < 5.2
            and low not in lx.us_states()
            and low not in lx.countries()
        )

    def placeish(tok: Token) -> bool:
        return tok.lower in lx.us_cities() or lx.name_score(tok.lower) > -1.0

    tok = words[j]
    if not usable(tok):
        return None
    nxt = words[j + 1] if j + 1 < len(words) else None
    pair = nxt is not None and text[tok.end : nxt.start] == " " and usable(nxt)
    if pair and nxt is not None and (placeish(tok) or placeish(nxt)):
        return Span(tok.start, nxt.end, HOSPITAL, 0.55, "locations")
    if placeish(tok):
        return Span(tok.start, tok.end, HOSPITAL, 0.55, "locations")
    return None


def _area(words: tuple[Token, ...], j: int, text: str, mixed: bool) -> Span | None:
    """ "in X area", "in X county": the word before is a place."""
    if j + 1 >= len(words) or words[j + 1].lower not in {"area", "county"}:
        return None
    tok = words[j]
    if (mixed and not tok.is_title) or tok.lower in UNITS or lx.zipf(tok.lower) >= 4.0:
        return None
    return Span(tok.start, tok.end, CITY, 0.6, "locations")


def _title_run(words: tuple[Token, ...], j: int, text: str, mixed: bool) -> Span | None:
    """ "transferred from Good Sam": Title-case words after a movement cue in a mixed-case note."""
    if not mixed:
        return None
    k = j
    while k < len(words) and k - j < 3 and words[k].is_title:
        low = words[k].lower
        if low in UNITS or low in GENERIC_MODIFIERS or low in GENERIC_HEADS or low in HEAD_FILLERS:
            break
        if k > j and text[words[k - 1].end : words[k].start] != " ":
            break
        k += 1
    if k - j < 2 and not (k - j == 1 and lx.zipf(words[j].lower) < 3.0):
        return None
    if all(lx.zipf(w.lower) >= 5.0 for w in words[j:k]):
        return None
    return Span(words[j].start, words[k - 1].end, HOSPITAL, 0.6, "locations")


def _propagate(spans: list[Span], toks: lx.Tokens, text: str, mixed: bool) -> list[Span]:
    """A place named once in a note is the same place wherever its word recurs there."""
    if not spans:
        return spans
    words = toks.words
    found: dict[str, Category] = {}
    phrases: dict[str, Category] = {}
    for span in spans:
        phrase = text[span.start : span.end]
        if "\n" in phrase or span.confidence < 0.6:
            continue
        low = phrase.lower()
        if " " in phrase:
            if span.confidence >= 0.7 and len(low) >= 6:
                phrases[" ".join(low.split())] = span.category  # "holy cross" again later
            continue
        # a listed city found by a sure cue recurs even when it is a commoner word ("Rome")
        ceiling = 4.6 if span.category is CITY and span.confidence >= 0.7 else 3.5
        if lx.zipf(low) < ceiling and low not in UNITS and not lx.is_first_name(low):
            found[low] = span.category
    best: dict[tuple[int, int], Span] = {}
    for span in spans:
        old = best.get((span.start, span.end))
        if old is None or old.confidence < span.confidence:
            best[(span.start, span.end)] = span
    out = list(best.values())
    if not phrases and not found:
        return out
    firsts = {p.split(" ", 1)[0]: p.count(" ") + 1 for p in phrases}
    # the words found again and the phrases' first words, picked in one pass without a
    # Python call per word of the note
    lowers = toks.lowers
    hits = list(compress(range(len(words)), map({**firsts, **found}.__contains__, lowers)))
    if firsts:
        again = compress(hits, map(firsts.__contains__, map(lowers.__getitem__, hits)))
        out.extend(_phrase_again(phrases, firsts, again, toks, text, mixed, set(best)))
    if not found:
        return out
    covered = set(best)
    for i in compress(hits, map(found.__contains__, map(lowers.__getitem__, hits))):
        tok = words[i]
        if (tok.start, tok.end) not in covered:
            if mixed and not (tok.is_title or tok.is_upper):
                continue
            out.append(Span(tok.start, tok.end, found[tok.lower], 0.65, "locations"))
    return out


_Verdict = tuple[int, int, Category, float] | None
_UNSEEN: Final = (0, 0, CITY, 0.0)  # a verdict no rule gives (an empty span)


class _Window:
    """How many words before and after its word a rule reads (and the text between them, and
    nothing else of the note but the case flag it is given), with its verdicts kept per
    window text and flag in a memo (``_JUDGED_LIMIT`` windows). The bounds are declared, not
    assumed: tests/phi/test_location_windows.py runs every rule judged through a window on
    the window's words alone and fails when a verdict differs (a rule reading further)."""

    __slots__ = ("after", "before", "judged")

    def __init__(self, name: str, before: int, after: int) -> None:
        self.before = before
        self.after = after
        self.judged: Memo[tuple[str, bool], _Verdict] = Memo(name, None, _JUDGED_LIMIT)


_JUDGED_LIMIT: Final = 20_000  # about 4 MB of windows at most
# Windows repeat in long notes (copied-forward text, templates); a short note's windows are
# mostly new, and keeping them would cost more than it saves (5 ms per MB of short notes).
_JUDGED_MIN_TEXT = 10_000
# The rules behind a cue (``_cue_context``) read six words before it (the travel verbs) and
# five after it (an article, a city of three words and the word after it: a facility head
# or a place suffix); the characters they read past a word (a floor number, a clause mark)
# come before the fifth word's end.
_CUE_WINDOW: Final = _Window("locations.cue_window", 6, 5)
# ``_facility`` reads the name words up to four before the head and the word before them
# ("University of"), and the word after the head ("X House NH", "General Hospital").
_HEAD_WINDOW: Final = _Window("locations.head_window", 5, 1)


def _judged(
    window: _Window,
    rule: Callable[[tuple[Token, ...], int, str, bool], Span | None],
    words: tuple[Token, ...],
    c: int,
    text: str,
    flag: bool,
) -> Span | None:
    """``rule(words, c, text, flag)``, judged once per distinct stretch of text around the
    word ``c`` and flag (a long note repeats its phrases: "transferred from X Hospital").

    The rule reads the words from ``window.before`` before ``c`` to ``window.after`` after
    it and the text between them, and nothing else of the note but ``flag``. So its verdict,
    taken relative to the first word's start, is a function of the flag and of the text from
    the first word's start to the last word's end: that text fixes the words in it (a word
    ends where the next one's gap starts, and the last ends where the text does). Near the
    note's ends, where the window would be cut short, or in a short note, the rule is asked
    each time."""
    where = _window_text(window, words, c, text) if len(text) >= _JUDGED_MIN_TEXT else None
    if where is None:
        return rule(words, c, text, flag)
    origin, key = where
    verdict = window.judged.peek((key, flag), _UNSEEN)
    if verdict is None:
        return None
    if verdict is not _UNSEEN:
        start, stop, category, confidence = cast("tuple[int, int, Category, float]", verdict)
        return Span(origin + start, origin + stop, category, confidence, "locations")
    span = rule(words, c, text, flag)
    if span is None:
        window.judged.put((key, flag), None)
    elif origin <= span.start and span.end <= origin + len(key):  # the rule reads no further
        relative = (span.start - origin, span.end - origin, span.category, span.confidence)
        window.judged.put((key, flag), relative)
    return span


def _window_text(
    window: _Window, words: tuple[Token, ...], c: int, text: str
) -> tuple[int, str] | None:
    """Where the window of the word ``c`` starts in the text, and its text (see ``_judged``);
    None where the note has fewer words before or after ``c``."""
    lo = c - window.before
    hi = c + window.after + 1
    if lo < 0 or hi > len(words):
        return None
    origin = words[lo].start
    return origin, text[origin : words[hi - 1].end]


def _person_before(tok: Token, mixed: bool) -> bool:
    """ "Neil Smith of Elkbridge": the word before "of" looks like a surname."""
    if tok.is_title and (lx.name_score(tok.lower) > -9.0 or lx.zipf(tok.lower) < 2.5):
        return True
    return not mixed and lx.name_score(tok.lower) >= 1.5


def _head_closes(words: tuple[Token, ...], h: int, text: str, mixed: bool) -> bool:
    """A name-part head ("House", "Health") ends a facility name only when a generic head or
    the end of the clause follows: "X House NH", "works for X health." — not "house diet"."""
    if mixed and not (words[h].is_title or words[h].is_upper):
        return False
    if h + 1 < len(words) and words[h + 1].lower in GENERIC_HEADS:
        return True
    after = text[words[h].end : words[h].end + 2].lstrip(" ")[:1]
    return after == "" or after in ".,;)\n"


def _namelike(tok: Token, mixed: bool, strong: bool = True) -> bool:
    """Could this word be part of a facility name? Before a weak head ("rehab", "center") a
    one-case note needs a city, a surname or a rare word ("cardiac rehab" is no name)."""
    low = tok.lower
    if low in UNITS or (len(low) < 2 and low != "u") or low in word_set(_SERVICES):
        return False  # "Pain Clinic", "Cardiac Rehab": a service, not a name
    place = low in lx.us_cities() or (len(low) > 2 and low in lx.us_states())
    f = lx.zipf(low)
    if f >= _FUNCTION_ZIPF and not place:
        return False
    if mixed and not (tok.is_title or tok.is_upper):
        return False
    if low.endswith(("ing", "ed")) and lx.name_score(low) < 1.0:
        return False  # "tolerating", "indicated": verbs, not names
    if strong:
        return mixed or f < 5.2 or place
    # before a weak head ("rehab", "center") only a city or a surname ("cardiac rehab" is none)
    return place or lx.name_score(low) >= 1.0 or (f < 2.0 and len(low) > 3 and low.isalpha())


def _last_name_word(words: tuple[Token, ...], first: int, h: int) -> int:
    """The last word before the generic head(s) at ``h`` (skipping "Medical" in "X Medical Center")."""
    end = h - 1
    while end > first and (words[end].lower in GENERIC_HEADS or words[end].lower in HEAD_FILLERS):
        end -= 1
    return end


def _city_at(words: tuple[Token, ...], j: int, text: str, mixed: bool) -> int | None:
    """Index of the last word of a city name starting at word ``j``, or None."""
    tok = words[j]
    if mixed and not tok.is_title and not (tok.is_upper and _caps_city(words, j, text)):
        return None  # an all-caps word in a mixed-case note is an abbreviation ("RA", "TLC")
    if tok.lower not in lx.city_first_words():
        return None
    cities = lx.us_cities()
    best = None
    phrase = tok.lower
    if phrase in cities:
        best = j
    for k in range(j + 1, min(j + 3, len(words))):
        gap = text[words[k - 1].end : words[k].start]
        if gap != " ":
            break
        phrase = phrase + " " + words[k].lower
        if phrase in cities:
            best = k
    return best


def _caps_city(words: tuple[Token, ...], j: int, text: str) -> bool:
    """ "lives in COOKEVILLE", "from SILVER SPRINGS": a city in capitals in a mixed-case note,
    when long enough not to be an abbreviation (five letters, or two capitalised words)."""
    tok = words[j]
    if len(tok.lower) >= 5:
        return True
    nxt = words[j + 1] if j + 1 < len(words) else None
    return nxt is not None and nxt.is_upper and text[tok.end : nxt.start] == " "


def _facility_follows(words: tuple[Token, ...], k: int) -> bool:
    """A facility head or an emergency department after the words: a hospital, not a city."""
    if k + 1 >= len(words):
        return False
    nxt = words[k + 1].lower
    return nxt in GENERIC_HEADS or nxt in NAMED_HEADS or nxt in _EMERGENCY


# Words after a city that name a neighbouring place ("Frostburg Heights", "Severna Park").
# Written by hand: the generic words of US place names (USGS feature classes).
PLACE_SUFFIXES: Final = word_set("place_suffixes")
# Facility heads written glued to the name before them ("XyzBuilding", "XyzHospital").
_GLUED_HEADS: Final = ("Building", "Hospital", "Center", "Pavilion", "Clinic")


def _glued_heads(text: str) -> list[Span]:
    """ "(XyzBuilding)": a capitalised name glued to a facility head (a typing slip)."""
    out: list[Span] = []
    for head in _GLUED_HEADS:
        if head not in text:
            continue
        at = text.find(head)
        while at > 0:
            start = at
            while start > 0 and text[start - 1].isalpha():
                start -= 1
            if at - start >= 3 and text[start].isupper() and text[at - 1].islower():
                out.append(Span(start, at, HOSPITAL, 0.65, "locations"))
            at = text.find(head, at + len(head))
    return out


def _facility_list(words: tuple[Token, ...], h: int, text: str, mixed: bool) -> Span | None:
    """ "screened by X Rehab and Y.": a name joined to a facility names a facility too."""
    if h + 2 >= len(words) or words[h + 1].lower not in {"and", "or", "&"}:
        return None
    tok = words[h + 2]
    low = tok.lower
    if "\n" in text[words[h].end : tok.start] or low in UNITS or low in GENERIC_MODIFIERS:
        return None
    if mixed and not (tok.is_title or tok.is_upper):
        return None
    if lx.zipf(low) >= 3.0 or len(low) < 3 or lx.clinical_word(low):
        return None
    after = text[tok.end : tok.end + 2].lstrip(" ")[:1]
    if after not in {",", ".", ";", ")", "\n", ""}:
        return None
    return Span(tok.start, tok.end, HOSPITAL, 0.6, "locations")


def _ward_after_room(words: tuple[Token, ...], j: int, text: str, mixed: bool) -> Span | None:
    """ "transferred to 209 Xyz.": a rare word after a room number names a ward or building."""
    tok = words[j]
    low = tok.lower
    if low in UNITS or len(low) < 4 or lx.zipf(low) >= 2.5 or lx.clinical_word(low):
        return None
    if low in _DOSE_AFTER or low.removesuffix("'s").removesuffix("s") in _DOSE_AFTER:
        return None
    after = text[tok.end : tok.end + 2].lstrip(" ")[:1]
    if after not in {",", ".", ";", ")", "\n", ""}:
        return None
    return Span(tok.start, tok.end, HOSPITAL, 0.6, "locations")


_LOWER_CITY_CUES: Final = frozenset({"to", "from", "in"})


def _lower_city(words: tuple[Token, ...], c: int, text: str) -> Span | None:
    """ "returned to new haven", "lives in frostburg": in a mixed-case note a lower-case city
    counts after a movement or residence verb when it has two or more words, or is one word
    English hardly uses (after "lives in" / "from" a relative)."""
    if words[c].lower not in _LOWER_CITY_CUES:
        return None
    before = {w.lower for w in words[max(0, c - 3) : c]}
    resident = not before.isdisjoint(RESIDENCE_VERBS)
    people = c > 0 and _people(words[c - 1].lower)
    if before.isdisjoint(_MOVE_OR_RETURN) and not resident and not people:
        return None
    j = c + 1
    end = _city_at(words, j, text, False)
    if end is None:
        return None
    if end == j:
        low = words[j].lower
        if not (resident or (people and words[c].lower == "from")) or lx.zipf(low) >= 3.0:
            return None
        if low in UNITS or low in lx.us_states() or lx.clinical_word(low):
            return None
    return Span(words[j].start, words[end].end, CITY, 0.65, "locations")


# A word of 5+ letters glued to a one- or two-digit number ("Xyzward3"): re2 finds the few
# candidates in a note in a microsecond or two; the rules below judge them.
_GLUED_NUMBER: Final = compile_words(r"\b[A-Za-z]{4,}[A-WYZa-wyz]\d{1,2}\b")


def _wards_with_numbers(doc: Doc, mixed: bool) -> list[Span]:
    """ "XYZWARD3 DEVELOPED CHEST PAIN": a ward glued to its floor needs no cue before it
    (but "CABGX2", "stoolsx2" are counts: a glued "x" means times)."""
    out: list[Span] = []
    text = doc.text
    for match in finditer(doc, _GLUED_NUMBER):
        start, end = match.span()
        while end > start and text[end - 1].isdigit():
            end -= 1
        word = text[start:end]
        span = _ward_glued_to_digit(Token(start, end, word, word.lower()), text, mixed)
        if span is not None:
            out.append(span)
    return out


def _ward_glued_to_digit(tok: Token, text: str, mixed: bool) -> Span | None:
    """ "to Xyzward3": a rare word glued to a one- or two-digit floor or bed number."""
    end = tok.end
    if not text[end : end + 1].isdigit():
        return None
    k = end
    while k < len(text) and text[k].isdigit():
        k += 1
    if k - end > 2 or (k < len(text) and (text[k].isalnum() or text[k] in "./:-%")):
        return None
    low = tok.lower
    if len(low) < 5 or lx.zipf(low) >= 2.5 or low in UNITS or lx.clinical_word(low):
        return None
    if lx.near_english(low) or lx.is_first_name(low):
        return None
    if mixed and not (tok.is_title or tok.is_upper or tok.text.islower()):
        return None
    return Span(tok.start, tok.end, HOSPITAL, 0.6, "locations")


# Kinship words with one typing slip ("daugher from X"), English words left out at use.
_PEOPLE_SLIPS: Final = frozenset(
    slip for word in PEOPLE if len(word) >= 6 for slip in lx.slips(word)
)


def _travelled(words: tuple[Token, ...], c: int) -> bool:
    """A travel or return verb among the six words before the cue at ``c``. Asked only where a
    city or a country follows (most cues end earlier, so it is not worked out up front)."""
    return not _TRAVEL_OR_RETURN.isdisjoint(map(_lower, words[max(0, c - 6) : c]))


def _people(low: str) -> bool:
    """A word for a person or a relative, also with one typing slip ("daugher")."""
    return low in PEOPLE or (low in _PEOPLE_SLIPS and lx.zipf(low) < 2.0)


def _phrase_again(
    phrases: dict[str, Category],
    firsts: dict[str, int],
    at: Iterable[int],
    toks: lx.Tokens,
    text: str,
    mixed: bool,
    covered: set[tuple[int, int]],
) -> list[Span]:
    """Multi-word places found once ("Holy Cross", "Chester River") wherever they recur:
    ``firsts`` maps each phrase's first word to its length in words, ``at`` lists the indices
    of the words of the note that are such a first word."""
    words = toks.words
    out: list[Span] = []
    for i in at:
        size = firsts[words[i].lower]
        if i + size > len(words):
            continue
        part = words[i : i + size]
        if (part[0].start, part[-1].end) in covered:
            continue  # found there already (asked first: the checks below are dearer)
        if any(text[a.end : b.start] != " " for a, b in zip(part, part[1:], strict=False)):
            continue
        if mixed and not all(p.is_title or p.is_upper for p in part):
            continue
        cat = phrases.get(" ".join(p.lower for p in part))
        if cat is not None:
            out.append(Span(part[0].start, part[-1].end, cat, 0.65, "locations"))
    return out
