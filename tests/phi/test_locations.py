"""Hospitals, facilities and cities; care units and clinical phrases stay untouched."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pipelines.phi.base import Doc
from pipelines.phi.recognizers.locations import LocationRecognizer
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category

LOCATIONS = LocationRecognizer()


def found(text: str) -> dict[str, Category]:
    spans = LOCATIONS.detect(Doc(text))
    return {text[s.start : s.end]: s.category for s in spans if s.confidence >= 0.5}


@pytest.mark.parametrize(
    ("text", "place", "category"),
    [
        ("Transferred from Pemberton Hospital for cath.", "Pemberton", Category.LOCATION_HOSPITAL),
        ("PT TO BE SENT TO WESTBROOK REHAB TOMORROW.", "WESTBROOK", Category.LOCATION_HOSPITAL),
        ("pt taken to pemberton hosp by ambulance", "pemberton", Category.LOCATION_HOSPITAL),
        (
            "Husband works at Fairview Memorial Hospital.",
            "Fairview Memorial",
            Category.LOCATION_HOSPITAL,
        ),
        ("Resident of Oakwood Nursing Home for 2 years.", "Oakwood", Category.LOCATION_HOSPITAL),
        (
            "Transferred from University of Vermont Medical Center.",
            "University of Vermont",
            Category.LOCATION_HOSPITAL,
        ),
        ("Arrived from BVMC ED via ambulance.", "BVMC", Category.LOCATION_HOSPITAL),
        ("Sent to Hollins ER for eval.", "Hollins", Category.LOCATION_HOSPITAL),
        ("will transfer to St. Brendan's tomorrow", "St. Brendan's", Category.LOCATION_HOSPITAL),
        ("She lives in Frostburg with her husband.", "Frostburg", Category.LOCATION_CITY),
        ("Daughter flying in from Denver tonight.", "Denver", Category.LOCATION_CITY),
        ("Family from Silver Spring, MD visited today.", "Silver Spring", Category.LOCATION_CITY),
        ("Pt admitted to U Vermont ER with chest pain.", "U Vermont", Category.LOCATION_HOSPITAL),
        ("Plan: transfer to Westerbrook 2 today.", "Westerbrook", Category.LOCATION_HOSPITAL),
        ("sent to XQH cath lab for PCI", "XQH", Category.LOCATION_HOSPITAL),
        (
            "wishes to return to St Brigid's after weaning",
            "St Brigid's",
            Category.LOCATION_HOSPITAL,
        ),
        ("Family drove in from the Eastern Shore.", "Eastern Shore", Category.LOCATION_OTHER),
        ("Her proxy lives in DC with her son.", "DC", Category.LOCATION_CITY),
        ('DAUGHTER ("FROM PHOENIX") IN TO VISIT.', "PHOENIX", Category.LOCATION_CITY),
        ("Oriented x3, knows she is in XQH, knows the date.", "XQH", Category.LOCATION_HOSPITAL),
        ("SEEN BY XQH NURSE FOR ARRANGEMENTS.", "XQH", Category.LOCATION_HOSPITAL),
        ("Had a heart transplant at Holy Carlisle.", "Holy Carlisle", Category.LOCATION_HOSPITAL),
    ],
)
def test_places(text: str, place: str, category: Category) -> None:
    assert found(text).get(place) is category


@pytest.mark.parametrize(
    "text",
    [
        "Admitted to MICU from CCU, then to the floor.",
        "Tolerating house diet, cardiac rehab to follow.",
        "HR returned to NSR, vent changed back to SIMV.",
        "Clot sent to BB, labs sent from A-line.",
        "Good diuresis from lasix 40 iv, Kerlix to L leg.",
        "Pt states he is in the hospital; health care proxy is wife.",
        "Lives in Maryland with his wife.",
        "OUTSIDE HOSPITAL RECORDS REVIEWED.",
        "Increased to lasix 2 mg iv, SIMV 12 on arrival.",
        "FOLEY CATH DRAINING WELL, received on PSV 10.",
        "Blood cultures sent from TLC and RA.",
        "cv: nsr to st hr 78-107, sr to st w/ pacs.",
        "HR is in NSR, remains in NAD. Swan is in RIJ.",
        "Amiodarone stopped per pulm team; NSG STAFF AWARE.",
    ],
)
def test_units_and_clinical_phrases_are_not_places(text: str) -> None:
    assert found(text) == {}


def test_a_place_named_once_is_found_again_in_the_note() -> None:
    """Found again by the detector's propagation step (``pipelines.phi.propagate``)."""
    from pipelines.phi.detector import Detector
    from pipelines.policy import Policy

    text = "Came from BVMC ED. Records from BVMC requested."
    detector = Detector(Policy(recognizers={"locations": {}}))
    assert [text[s.start : s.end] for s in detector.detect(Doc(text))] == ["BVMC", "BVMC"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_never_raises_and_spans_in_bounds(text: str) -> None:
    for span in LOCATIONS.detect(Doc(text)):
        assert 0 <= span.start < span.end <= len(text)
        assert span.category.group == "LOCATION"


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "to",
                "from",
                "transferred",
                "Hospital",
                "hosp",
                "Medical",
                "Center",
                "of",
                "University",
                "ER",
                "XYZ",
                "lives",
                "in",
                "Denver",
                ",",
                "MD",
                "\n",
                "St.",
                "2",
            ]
        ),
        max_size=40,
    )
)
def test_cue_soup_never_raises(parts: list[str]) -> None:
    text = " ".join(parts)
    for span in LOCATIONS.detect(Doc(text)):
        assert 0 <= span.start < span.end <= len(text)


