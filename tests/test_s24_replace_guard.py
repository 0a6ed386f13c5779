"""Session 24 (replace, guard): the shortcuts of the replacement and the leak guard answer
as the code they replaced, and the guard still holds a leaking output back."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keystore.api import PatientState
from pipelines.deidentify import (
    Deidentifier,
    DeidResult,
    _known_parts,
    _name_contexts,
    _name_parts,
)
from pipelines.document import ClinicalDocument, Identifier, Identifiers, PersonName, Sex
from pipelines.leak_guard import (
    _alnum_id,
    _alnum_needle,
    _is_plain,
    _kept,
    _kept_by,
    _plain_pattern,
    is_mixed_case,
    leak_guard,
)
from pipelines.leak_search import PROBE_TEXT, PROBE_WORD, _Probe, _whole_word
from pipelines.occurrences import occurrences
from pipelines.phi.detector import Detector
from pipelines.policy import Action, Policy
from pipelines.spans import Category as C
from pipelines.spans import Span

_ASCII = st.text(st.sampled_from(list("aZ 1-./é’ÑxY\t\n")), max_size=40)
_IDS = st.text(st.sampled_from(list("aB3-./ 9é٣_x")), max_size=12)


def _mixed_reference(text: str) -> bool:
    """``is_mixed_case`` as it was: a lower-case and an upper-case letter."""
    if text.isupper() or text.islower():
        return False
    return any(c.islower() for c in text) and any(c.isupper() for c in text)


@settings(max_examples=400, deadline=None)
@given(_ASCII)
def test_mixed_case_answers_as_the_reference(text: str) -> None:
    assert is_mixed_case(text) is _mixed_reference(text)


def test_mixed_case_of_texts_without_letters() -> None:
    assert not is_mixed_case("12/03 - 44")
    assert not is_mixed_case("")
    assert is_mixed_case("12 Ab")
    assert not is_mixed_case("12 AB")


@settings(max_examples=300, deadline=None)
@given(_IDS)
def test_id_pattern_and_needle_as_the_character_loops(value: str) -> None:
    chars = [c for c in value if c.isalnum()]
    expected = (
        None
        if len(chars) < 4
        else r"(?<![A-Za-z0-9])" + r"[\s\-./]?".join(chars) + r"(?![A-Za-z0-9])"
    )
    assert _alnum_id(value) == expected
    joined = "".join(chars)
    assert _alnum_needle(value) == (joined.lower() if joined.isascii() else "")


def _word_probe_reference(scan: str, needle: str) -> bool:
    low = scan.lower()
    return _whole_word(low, needle) if scan.isascii() else needle in low


@settings(max_examples=400, deadline=None)
@given(_ASCII, st.text(st.sampled_from(list("az1 é")), max_size=3))
def test_word_probe_answers_as_before(scan: str, needle: str) -> None:
    probe = _Probe(scan)
    assert probe.may_hold(needle, PROBE_WORD) == _word_probe_reference(scan, needle)
    assert probe.may_hold(needle, PROBE_TEXT) == (needle in scan.lower())


def test_kept_follows_the_policy_object() -> None:
    keep_dates = Policy(actions={C.DATE: Action.KEEP, C.AGE: Action.KEEP})
    keep_all = Policy(default_action=Action.KEEP, actions={C.NAME_PATIENT: Action.REDACT})
    for policy in (Policy(), keep_dates, keep_all, keep_dates, Policy()):
        assert _kept(policy) == _kept_by(policy)
    assert set(_kept(keep_dates)) == {C.AGE, C.DATE}
    assert C.NAME_PATIENT not in _kept(keep_all)


@pytest.mark.parametrize("pattern", ["(?i:Núñez)", "(?i:smith)", "(?<!\\w['’])Ann"])
def test_is_plain_is_the_folded_comparison(pattern: str) -> None:
    assert _is_plain(pattern) is (_plain_pattern(pattern) == pattern)


_WORDS = st.text(st.sampled_from(list("abAB -é\t")), max_size=8)
_NAMES = st.lists(
    st.builds(PersonName, family=_WORDS, given=st.lists(_WORDS, max_size=3).map(tuple)),
    max_size=3,
).map(tuple)


@given(_NAMES, _NAMES, _NAMES)
def test_name_contexts_are_the_three_sets(
    patient: tuple[PersonName, ...],
    provider: tuple[PersonName, ...],
    relative: tuple[PersonName, ...],
) -> None:
    ids = Identifiers(patient_names=patient, provider_names=provider, relative_names=relative)
    assert _name_contexts(ids) == (
        _known_parts(ids, True),
        _known_parts(ids, False),
        _name_parts(patient, (), (), True),
    )


def test_a_sex_is_passed_as_its_plain_value() -> None:
    for sex in Sex:
        assert str(sex) == sex.value
        assert type(str(sex)) is str


def test_deid_result_keeps_the_dataclass_behaviour() -> None:
    a = DeidResult("x", (), None)
    b = DeidResult("x", (), None)
    assert a == b
    assert a.leaks == {} and a.leaks is not b.leaks
    assert dict(a.stage_seconds) == {}
    assert (a.state_changed, a.detected, a.chosen, a.held_class) == (False, 0, (), "leak_guard")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.text = "y"  # type: ignore[misc]
    full = DeidResult("t", (), "r", {"detect": 1.0}, True, {"ID": 1}, 3, (), "oversize_note")
    assert (full.held, full.leaks, full.detected, full.held_class) == (
        True,
        {"ID": 1},
        3,
        "oversize_note",
    )
    assert dataclasses.replace(full, text="u").text == "u"


TEXT = "Pt John Smith seen by Dr. Quesby on 07/22/2005, MRN 4412345. Smith is well."
KNOWN = Identifiers(
    patient_names=(PersonName("Smith", ("John",)),),
    patient_ids=(Identifier("4412345", "HOSP", "MR"),),
)


def _state() -> PatientState:
    return PatientState(shift_days=-10, pseudonym="p", seed=b"q" * 32)


def _deidentifier() -> Deidentifier:
    return Deidentifier(Policy(), detector=Detector(Policy()))


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("Pt John X seen.", {"NAME_PATIENT": 1}),
        ("Pt X seen; MRN 44-12-345.", {"MRN": 1}),
        ("Pt X seen; mrn 4412345 and SMITH.", {"NAME_PATIENT": 1, "MRN": 1}),
        ("Pt X seen; nothing left.", {}),
        ("Pt Jöhn X seen.", {"NAME_PATIENT": 1}),  # accents aside
    ],
)
def test_the_guard_still_holds_a_leaking_output_back(output: str, expected: dict[str, int]) -> None:
    for mixed in (None, True, False):
        leaks = leak_guard(TEXT, output, [], [], KNOWN, Policy(), mixed)
        assert leaks == Counter(expected), (output, mixed)


def test_the_guard_counts_a_detected_phrase_left_in_the_output() -> None:
    spans = [Span(26, 32, C.NAME_PROVIDER)]  # "Quesby"
    chosen = spans[0]
    output = "Pt X seen by Dr. Zed; then Quesby again."
    leaks = leak_guard(
        TEXT, output, [Span(17, 20, C.NAME_PROVIDER)], [(chosen, "Zed")], KNOWN, Policy()
    )
    assert leaks["NAME_PROVIDER"] == 1


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([TEXT, TEXT.upper(), TEXT.lower(), "Smith; SMITH and smith."]))
def test_occurrences_with_the_case_given_as_asked(text: str) -> None:
    at = text.find("Smith") if "Smith" in text else text.lower().find("smith")
    spans = [Span(at, at + 5, C.NAME_PATIENT)]
    acts = lambda _c: True  # noqa: E731
    assert occurrences(text, spans, acts) == occurrences(text, spans, acts, is_mixed_case(text))


def test_deidentify_holds_a_missed_known_name_back() -> None:
    document = ClinicalDocument(text="John seen. Later Smith walked.", identifiers=KNOWN)
    result = _deidentifier().deidentify(document, _state(), spans=[Span(0, 4, C.NAME_PATIENT)])
    assert result.held_reason == "leak guard: NAME_PATIENT=1"
    assert result.leaks == {"NAME_PATIENT": 1}


def test_deidentify_passes_a_fully_replaced_note() -> None:
    document = ClinicalDocument(text="John Smith seen.", identifiers=KNOWN)
    result = _deidentifier().deidentify(document, _state(), spans=[Span(0, 10, C.NAME_PATIENT)])
    assert not result.held
    assert not re.search("john|smith", result.text, re.I)
