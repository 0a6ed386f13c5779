"""Hospitals, other facilities and cities named in the narrative.

Why by context: facility names are mostly invented or local ("X Memorial", "X rehab", an
acronym like "XYZ ER"), so no list can hold them; what gives them away is the facility head
after them ("Hospital", "Medical Center", "Rehab", "Nursing Home", "campus") or a movement
cue before them ("transferred from", "sent to", "lives in"). Cities come from the zipcodes
database, but only after such a cue, since many city names are English words. States and
countries alone are not identifying under Safe Harbor; they are kept unless part of a name.

The recognizer is the passes declared below (``PASSES``, one :class:`~pipelines.phi.passes.Pass`
each: the words that start it, its window, its vocabulary), tried in order at each word that
starts one; the first that finds a place there wins. The driver derives from them which words
are visited, which passes run there and the window memo of ``facility_head`` and ``after_cue``.
Note-level steps find what no word starts: names glued to a head or a floor
(``locations.glued_head``, ``locations.ward_number``), whole facility names and hospital
acronyms (``facility_phrases``). A place found once is found wherever it recurs by the
detector's propagation step (``locations.propagated``, ``pipelines.phi.propagate``). Every
span's ``source`` names the pass or step that made it.
Towns told by their shape after a cue ("New X", "lives in WB") are read by
``location_towns``, for the cue pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from itertools import compress
from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.passes import JUDGED_MIN_TEXT, Case, Pass, Passes, declare
from pipelines.phi.recognizers import facility_acronyms as fa
from pipelines.phi.recognizers import facility_phrases as fp
from pipelines.phi.recognizers import location_cues as cues
from pipelines.phi.recognizers.location_gazetteer import gazetteer_names
from pipelines.phi.recognizers.location_heads import facility, facility_list, glued_heads
from pipelines.phi.recognizers.location_modifiers import (
    MODIFIERS,
    TOWN_CUES,
    WEAK_MODIFIERS,
    modifier_alone,
    suffixed_town,
    trailing_modifier,
)
from pipelines.phi.recognizers.location_places import (
    GLUED_NUMBER,
    acronym_before_unit,
    bed_offer,
    city_before_state,
    compass_state,
    region,
    university_of,
    wards_with_numbers,
)
from pipelines.phi.recognizers.location_shapes import saint_alone
from pipelines.phi.recognizers.location_towns import town_after_and
from pipelines.phi.recognizers.location_wards import building_floor
from pipelines.phi.recognizers.location_words import (
    CITY,
    CUES,
    EMERGENCY,
    HEADS,
    HOSPITAL,
    MOVE_VERBS,
    NOT_PLACES,
    OTHER,
    REGION_WORDS,
    STAFF,
    UNITS,
    UNIVERSITY,
    Note,
    positions_in,
    stops,
)
from pipelines.phi.registry import register
from pipelines.spans import Span

__all__ = ["GLUED_NUMBER", "PASSES", "UNITS", "LocationRecognizer"]

_HEAD_WORDS: Final = (
    "facility_heads_generic",
    "facility_heads_named",
    "facility_heads_strong",
    "facility_head_fillers",
    "facility_generic_modifiers",
    "facility_services",
    "care_units",
)
# the vocabulary of the cue passes: what comes before the cue, and after it
_BEFORE_CUE: Final = (
    "place_move_verbs",
    "place_residence_words",
    "place_travel_verbs",
    "place_return_verbs",
    "place_people",
)
_CUE_WORDS: Final = _BEFORE_CUE + (
    "place_suffixes",
    "care_units",
    "facility_unit_after",
    "facility_clause_words",
    "dose_after",
)


def _facility_head(note: Note, h: int) -> Span | None:
    """The name words before a facility head: "Ashcott Hospital", "X Medical Center"."""
    words = note.words
    tok = words[h]
    if tok.lower == "home" and (h == 0 or words[h - 1].lower != "nursing"):
        return None  # "home" heads a name only as "Nursing Home"
    # a capitalised head in a lower-case note reads as in a mixed-case one
    cased = note.mixed or (note.case is Case.LOWER and tok.is_title)
    found = facility(words, h, note.text, cased)
    return None if found is None else trailing_modifier(note, h, found)


def _university_of(note: Note, c: int) -> Span | None:
    """ "University of X", "U of X": the university's (hospital's) name."""
    words = note.words
    if c == 0 or c + 1 >= len(words) or words[c - 1].lower not in UNIVERSITY:
        return None
    return university_of(words, c, note.text, note.mixed)


def _region(note: Note, h: int) -> Span | None:
    """ "the Eastern Shore", "the west coast": a region named by a compass word."""
    return region(note.words, h, note.text, note.mixed)


def _plan_floor(note: Note, h: int) -> Span | None:
    """ "Plan: Xyzward 2": a building and its floor after "Plan:"."""
    words, text = note.words, note.text
    if h + 1 >= len(words) or text[words[h].end : words[h + 1].start].strip() != ":":
        return None
    return building_floor(words, h + 1, text, note.mixed)


def _acronym_unit(note: Note, h: int) -> Span | None:
    """ "XYZ ER", "XYZ cath lab": an unknown acronym before an emergency department."""
    words = note.words
    if h == 0:
        return None
    if words[h].lower == "floor":
        return _acronym_floor(note, h)
    if words[h].lower == "cath" and (h + 1 >= len(words) or words[h + 1].lower != "lab"):
        return None
    return acronym_before_unit(words, h, note.text, note.mixed)


def _acronym_floor(note: Note, h: int) -> Span | None:
    """ "came from och floor", "transferred from XYZ floor": an unknown acronym before "floor"
    only after a movement verb and "from" / "to" (the strong cue); written in the note's case
    (capitals in a mixed-case note), no clinical abbreviation nor care unit ("micu floor")."""
    words, text = note.words, note.text
    if h < 3 or words[h - 2].lower not in {"from", "to"}:
        return None
    if MOVE_VERBS.isdisjoint(w.lower for w in words[max(0, h - 4) : h - 2]):
        return None
    tok = words[h - 1]
    if not (2 <= len(tok.text) <= 5 and tok.text.isalpha()) or tok.lower in UNITS:
        return None
    if tok.text.islower() if note.mixed else not (tok.text.islower() or tok.text.isupper()):
        return None
    if text[tok.end : words[h].start] != " " or not fa.lower_acronym_word(tok.lower):
        return None
    return Span(tok.start, tok.end, HOSPITAL, 0.7, "locations")


def _staff_acronym(note: Note, h: int) -> Span | None:
    """ "XYZ nurse", "XYZ attorneys": a rare acronym before a place's staff."""
    words = note.words
    if h == 0:
        return None
    prev = words[h - 1]
    short_caps = prev.is_upper and len(prev.lower) <= 4
    if prev.lower in NOT_PLACES or lx.zipf(prev.lower) >= (4.0 if short_caps else 3.3):
        return None
    return acronym_before_unit(words, h, note.text, note.mixed, staff=True)