# --- places in positions without a usual head or cue ---------------------------------------


@pytest.mark.parametrize(
    ("text", "place", "category"),
    [
        ("knows she is in General Hospital in Quondale.", "Quondale", Category.LOCATION_CITY),
        ("pt knows she is in General Hospital today", "General", Category.LOCATION_HOSPITAL),
        ("GOT A CONSULT FROM THE QXBH. SPOKE WITH TEAM.", "QXBH", Category.LOCATION_HOSPITAL),
        (
            "SCREENED BY WESTBROOK REHAB AND ZANDERLY. MAY GO",
            "ZANDERLY",
            Category.LOCATION_HOSPITAL,
        ),
        ("FOUND AT HOME IN FROSTBURG HEIGHTS BY EMS", "FROSTBURG HEIGHTS", Category.LOCATION_CITY),
        ("pt transferred to 412 quillmore.", "quillmore", Category.LOCATION_HOSPITAL),
        ("Daughter returned to new haven today.", "new haven", Category.LOCATION_CITY),
        ("Plan to wait until QH attorneys review it.", "QH", Category.LOCATION_HOSPITAL),
        ("I'm in QH and it is 2019.\"", "QH", Category.LOCATION_HOSPITAL),
        ("PLAN: TO QUARTERBY 2 WHEN BED AVAIL.", "QUARTERBY", Category.LOCATION_HOSPITAL),
        ('knows he is in the hospital ("ZelmontBuilding")', "Zelmont", Category.LOCATION_HOSPITAL),
    ],
)
def test_places_without_a_usual_cue(text: str, place: str, category: Category) -> None:
    assert found(text).get(place) is category


@pytest.mark.parametrize(
    "text",
    [
        "titrated ntg to 100mcgs, map > 70",  # a dose glued to its unit
        "NTG WEANED TO 67MCG'S, CORDIS CHANGED TO 3LCVL",
        "afebrile on 3 ivab.",  # "on" a number of drugs
        "TV'S 500. RETURNED TO SIMV.",  # a ventilator mode after "returned to"
        "RCA 90% occ at PDA and PLB.",  # coronary branches
        "Seen by ID. Plan to continue Zosyn and Flagyl.",
    ],
)
def test_place_traps_for_the_looser_rules(text: str) -> None:
    assert found(text) == {}


