"""Research DocumentReference (pipelines/research.py): valid R4, pseudonymous, shifted, no
identifiers copied from the structured part."""

from __future__ import annotations

from datetime import UTC, date, datetime

import orjson
import pytest
from fhir.resources.R4B.documentreference import DocumentReference
from hypothesis import given
from hypothesis import strategies as st

from pipelines.document import (
    Address,
    ClinicalDocument,
    Identifier,
    Identifiers,
    PersonName,
    ReportType,
    Source,
    Status,
    VersionMarker,
)
from pipelines.errors import InvalidFHIR
from pipelines.research import (
    ANNOTATION_URL,
    NEAR_DUPLICATE_URL,
    OBSERVATION_VALUE,
    attachment_text,
    build_resource,
    render,
)
from pipelines.spans import Category, Span

IDENTIFIERS = Identifiers(
    patient_names=(PersonName("Quixote", ("Zebulon",)),),
    birth_date=date(1941, 2, 3),
    patient_ids=(Identifier("MRN778812", "HOSPA", "MR"),),
    addresses=(Address(("12 Larkspur Lane",), "Springfield", "IL", "62704"),),
    phones=("217-555-0199",),
    provider_names=(PersonName("Okonkwo", ("Adaeze",)),),
)

DOCUMENT = ClinicalDocument(
    text="Zebulon Quixote seen by Dr Okonkwo on 03/01/2024.",
    identifiers=IDENTIFIERS,
    source=Source.HL7V2,
    message_id="MSG-20240301-0001",
    document_id="DOC-99812",
    patient_id="MRN778812",
    assigning_authority="HOSPA",
    visit_id="VN-445566",
    report_type=ReportType("11506-3", "Progress note", "http://loinc.org"),
    status=Status.CORRECTED,
    version=VersionMarker(filing_time=datetime(2024, 3, 1, 9, 30), version_number=2),
    document_date=datetime(2024, 3, 1, 9, 0, tzinfo=UTC),
    language="en",
)

CLEAN = "Arlo Bennett seen by Dr Marsh on 12/12/2023."


def _resource(**overrides: object) -> dict[str, object]:
    args: dict[str, object] = {
        "text": CLEAN,
        "version_id": "a1b2c3d4",
        "patient_pseudonym": "ppatientpseudonym",
        "encounter_pseudonym": "eencounterpseudonym",
        "shift_days": -80,
        "security": ["PSEUDED"],
    }
    args.update(overrides)
    return build_resource(DOCUMENT, **args)  # type: ignore[arg-type]


def test_output_validates_and_carries_pseudonymous_references() -> None:
    out = render("research-key-1", _resource(replaces="0ldversion"))
    model = DocumentReference.model_validate_json(out.value)
    assert out.research_key == "research-key-1"
    assert model.id == "a1b2c3d4"
    assert model.subject.reference == "Patient/ppatientpseudonym"
    assert model.context.encounter[0].reference == "Encounter/eencounterpseudonym"
    assert model.docStatus == "amended"  # corrected maps to R4's amended
    assert model.relatesTo[0].code == "replaces"
    assert model.relatesTo[0].target.reference == "DocumentReference/0ldversion"
    assert model.type.coding[0].code == "11506-3"
    assert model.type.coding[0].system == "http://loinc.org"
    security = model.meta.security[0]
    assert (security.system, security.code) == (OBSERVATION_VALUE, "PSEUDED")
    attachment = model.content[0].attachment
    assert attachment.contentType.startswith("text/plain")
    assert attachment.data == CLEAN.encode()  # the model holds the decoded bytes
    assert attachment_text(out.resource) == CLEAN


def test_date_moves_by_the_patients_shift() -> None:
    out = render("k", _resource(shift_days=-80))
    assert out.resource["date"] == "2023-12-12T09:00:00Z"


def test_naive_times_are_read_as_utc() -> None:
    undated = ClinicalDocument(text="x", version=VersionMarker(datetime(2024, 3, 1, 9, 30)))
    resource = build_resource(
        undated,
        text="x",
        version_id="v",
        patient_pseudonym="p",
        encounter_pseudonym=None,
        shift_days=1,
        security=["REDACTED"],
    )
    out = render("k", resource)
    assert out.resource["date"] == "2024-03-02T09:30:00Z"
    assert "context" not in out.resource
    assert "type" not in out.resource


def test_no_structured_identifier_reaches_the_output() -> None:
    raw = render("k", _resource()).value
    for value in (
        "MRN778812",
        "HOSPA",
        "VN-445566",
        "MSG-20240301-0001",
        "DOC-99812",
        "Quixote",
        "Zebulon",
        "Okonkwo",
        "Larkspur",
        "217-555-0199",
        "1941",
        "2024-03-01",
    ):
        assert value.encode() not in raw, value
    for key in (b"author", b"custodian", b"masterIdentifier", b"identifier"):
        assert key not in raw


def test_both_security_codes_and_optional_extensions_validate() -> None:
    spans = [Span(0, 4, Category.NAME_PATIENT), Span(30, 40, Category.DATE)]
    out = render(
        "k",
        _resource(
            security=["REDACTED", "PSEUDED"],
            near_duplicate=("other-visit-key", 0.91234),
            annotations=spans,
        ),
    )
    model = DocumentReference.model_validate(out.resource)
    assert [c.code for c in model.meta.security] == ["PSEUDED", "REDACTED"]
    near = model.extension[0]
    assert near.url == NEAR_DUPLICATE_URL
    assert {e.url: (e.valueString or float(e.valueDecimal)) for e in near.extension} == {
        "researchKey": "other-visit-key",
        "score": pytest.approx(0.912),
    }
    notes = model.content[0].extension
    assert [n.url for n in notes] == [ANNOTATION_URL, ANNOTATION_URL]
    first = {
        e.url: e.valueCode if e.valueInteger is None else e.valueInteger for e in notes[0].extension
    }
    assert first == {"start": 0, "end": 4, "category": "NAME_PATIENT"}


def test_invalid_output_raises_with_field_paths_not_values() -> None:
    resource = _resource()
    resource["id"] = "has spaces and a secret Quixote"
    with pytest.raises(InvalidFHIR) as info:
        render("k", resource)
    assert "Quixote" not in str(info.value)
    assert "id" in str(info.value)


@given(text=st.text(min_size=0, max_size=200))
def test_any_text_round_trips_through_the_attachment(text: str) -> None:
    out = render("k", _resource(text=text))
    assert attachment_text(orjson.loads(out.value)) == text
