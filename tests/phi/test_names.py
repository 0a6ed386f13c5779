"""Names from context: providers, relatives, patients; clinical traps stay untouched."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.document import Identifiers, PersonName
from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers.names import NameRecognizer
from pipelines.spans import Category

NAMES = NameRecognizer()


def found(text: str, identifiers: Identifiers | None = None) -> dict[str, Category]:
    doc = Doc(text, identifiers or Identifiers())
    return {text[s.start : s.end]: s.category for s in NAMES.detect(doc) if s.confidence >= 0.5}


@pytest.mark.parametrize(
    ("text", "name", "category"),
    [
        ("Seen by Dr. Okonkwo this am, plan discussed.", "Okonkwo", Category.NAME_PROVIDER),
        ("per dr hadley, lasix 40 iv given.", "hadley", Category.NAME_PROVIDER),
        ("SPOKE WITH DR. BRENNAN RE: PLAN.", "BRENNAN", Category.NAME_PROVIDER),
        ("Plan discussed with Dr. Will Harcourt.", "Will Harcourt", Category.NAME_PROVIDER),
        ("Report given to Ellen Whitcombe, RN", "Ellen Whitcombe", Category.NAME_PROVIDER),
        ("E. Kowalczyk aware of K 3.1, repleted.", "E. Kowalczyk", Category.NAME_PROVIDER),
        ("Wife Margaret called twice overnight.", "Margaret", Category.NAME_RELATIVE),
        ("Daughter, Philippa, updated by phone.", "Philippa", Category.NAME_RELATIVE),
        ("social: son bartholomew in to visit.", "bartholomew", Category.NAME_RELATIVE),
        ("DISCUSSED WITH DAUGHTER ROSALIND TODAY.", "ROSALIND", Category.NAME_RELATIVE),
        ("Mrs. Castellano is a 70 yo woman with CHF.", "Castellano", Category.NAME_PATIENT),
        ("Ms. T. refused her meds.", "T", Category.NAME_PATIENT),
        ("Call Bartholomew Quist (son) at home.", "Bartholomew Quist", Category.NAME_RELATIVE),
        ("Family at bedside. Henrietta is family contact.", "Henrietta", Category.NAME_RELATIVE),
        (
            "Team has spoken extensively with Radomir Okafor today.",
            "Radomir Okafor",
            Category.NAME_OTHER,
        ),
        ("pt resting. mrs. Park ate well.", "Park", Category.NAME_PATIENT),
    ],
)
def test_names_from_cues(text: str, name: str, category: Category) -> None:
    assert found(text).get(name) is category


def test_name_lists_after_one_cue() -> None:
    got = found("drs. lindqvist and abernathy at bedside. Sons Tobias and Reginald in.")
    assert got == {
        "lindqvist": Category.NAME_PROVIDER,
        "abernathy": Category.NAME_PROVIDER,
        "Tobias": Category.NAME_RELATIVE,
        "Reginald": Category.NAME_RELATIVE,
    }


def test_a_name_found_once_is_found_again_in_the_note() -> None:
    from pipelines.phi.detector import Detector
    from pipelines.policy import Policy

    text = "Daughter Ottoline called. Later Ottoline visited with her husband."
    spans = Detector(Policy(recognizers={"names": {}})).detect(Doc(text))  # its propagation
    assert [(text[s.start : s.end], s.category) for s in spans] == [
        ("Ottoline", Category.NAME_RELATIVE),
        ("Ottoline", Category.NAME_RELATIVE),
    ]


def test_signature_line_at_the_end_of_a_note() -> None:
    assert "Harriet Quimby" in found("Pt resting comfortably, no complaints.\n Harriet Quimby\n")


@pytest.mark.parametrize(
    "text",
    [
        "Foley catheter draining clear urine; Foley to be changed.",
        "Hx of Parkinson's disease and Hodgkin lymphoma, Hickman line in place.",
        "Swan-Ganz catheter in place, wedge 18.",
        "Patient states pain 4/10. MORPHINE 2 MG IV GIVEN.",
        "Haldol 5 mg IV for agitation; Lasix 20 mg given.",
        "Transferred from MICU to CCU, Kerlix dressing changed.",
        "Mr. pt is resting, MS: alert and oriented.",
        "MD aware. RN to follow. Will continue to monitor, may need lasix.",
        "R Hickman flushed. L ALINE CORRELATING WELL.",
        "Family from Silver Spring, MD visited today.",
        "pt seen by PT and OT, son will call in am.",
    ],
)
def test_clinical_traps_are_not_names(text: str) -> None:
    assert found(text) == {}


def test_eponym_context_vetoes_the_word_for_the_whole_note() -> None:
    text = "Foley catheter placed. FOLEY DRAINING WELL. Foley output 40 cc."
    assert found(text) == {}
    # ... but a title still makes it a person
    assert found("Foley catheter placed, Dr. Foley aware.") == {"Foley": Category.NAME_PROVIDER}


def test_known_patient_names_give_the_role() -> None:
    ids = Identifiers(patient_names=(PersonName(family="Quennell", given=("Ada",)),))
    assert found("Spoke with Ada Quennell about the plan.", ids) == {
        "Ada Quennell": Category.NAME_PATIENT
    }


def test_spans_never_include_the_possessive() -> None:
    text = "plan per Dr. Abernathy's note"
    spans = NAMES.detect(Doc(text))
    assert [text[s.start : s.end] for s in spans] == ["Abernathy"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_never_raises_and_spans_in_bounds(text: str) -> None:
    for span in NAMES.detect(Doc(text)):
        assert 0 <= span.start < span.end <= len(text)
        assert span.category.is_name


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "Dr.",
                "dr",
                "wife",
                "son",
                "RN",
                "per",
                "J.",
                "Smith",
                "SMITH",
                "and",
                ",",
                "\n",
                "Foley",
                "catheter",
                "Mr.",
                "aware",
                "Ms.",
                "x",
                "'s",
                "-",
                "MD",
            ]
        ),
        max_size=40,
    )
)
def test_cue_soup_never_raises(parts: list[str]) -> None:
    text = " ".join(parts)
    for span in NAMES.detect(Doc(text)):
        assert 0 <= span.start < span.end <= len(text)


# --- rules for names that a one-case note or a missing cue hides ---------------------------


@pytest.mark.parametrize(
    ("text", "name"),
    [
        # a word English never uses, after a role in parentheses (one-case note)
        ("PLAN FOR TAP...ZORBIK QUELLAMOTT (RESIDENT) WORKING ON IT.", "QUELLAMOTT"),
        # initial + unknown surname in an all-caps note
        ("RN IN TO HELP AND T. VRANDOSKI PLACING A STITCH", "T. VRANDOSKI"),
        # a first name far more a name than a word, inside a sentence
        ("son here all day, supportive to pt, Robert. Plan unchanged.", "Robert"),
        ('S: "Dorothy, I know where I am." O: calm', "Dorothy"),
    ],
)
def test_names_without_a_usual_cue(text: str, name: str) -> None:
    assert any(name in k for k in found(text))


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("DR QUILLBY NOTIFED AND PT RECIEVED 1MG IV", "NOTIFED"),  # a typo, not a surname
        ("ON LIPOSOMAL AMPHO B. AWATING ID CONSULT", "AWATING"),  # a drug's letter + a typo
        ("CONSULT TO DERTERMINE IF COLONIZED", "DERTERMINE"),
        ("son: presnt till 2100, updated.", "presnt"),
        ("WIFE ZOSYN STARTED", "ZOSYN"),  # a drug after a role word
        ("Will continue plan. Rose to 38.2 overnight, tylenol given.", "Rose"),  # words
        ("Robert's diet advanced.", "Robert"),  # at a sentence start the capital says nothing
        ("Opens eyes when turned. Mae spontaneously. Pupils brisk.", "Mae"),  # moves all ext.
    ],
)
def test_names_traps_for_the_looser_rules(text: str, word: str) -> None:
    assert not any(word in k for k in found(text))


def test_kinship_words_with_a_typing_slip_still_cue_a_name() -> None:
    assert found("husabnd Gerald called twice.").get("Gerald") is Category.NAME_RELATIVE
    assert not found("NO BOTHER TO HIM, PT COMFORTABLE")  # "bother" is a word, not a slip


def test_first_name_before_a_surname_taken_before_a_role() -> None:
    assert "DICK QUELLAMOTT" in found("TAP DONE...DICK QUELLAMOTT (RESIDENT) AWARE.")


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Seen by Team. Later lisa kowalski in to visit, BP stable, HR 80 NSR.", "lisa kowalski"),
        ("RN AND J. HARTWELL IN TO SEE PT", "J. HARTWELL"),
    ],
)
def test_full_names_and_initials_without_cues(text: str, name: str) -> None:
    assert name in found(text)


@pytest.mark.parametrize(
    "text",
    [
        "Seen by Team. Will draw labs, mark time on chart. HR 80 NSR.",  # words, not names
        "Seen by Team. Pt on heparin, bill paid by family. HR 80 NSR.",
        "ON AMPHO B. HARTWELL IN TO SEE PT",  # a drug's letter is no initial
    ],
)
def test_full_name_traps(text: str) -> None:
    assert not any(k in {"mark time", "bill paid", "B. HARTWELL"} for k in found(text))


_LOWER_NOTE = (
    "neuro: pt lethargic, yet arousable, oriented x3, cooperative with care and mae. resp: ls "
    "clear, rr in the 20s, on 3l nc with sats above 94 percent. pt seen by team today, "
)


def test_initial_and_rare_surname_in_a_lower_case_note() -> None:
    assert "m. quellamott" in found(_LOWER_NOTE + "m. quellamott placed a stitch.")
    assert not found(_LOWER_NOTE + "pt.got v.agitat, calm now. pt got v. agitatd.")


def test_common_first_name_and_surname_in_an_all_caps_note() -> None:
    text = "PT RESTING IN BED. JOHN KOWALSKI IN TO VISIT. MORPHINE 2 MG IV GIVEN FOR PAIN."
    assert "JOHN KOWALSKI" in found(text)
    assert not found("PT RESTING IN BED. WILL CONTINUE PLAN. MORPHINE 2 MG IV GIVEN FOR PAIN.")


def test_names_joined_by_a_slash_after_a_title() -> None:
    got = found("Seen by Drs. Okonkwo/Lindqvist today, plan discussed.")
    assert "Okonkwo" in got and "Lindqvist" in got
    assert "Neuro" not in found("Seen by Dr. Okonkwo/Neuro today; d/c foley.")


def test_a_clinical_letter_with_a_period_is_no_initial_in_a_one_case_note() -> None:
    assert not found(_LOWER_NOTE + "r > l. perl 3mm bilaterally and brisk.")


def test_an_everyday_word_surname_after_dr_in_a_one_case_note() -> None:
    text = "spoke with dr okonkwo and dr white today about options. pt comfortable, family here."
    assert found(text).get("white") is Category.NAME_PROVIDER
    traps = "DR WILL SEE PT IN AM. DR MAY CHANGE ORDERS. DR AWARE. DR CALL BACK. DR CHECK LABS."
    assert found(traps) == {}


def test_a_possessive_kinship_word_before_name_is() -> None:
    text = "PT RESTING. DAUGHTER'S NAME IS ROSALIND, SHE CALLED. HR 80 NSR."
    assert found(text) == {"ROSALIND": Category.NAME_RELATIVE}
    assert found("PT RESTING. WIFE'S CONCERNS ADDRESSED. HR 80 NSR.") == {}


def _plausible_reference(tok: Token, mixed: bool, strength: int, lowered: frozenset[str]) -> bool:
    """``name_words._plausible`` as it was written before its per-word memo."""
    from pipelines.phi.recognizers.name_cues import _RARE
    from pipelines.phi.recognizers.name_words import _base

    word = _base(tok.lower)
    if len(word) < 2:
        return False
    if len(word) < 3 and strength < 3 and not (mixed and tok.is_title and lx.is_first_name(word)):
        return False
    f = lx.zipf(word)
    ns = lx.name_score(word)
    named = ns > -9.0
    titled = tok.is_title or (tok.is_upper and not mixed)
    if mixed:
        if not (tok.is_title or tok.is_upper):
            return strength >= 3 and ((named and f < 5.6) or f < _RARE)
        if tok.is_upper and len(word) < 4 and strength < 3:
            return False
        if word in lowered and strength < 3:
            return False
    if strength >= 3:
        if named:
            if f >= 4.5 and ns < -0.5 and not (mixed and titled):
                return False
            return f < 5.5 or (mixed and titled)
        return f < _RARE or (mixed and titled and f < 3.5)
    if strength == 2:
        if mixed and titled:
            return (named and f < 5.6) or f < 3.5
        return (ns >= 0.5 and f < 5.6) or (lx.rare_unknown(word) and not lx.near_english(word))
    return mixed and titled and ((ns > 1.5 and f < 3.5) or (ns >= 2.5 and f < 4.0))


def test_the_memoised_word_judgment_equals_the_reference() -> None:
    from pipelines.phi.recognizers.name_words import _plausible

    extra = ("Xyzzq", "Brazzolini's", "AL", "Al", "HO", "Aline", "Kowalski's", "x", "Metoprolol")
    from tests.phi.test_name_passes import VOCAB

    for word in {c(w) for w in (*VOCAB, *extra) for c in (str, str.upper, str.lower)}:
        tok = Token(0, len(word), word, word.lower())
        base = word.lower().removesuffix("'s")
        for lowered in (frozenset(), frozenset({base})):
            for mixed in (False, True):
                for strength in (1, 2, 3):
                    assert _plausible(tok, mixed, strength, lowered) == _plausible_reference(
                        tok, mixed, strength, lowered
                    ), (word, mixed, strength, lowered)