@pytest.mark.parametrize(
    ("text", "place", "category"),
    [
        ("ADDENDUM- DAUGHER FROM PHOENIX JUST CALLED", "PHOENIX", Category.LOCATION_CITY),
        ("Plan: transfer to Quellmoor3 today.", "Quellmoor", Category.LOCATION_HOSPITAL),
        ("Family from western Maryland visited.", "western Maryland", Category.LOCATION_OTHER),
        ("Seen by Team. Wife lives in frostburg, HR 80 NSR.", "frostburg", Category.LOCATION_CITY),
    ],
)
def test_places_after_slips_digits_and_compass_words(
    text: str, place: str, category: Category
) -> None:
    assert found(text).get(place) is category


@pytest.mark.parametrize(
    "text",
    [
        "Seen by Team. Titrated Levophed5 mcg. HR 80 NSR.",  # a drug glued to its dose
        "Seen by Team. Wife lives in fear of falls, HR 80 NSR.",  # a word, not a city
        "Family from west MD visited.",  # no part of a state without its name
    ],
)
def test_slip_digit_and_compass_traps(text: str) -> None:
    assert not any(k in {"Levophed", "fear", "west MD"} for k in found(text))


def test_a_city_found_by_a_sure_cue_recurs_although_it_is_a_common_word() -> None:
    text = "SISTER IS LIVING IN PHOENIX. SON FROM PHOENIX CALLED. WILL FLY FROM PHOENIX."
    spans = LOCATIONS.detect(Doc(text))
    assert [text[s.start : s.end] for s in spans] == ["PHOENIX"] * 3


def test_a_multi_word_place_recurs_in_the_note() -> None:
    text = "Pt went to Holy Carlisle with fever. Records from Holy Carlisle requested."
    spans = LOCATIONS.detect(Doc(text))
    assert [text[s.start : s.end] for s in spans] == ["Holy Carlisle", "Holy Carlisle"]
    # a lower-case "holy carlisle" in a mixed-case note is no place by itself
    assert len(LOCATIONS.detect(Doc(text + " holy carlisle"))) == 2


def test_a_ward_glued_to_its_floor_needs_no_cue() -> None:
    assert found("QUELLMOOR3 DEVELOPED CHEST PAIN, MORPHINE GIVEN.") == {
        "QUELLMOOR": Category.LOCATION_HOSPITAL
    }
    # counts ("x2"), drugs with doses and lab values glued to numbers are no wards
    assert found("ABSx4. Stoolsx2 today. REDO CABGX2 USING SVG. Levophed5 mcg. lasix40 iv") == {}


def _acronyms_reference(text: str) -> list[tuple[int, int]]:
    """``facility_phrases.hospital_acronyms`` as it was: the scan run over the whole note."""
    from bisect import bisect_left
    from operator import attrgetter

    from pipelines.phi import lexicons as lx
    from pipelines.phi.recognizers import facility_acronyms as fp

    toks = lx.tokens(Doc(text))
    if not toks.mixed_case:
        return []
    words, out = toks.words, []
    for m in fp._acronym_scan().finditer(text):
        k = bisect_left(words, m.start(), key=attrgetter("start"))
        if k >= len(words) or words[k].start != m.start() or words[k].end != m.end():
            continue
        tok, low = words[k], words[k].lower
        if not 3 <= len(low) <= 6 or low in word_set("clinical_acronyms"):
            continue
        if lx.zipf(low) >= 3.5:
            continue
        gap = text[words[k - 1].end : tok.start] if k > 0 else ""
        prev = words[k - 1].lower if k > 0 else ""
        cue = (
            (gap == " " and prev in fp._acronym_cues())
            or (gap == ", " and words[k - 1].is_title)
            or (gap in {": ", " - "} and prev in word_set("hospital_acronym_labels"))
        )
        after = (
            k + 1 < len(words)
            and "\n" not in text[tok.end : words[k + 1].start]
            and words[k + 1].lower in fp._acronym_after()
        )
        if cue or after:
            out.append((tok.start, tok.end))
    return out