def _saint(note: Note, h: int) -> Span | None:
    """ "St. Hildegard has a bed", "bed at St M.": a saint's name with no head noun."""
    case = note.case
    return saint_alone(note.words, h, note.text, upper=case is Case.UPPER, lower=case is Case.LOWER)


def _bed_offer(note: Note, h: int) -> Span | None:
    """ "Oakvale has a bed for him": a facility with no head noun that offers a bed."""
    return bed_offer(note.words, h, note.text, note.mixed)


def _titled(tok: lx.Token, case: Case) -> bool:
    """ "St" written as a name: Title case, or in the note's one case (capitals, lower case)."""
    return tok.is_title or (case is Case.UPPER and tok.is_upper) or case is Case.LOWER


@cache
def _state_words() -> frozenset[str]:
    """US states and "<state>'s", less the facility heads ("NH": the head pass has it)."""
    states = lx.us_states()
    return frozenset({*states, *(f"{s}'s" for s in states)}) - HEADS


def _state_gate(tok: lx.Token, case: Case) -> bool:
    """A state word starts nothing in a mixed-case note unless written as a name ("or", "me",
    "pa" in lower case are words)."""
    return case is not Case.MIXED or tok.is_title or tok.is_upper


def _before_state(note: Note, h: int) -> Span | None:
    """ "Middle River, MD", "Frostburg Maryland", "U Maryland": a city before its state;
    "western Maryland": a part of a state. The state comes after a comma or, spelled out, a
    space; a cue word the cue passes read ("in" with a word after it) is none."""
    words, text, mixed = note.words, note.text, note.mixed
    if h == 0 or (words[h].lower in CUES and h + 1 < len(words)):
        return None
    gap = text[words[h - 1].end : words[h].start]
    if gap != ", " and (gap != " " or len(words[h].lower) <= 2):
        return None
    return city_before_state(words, h, text, mixed) or compass_state(words, h, text, mixed)


