"""The document's own identifiers found again in its text, in every form."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.document import Address, Identifier, Identifiers, PersonName
from pipelines.phi.base import Doc
from pipelines.phi.detector import Detector
from pipelines.phi.recognizers.known import KnownIdentifierRecognizer, known_name_forms
from pipelines.spans import Category

KNOWN = KnownIdentifierRecognizer()

IDS = Identifiers(
    patient_names=(PersonName(family="Vandermeer", given=("Rosalind", "Jo")),),
    birth_date=date(1941, 3, 7),
    patient_ids=(Identifier("0004471203", type_code="MR"),),
    addresses=(
        Address(street=("12 Larkspur Lane",), city="Frostburg", state="MD", postal_code="21532"),
    ),
    phones=("(301) 555-0142",),
    provider_names=(PersonName(family="Oyelaran", given=("Tunde",)),),
    relative_names=(PersonName(family="Vandermeer", given=("Piet",)),),
)


def found(text: str, ids: Identifiers = IDS) -> list[tuple[str, Category]]:
    return sorted((text[s.start : s.end], s.category) for s in KNOWN.detect(Doc(text, ids)))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("VANDERMEER, ROSALIND admitted", ["ROSALIND", "VANDERMEER"]),
        ("Rosalind Vandermeer is 83", ["Rosalind", "Vandermeer"]),
        ("Mrs. Vandermeer's daughter", ["Vandermeer"]),
        ("pt (rosalind) slept well", ["rosalind"]),
        ("R. Vandermeer signed consent", ["R", "Vandermeer"]),
        ("Ms. V. refused meds", ["V"]),
    ],
)
def test_patient_name_forms(text: str, expected: list[str]) -> None:
    got = found(text)
    assert [t for t, _ in got] == sorted(expected)
    assert all(c is Category.NAME_PATIENT for _, c in got)


def test_roles_of_other_known_people() -> None:
    got = dict(found("Dr. Oyelaran spoke with Piet, her son."))
    assert got == {"Oyelaran": Category.NAME_PROVIDER, "Piet": Category.NAME_RELATIVE}


def test_a_shared_family_name_is_the_patients() -> None:
    assert known_name_forms(Doc("", IDS))["vandermeer"] is Category.NAME_PATIENT


def test_common_word_name_needs_support() -> None:
    ids = Identifiers(patient_names=(PersonName(family="Nguyen", given=("Will",)),))
    assert found("will continue to monitor", ids) == []
    assert found("Will Nguyen resting", ids) == [
        ("Nguyen", Category.NAME_PATIENT),
        ("Will", Category.NAME_PATIENT),
    ]


@pytest.mark.parametrize(
    "text", ["MRN 4471203", "mrn: 0004471203", "#000-447-1203", "record 4471-203"]
)
def test_mrn_with_or_without_zeros_and_separators(text: str) -> None:
    got = found(text)
    assert len(got) == 1 and got[0][1] is Category.MRN


def test_mrn_inside_a_longer_number_is_not_matched() -> None:
    assert found("acct 44712031") == []


@pytest.mark.parametrize(
    "text",
    ["DOB 3/7/1941", "dob 03-07-41", "born March 7, 1941", "born 7 Mar 1941", "1941-03-07"],
)
def test_birth_date_in_any_format(text: str) -> None:
    got = found(text)
    assert [c for _, c in got] == [Category.DATE]


def test_other_dates_are_not_the_birth_date() -> None:
    assert found("seen 3/8/1941 and 7/3/1942") == []


@pytest.mark.parametrize("text", ["call 301-555-0142", "ph (301)555.0142", "tel 555-0142"])
def test_phone_in_any_format(text: str) -> None:
    assert [c for _, c in found(text)] == [Category.PHONE]


def test_address_parts() -> None:
    got = found("lives at 12 Larkspur Ln, Frostburg 21532-1234")
    assert got == [
        ("12 Larkspur Ln", Category.LOCATION_STREET),
        ("21532-1234", Category.LOCATION_ZIP),
        ("Frostburg", Category.LOCATION_CITY),
    ]


def test_no_identifiers_no_spans() -> None:
    assert KNOWN.detect(Doc("Rosalind Vandermeer 4471203")) == []


def test_detector_prefers_the_known_role_over_a_guess() -> None:
    ids = Identifiers(patient_names=(PersonName(family="Quennell", given=("Ada",)),))
    doc = Doc("Wife Ada Quennell at bedside.", ids)
    spans = Detector().detect(doc)
    assert [(s.category, doc.text[s.start : s.end]) for s in spans] == [
        (Category.NAME_PATIENT, "Ada Quennell")
    ]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_never_raises_and_spans_in_bounds(text: str) -> None:
    for span in KNOWN.detect(Doc(text, IDS)):
        assert 0 <= span.start < span.end <= len(text)


def test_nicknames_of_the_known_first_name_need_support() -> None:
    ids = Identifiers(patient_names=(PersonName(family="Quellamott", given=("Margaret",)),))
    rec = KnownIdentifierRecognizer()

    def got(text: str) -> list[str]:
        return [text[s.start : s.end] for s in rec.detect(Doc(text, ids))]

    # Title case in a mixed-case note, or next to a known part: the nickname is the patient
    assert got("Pt comfortable. Peggy asked for water. PEG tube flushed, peg site clean.") == [
        "Peggy"
    ]
    assert got("PT COMFORTABLE. PEGGY QUELLAMOTT ASKED FOR WATER.") == ["PEGGY", "QUELLAMOTT"]
    # a nickname that is also a clinical word stays a word without such support
    assert got("PT COMFORTABLE. PEG TUBE FLUSHED. PEG SITE CLEAN.") == []


SHORT = Identifiers(
    patient_names=(PersonName(family="Quellbrook", given=("Ed",)),),
    provider_names=(PersonName(family="Ransome", given=("Al",)),),
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a two-letter known first name that is also an abbreviation needs name context
        ("Seen in the ED overnight, ED to call. Na 131, Al 2.1.", []),
        ("Ed ate well. Labs: Al 2.1.", []),
        ("ED QUELLBROOK SEEN IN ED.", ["ED", "QUELLBROOK"]),
        ("Ed Quellbrook seen in the ED.", ["Ed", "Quellbrook"]),
        ("Quellbrook, Ed seen.", ["Ed", "Quellbrook"]),
        ("Mr. Ed asked for water; Dr. Al Ransome aware.", ["Al", "Ed", "Ransome"]),
        ("ED Quellbrook?", ["Quellbrook"]),  # capitals in a mixed-case note: an abbreviation
    ],
)
def test_a_two_letter_known_name_needs_name_context(text: str, expected: list[str]) -> None:
    assert [t for t, _ in found(text, SHORT)] == sorted(expected)


@pytest.mark.parametrize(
    ("family", "given", "text", "expected"),
    [
        ("NUNEZ", "JOSE", "Pt José Núñez seen; Núñez's wife here.", ["José", "Núñez", "Núñez"]),
        ("Núñez", "José", "Pt Jose Nunez seen; Nunez's wife here.", ["Jose", "Nunez", "Nunez"]),
        ("Núñez", "José", "Pt José Núñez seen, J. Núñez signed.", ["J", "José", "Núñez", "Núñez"]),
    ],
)
def test_known_names_with_or_without_accents(
    family: str, given: str, text: str, expected: list[str]
) -> None:
    """The message writes names in ASCII and the note with accents, or the other way round:
    both are the patient's (the possessive stays outside the span)."""
    ids = Identifiers(patient_names=(PersonName(family=family, given=(given,)),))
    got = found(text, ids)
    assert [t for t, _ in got] == sorted(expected)
    assert all(c is Category.NAME_PATIENT for _, c in got)