_BEFORE = (
    "", " ", "2", "_", "é", "'", " at ", " from the ", ", ", "Dr. Quill, ", "\n", " pls call ",
    " Hospital: ", "Facility - ", " in ",
)  # fmt: skip
_ACRONYM = ("XYZMC", "XRMC", "ABMH", "QCH", "MC", "ABCDEMC", "Xyzmc", "AB'MC", "Seen", "the", "pt")
_AFTER = (
    "",
    " ER",
    "'s",
    "2",
    "_",
    "é",
    " icu",
    ".",
    ",",
    " and",
    " called",
    "\ncardiology",
    " records",
)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_BEFORE), st.sampled_from(_ACRONYM), st.sampled_from(_AFTER)),
        max_size=8,
    )
)
def test_hospital_acronyms_match_a_scan_of_the_whole_note(
    parts: list[tuple[str, str, str]],
) -> None:
    from pipelines.phi import lexicons as lx
    from pipelines.phi.recognizers import facility_acronyms as fp

    text = "Seen today. " + "".join(b + w + a for b, w, a in parts)
    toks = lx.tokens(Doc(text))
    got = [(s.start, s.end) for s in fp.hospital_acronyms(toks, text, toks.mixed_case)]
    assert got == _acronyms_reference(text)
    upper, lower = fp._shaped(toks.written)  # the one scan picks the words the tests pick
    assert upper == fp._upper_shaped(toks.written)
    assert lower == fp._lower_shaped(toks.written)


@pytest.mark.parametrize(
    "words",
    [
        ["Seen", "at", "XYZMC", "XH", "XMH's", "xmh", "och", "abcdmc", "mc", "ABCDEMC", "Q"],
        ["Seen", "at", "ÉMC", "\ufb00mc", "xrmc", "XRMC", "ıch"],  # beyond ASCII: per word
    ],
)
def test_acronym_shapes_picked_in_one_scan(words: list[str]) -> None:
    from pipelines.phi.recognizers import facility_acronyms as fa

    written = frozenset(words)
    assert fa._shaped(written) == (fa._upper_shaped(written), fa._lower_shaped(written))


_PLACE_WORDS = ("Holy", "Cross", "holy", "CROSS", "Frostburg", "frostburg", "Rome", "icu")

_CUE_GAPS = (" ", " ", " ", " ", ", ", ". ", "\n", " 2 ", "3 ", "  ", " 209 ", ": ", "-", "'")


def _cue_words(*words: str, most: int) -> st.SearchStrategy[str]:
    """Up to ``most`` of ``words``, each followed by a gap."""
    pair = st.tuples(st.sampled_from(words), st.sampled_from(_CUE_GAPS)).map("".join)
    return st.lists(pair, max_size=most).map("".join)


# a cue with the words a rule reads around it: a verb or a relative up to seven words before
# it, an article, a place of up to three words and the word after it (a head, a suffix)
_cue_text = st.tuples(
    _cue_words(
        *("flew", "lives", "sent", "transferred", "daughter", "returned", "visiting", "home"),
        most=1,
    ),
    _cue_words(*("today", "was", "Medical", "blood", "drawn", "is", "pt", "Smith"), most=7),
    st.sampled_from(("to ", "from ", "in ", "at ", "of ", "on ", "leave ", "From ", "IN ")),
    st.sampled_from(("", "", "the ", "The ")),
    _cue_words(
        *("Rome", "Mobile", "Boston", "Paris", "Silver", "Spring", "new", "haven", "Reading"),
        *("XQH", "St", "Mary's", "Xyzward", "Italy", "DC", "icu", "Holy", "Cross", "Frostburg"),
        *("MD", "Dover", "Hospital", "Medical", "xyzward", "Lafox", "Smith", "Marion", "the"),
        most=3,
    ),
    _cue_words(
        *("Heights", "Hospital", "ER", "Center", "and", "for", "mg", "area", "today", "Park"),
        most=3,
    ),
).map("".join)