FACILITY_HEAD: Final = Pass[Note, Span](
    "locations.facility_head", _facility_head, words=HEADS | {"home"}, before=5, after=2,
    vocabulary=_HEAD_WORDS, memo=True,
)  # fmt: skip
AFTER_CUE: Final = Pass[Note, Span](
    "locations.after_cue", cues.after_cue, words=CUES, before=6, after=5,
    vocabulary=(*_CUE_WORDS, "place_kin", "city_nicknames"), memo=True,
)  # fmt: skip
PASSES: Final = declare(
    Passes[Note, Span](
        "locations",
        [
            FACILITY_HEAD,
            Pass("locations.modifier_alone", modifier_alone, words=MODIFIERS | WEAK_MODIFIERS,
                 before=4, after=2, vocabulary=("facility_modifiers_alone",
                 "facility_modifiers_alone_weak", "facility_clause_words", "facility_unit_after")),
            Pass("locations.suffixed_town", suffixed_town, words=TOWN_CUES, before=3,
                 after=2, vocabulary=("place_suffixes", *_BEFORE_CUE)),
            AFTER_CUE,
            Pass("locations.university_of", _university_of, words=frozenset({"of"}), before=1,
                 after=1),
            Pass("locations.region", _region, words=REGION_WORDS, before=2),
            Pass("locations.building_floor", _plan_floor, words=frozenset({"plan"}), after=2,
                 vocabulary=("care_units", "dose_after")),
            Pass("locations.acronym_before_unit", _acronym_unit,
                 words=EMERGENCY | {"cath", "floor"}, before=4, after=1,
                 vocabulary=("care_units", "facility_generic_modifiers", "place_move_verbs")),
            Pass("locations.staff_acronym", _staff_acronym, words=STAFF, before=1,
                 vocabulary=("place_staff", "acronyms_not_places")),
            Pass("locations.saint", _saint, words=frozenset({"st", "saint"}), gate=_titled,
                 before=1, after=2),
            Pass("locations.bed_offer", _bed_offer, words=frozenset({"bed"}), before=5,
                 vocabulary=("care_units", "facility_services", "place_people")),
            Pass("locations.before_state", _before_state, anywhere=True, gate=_state_gate,
                 lexicon=_state_words, before=3),
        ],
    )
)  # fmt: skip


@cache
def _visited() -> frozenset[str]:
    """The words at which some pass may start (the trigger words and the states)."""
    words = PASSES.starting_words()
    if words is None:  # every ``anywhere`` pass declares its lexicon
        raise TypeError("a location pass tried anywhere declares no lexicon")
    return words


@cache
def _picked_words() -> frozenset[str]:
    """The words at which a pass or a facility phrase starts."""
    return _visited() | fp.head_words()