_FILLER = "He was seen today and then "
_TAIL = " and went home later that day."


def _window_verdicts(text: str, heads: bool) -> dict[int, tuple[Any, Any, int]]:
    """Start of each cue (or head) with a whole window -> its key (the case and the window
    text), its verdict and its start, both relative to the window."""
    from pipelines.phi import lexicons as lx
    from pipelines.phi.passes import Case
    from pipelines.phi.recognizers import locations as loc
    from pipelines.phi.recognizers.location_words import Note

    toks = lx.tokens(Doc(text))
    case = Case.of(toks)
    note = Note(toks.words, text, case, toks.mixed_case)
    step = loc.PASSES.by_name["locations.facility_head" if heads else "locations.after_cue"]
    words, out = toks.words, {}
    for c in range(len(words) - 1):
        lo, hi = c - step.before, c + step.after + 1
        if lo < 0 or hi > len(words) or not step.starts_at(words[c], case):
            continue
        origin = words[lo].start
        key = text[origin : words[hi - 1].end]
        span = step.run(note, c)
        moved = span and (span.start - origin, span.end - origin, span.category)
        out[words[c].start] = ((case, key), moved, words[c].start - origin)
    return out


def _window_keeps_its_verdicts(middle: str, left: str, right: str, left2: str, right2: str,
                               case: str, heads: bool) -> None:  # fmt: skip
    def cased(text: str) -> str:
        return text.upper() if case == "u" else text.lower() if case == "l" else text

    text = cased(_FILLER + left + middle + right + _TAIL)
    prefix = cased(_FILLER + left2).rstrip("'’") + " "
    for key, verdict, at in _window_verdicts(text, heads).values():
        there = _window_verdicts(prefix + key[1] + cased(right2), heads).get(len(prefix) + at)
        if there is not None and there[0] == key:
            assert there[1] == verdict


@settings(max_examples=400, deadline=None)
@given(_cue_text, _cue_text, _cue_text, _cue_text, _cue_text, st.sampled_from(("", "u", "l")))
# the farthest reads: a travel verb six words back, a facility head five words on (and what
# ends that word: "Hospital's" is no head)
@example("flew today was blood drawn pt in Boston today", "", "", "", "", "")
@example("transferred from the West Palm Beach Hospital's", "", "", "", "", "")
@example("transferred from the West Palm Beach Hospital", "", "", "", "'s", "")
@example("transferred from the West Palm Beach Hospital", "", "", "", " ", "")
@example("transferred from the West Palm Beach Hospital", "", "", "", "x", "")
def test_a_cue_verdict_depends_on_its_window_only(
    middle: str, left: str, right: str, left2: str, right2: str, case: str
) -> None:
    """What ``_judged`` keeps per window is sound: the rules behind a cue, with its window
    moved into other surroundings, give the same verdict there."""
    _window_keeps_its_verdicts(middle, left, right, left2, right2, case, heads=False)


_head_text = st.tuples(
    _cue_words(
        *("University", "of", "St", "Mary's", "Sacred", "Heart", "Smith", "outside", "the"),
        *("Calvert", "medical", "Medical", "Vermont", "pain", "Frostburg", "nursing", "to"),
        most=6,
    ),
    st.sampled_from(("Hospital", "hospital", "Center", "House", "Health", "General", "Rehab")),
    st.sampled_from((" ", ".", ", ", " NH", " Hospital", " diet", "\n")),
).map("".join)


@settings(max_examples=400, deadline=None)
@given(_head_text, _head_text, _head_text, _head_text, _head_text, st.sampled_from(("", "u", "l")))
@example("at University of Vermont Medical Center", "", "", "", "", "")
@example("at the Sisters of Mercy Hospital", "", "", "", "", "")
@example("at Smith House", "", "", "", " NH", "l")
def test_a_head_verdict_depends_on_its_window_only(
    middle: str, left: str, right: str, left2: str, right2: str, case: str
) -> None:
    """As above for the name words before a facility head (``_facility``)."""
    _window_keeps_its_verdicts(middle, left, right, left2, right2, case, heads=True)


@settings(max_examples=200, deadline=None)
@given(_cue_text, _cue_text, _cue_text, _cue_text, _cue_text, st.sampled_from(("", "u", "l")))
def test_verdicts_kept_per_window_match_the_rules(
    left: str, middle: str, right: str, left2: str, right2: str, case: str
) -> None:
    """Verdicts kept per stretch of text (``_judged``) are the rules' own verdicts, in notes
    that share the stretch but not what is around it."""
    from pipelines.memo import memos
    from pipelines.phi import lexicons as lx
    from pipelines.phi import passes

    for text in (left + middle + right, left2 + middle + right2):
        text = text.upper() if case == "u" else text.lower() if case == "l" else text
        toks = lx.tokens(Doc(text))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(passes, "JUDGED_MIN_TEXT", 0)  # kept for short notes too
            kept = LOCATIONS.detect(Doc(text))
            with memos(False):
                assert kept == LOCATIONS.detect(Doc(text)), toks.mixed_case


_FACILITY_WORDS = (
    *("Sacred", "Heart", "Memorial", "Hospital", "Medical", "Center", "of", "Michigan", "the"),
    *("Calvert", "county", "hospital", "Nursing", "Home", "and", "St", "Agnes", "or", "to"),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_FACILITY_WORDS), st.sampled_from((" ", " ", ". ", ", ", "-"))),
        max_size=14,
    ),
    st.booleans(),
)
def test_facility_phrases_at_the_picked_heads_match_a_scan_of_every_word(
    parts: list[tuple[str, str]], with_head: bool
) -> None:
    """``detect`` hands ``facility_phrases`` the head words it picked in its own pass."""
    from itertools import compress

    from pipelines.phi import lexicons as lx
    from pipelines.phi.recognizers import facility_phrases as fp
    from pipelines.phi.recognizers import locations as loc
    from pipelines.phi.recognizers.location_words import stops as stop_words

    text = "".join(w + g for w, g in parts)
    toks = lx.tokens(Doc(text))
    words, lowers, mixed = toks.words, toks.lowers, toks.mixed_case
    picked = list(compress(range(len(words)), map(loc._picked_words().__contains__, lowers)))
    heads = [i for i in picked if lowers[i] in fp.head_words()]
    stops = stop_words()
    assert fp.facility_phrases(words, lowers, text, mixed, stops, with_head, heads) == (
        fp.facility_phrases(words, lowers, text, mixed, stops, with_head)
    )


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_FACILITY_WORDS + _PLACE_WORDS + ("x", "o'neil", "lasix", "walking")))
def test_facility_name_words_judged_once_per_word_match_the_rule(word: str) -> None:
    from pipelines.phi import lexicons as lx
    from pipelines.phi.recognizers import facility_phrases as fp

    tok = lx.tokens(Doc(word)).words[0]
    for cased in (False, True):
        assert fp._names(tok, cased) == fp._names_word(tok.lower, cased)
        assert fp._names(tok, cased) == fp._names(tok, cased)