@register("locations")
class LocationRecognizer(Recognizer):
    """Hospitals and facilities (by head word or movement cue) and cities (after a cue)."""

    categories = frozenset({HOSPITAL, CITY, OTHER})

    def detect(self, doc: Doc) -> list[Span]:
        toks = lx.tokens(doc)
        text, mixed = doc.text, toks.mixed_case
        # places glued to a head or a number need no cue word
        out: list[Span] = glued_heads(text) + wards_with_numbers(doc, mixed)
        # hospital acronyms are told by their neighbours ("pls call XMH"), no trigger word
        out += fa.acronyms(toks, text, mixed)
        # a gazetteer name of common words where no other rule found a place (where one did,
        # its span and its convention on heads stand: "[Memorial] Hospital")
        named = gazetteer_names(toks.words, toks.lowers, text, mixed)
        lower_set = toks.lower_set
        if lower_set.isdisjoint(PASSES.triggers) and lower_set.isdisjoint(lx.us_states()):
            return out + _unfound(named, out)
        # the words at which a pass or a facility phrase starts, picked in one pass
        lowers = toks.lowers
        picked = positions_in(_picked_words(), lowers)
        heads = positions_in(fp.head_words(), lowers, picked)
        # whole facility names, head included unless the policy says otherwise
        # ("Sacred Heart Memorial Hospital"; option facility_heads = false: "Sacred Heart")
        with_head = bool(self.options.get("facility_heads", True))
        out += fp.facility_phrases(toks.words, lowers, text, mixed, stops(), with_head, heads)
        starts = positions_in(_visited(), lowers, picked)
        note = Note(toks.words, text, Case.of(toks), mixed, lowers)
        out += _passes_at(note, starts, toks.texts)
        return out + _unfound(named, out)


def _second_of_pair(note: Note, h: int, step: Pass[Note, Span], span: Span) -> Span | None:
    """A second place joined to the one a pass found at ``h``: "X and Y Hospitals" after a
    head, "family in LA and SF" after a cue (a town written short)."""
    words = note.words
    if step is FACILITY_HEAD:
        return facility_list(words, h, note.text, note.mixed)
    if step is not AFTER_CUE or span.category is not CITY or span.end - span.start > 3:
        return None
    k = next((k for k in range(h + 1, min(h + 3, len(words))) if words[k].end == span.end), None)
    return None if k is None else town_after_and(words, k, note.text, note.mixed)


def _unfound(spans: list[Span], found: list[Span]) -> list[Span]:
    """``spans`` that overlap none of ``found``."""
    return [s for s in spans if not any(f.start < s.end and s.start < f.end for f in found)]


def _passes_at(note: Note, starts: Iterable[int], texts: tuple[str, ...] = ()) -> list[Span]:
    """What the passes find at the words ``starts``: at each, the first pass that finds a
    place (a facility found by its head may have a second one joined to it: "X and Y").

    ``Passes.first`` written out for the loop's sake: the steps of every word looked up at
    once (of an ASCII note, from its words as written, ``texts``), and a short note's
    passes asked directly, as ``Passes.judged`` would."""
    out: list[Span] = []
    words, case = note.words, note.case
    at = list(starts)
    if note.text.isascii() and len(texts) == len(words):
        plans = PASSES.ascii_steps(list(map(texts.__getitem__, at)), case)
    else:
        plans = PASSES.steps_of(list(map(words.__getitem__, at)), case)
    judged = PASSES.judged
    remember = len(note.text) >= JUDGED_MIN_TEXT
    for h, steps in compress(zip(at, plans, strict=True), plans):
        for step in steps:
            span = judged(step, note, h, case) if remember and step.memo else step.run(note, h)
            if span is None:
                continue
            also = _second_of_pair(note, h, step, span)
            if also is not None:
                out.append(also)
            out.append(Passes.stamp(span, step))
            break
    return out