_STATE_TEXT_WORDS = (
    "or", "OR", "Or", "me", "Maryland", "MARYLAND", "maryland", "va", "VA", "Va", "pa",
    "Frostburg", "Middle", "River", "western", "Western", "U", "univ", "in", "to", "from",
    "Hospital", "the", "Seen", "today", "X", "oregon's", "Oregon's",
)  # fmt: skip
_STATE_SEPARATORS = (" ", " ", ", ", ". ", "\n", "-")


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_STATE_TEXT_WORDS), st.sampled_from(_STATE_SEPARATORS)),
        max_size=14,
    )
)
def test_the_state_gate_leaves_out_only_words_its_passes_refuse(
    parts: list[tuple[str, str]],
) -> None:
    """The state pass's gate (a mixed-case note's state words written as names) refuses only
    words where the pass, run anyway, finds nothing; and every word the driver tries it at
    is among the words ``detect`` visits."""
    from pipelines.phi import lexicons as lx
    from pipelines.phi.passes import Case
    from pipelines.phi.recognizers import locations as loc
    from pipelines.phi.recognizers.location_words import Note

    step = loc.PASSES.by_name["locations.before_state"]
    text = "Seen today by the team. " + "".join(w + s for w, s in parts)
    for written in (text, text.lower(), text.upper()):
        toks = lx.tokens(Doc(written))
        case = Case.of(toks)
        note = Note(toks.words, written, case, toks.mixed_case)
        for i, tok in enumerate(toks.words):
            if step.starts_at(tok, case):
                assert tok.lower in loc._visited()
            elif tok.lower in loc._state_words():
                assert step.run(note, i) is None, (written, tok.text)


_HEAD_WORDS = ("Medical", "Center", "center", "Nursing", "Home", "Hospital", "and", "of", "X")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_HEAD_WORDS), st.sampled_from([" ", " ", "  ", "-", ", "])),
        min_size=1,
        max_size=8,
    )
)
def test_head_phrases_are_found_as_by_their_words(parts: list[tuple[str, str]]) -> None:
    """``_head_at`` compares a slice of lower-case forms; it finds what comparing each
    word's lower-case form finds."""
    from pipelines.phi import lexicons as lx
    from pipelines.phi.recognizers import facility_phrases as fp

    text = "".join(w + g for w, g in parts)
    toks = lx.tokens(Doc(text))
    words = toks.words
    for i in range(len(words)):
        expected = None
        for phrase in fp._heads().get(words[i].lower, ()):
            k = i + len(phrase)
            part = words[i:k]
            gaps = [text[a.end : b.start] for a, b in zip(part, part[1:], strict=False)]
            if k <= len(words) and tuple(w.lower for w in part) == phrase and set(gaps) <= {" "}:
                expected = k - 1
                break
        assert fp._head_at(words, toks.lowers, i, text) == expected
    assert fp._modifiers() == word_set("facility_modifiers") | word_set("facility_services")


def test_the_passes_declare_what_the_loop_visits() -> None:
    """The visited words derive from the declarations: the trigger words and the states of
    the state pass's lexicon (less "NH", which the head pass has); a lexicon belongs to a
    pass tried anywhere; every span names its pass."""
    from pipelines.phi import lexicons as lx
    from pipelines.phi.passes import Pass
    from pipelines.phi.recognizers import locations as loc

    visited = loc.PASSES.starting_words()
    assert visited is not None
    assert loc.PASSES.triggers <= visited and {"maryland", "md", "oregon's"} <= visited
    assert "nh" in loc.PASSES.triggers and "nh" not in loc._state_words()
    states = set(lx.us_states())
    assert visited == loc.PASSES.triggers | states | {f"{s}'s" for s in states}
    with pytest.raises(ValueError, match="lexicon"):
        Pass("locations.x", loc._saint, words=frozenset({"st"}), lexicon=loc._state_words)
    text = "Transferred from Pemberton Hospital to St. Hildegard; lives in Frostburg, MD."
    sources = {s.source for s in LOCATIONS.detect(Doc(text))}
    assert sources and all(s.split(".")[0] == "locations" and "." in s for s in sources)
    assert sources <= {p.name for p in loc.PASSES.passes} | {
        "locations.facility_phrase", "locations.hospital_acronym", "locations.propagated",
        "locations.glued_head", "locations.ward_number", "locations.facility_list",
    }  # fmt: skip
