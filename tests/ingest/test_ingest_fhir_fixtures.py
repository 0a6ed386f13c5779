"""Our own FHIR fixtures: R4 and R5 DocumentReference, Bundle, NDJSON, every error class."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import orjson
import pytest

from pipelines.document import Identifier, PersonName, Source, Status
from pipelines.errors import (
    BadEncoding,
    InputError,
    InvalidFHIR,
    InvalidJSON,
    MissingPatientId,
    NotADocument,
    PartialInput,
    UnsupportedContentType,
    UrlOnlyAttachment,
)
from pipelines.fhir.parse import parse_resource
from pipelines.fhir.validate import validate_resource
from pipelines.ingest import ingest, parse_input
from tests.conftest import FIXTURES

F = FIXTURES / "fhir"
LIMIT = 1 << 20


def docs(name: str, hint: str | None = None):  # type: ignore[no-untyped-def]
    return parse_input((F / name).read_bytes(), content_hint=hint, max_bytes=LIMIT)


def test_r4_document_reference() -> None:
    (doc,) = docs("docref-r4-plain.json")
    assert doc.source is Source.FHIR
    assert doc.text == "Seen today. Doing well."
    assert (doc.patient_id, doc.visit_id, doc.document_id) == ("pat-1", "enc-1", "doc-1")
    assert doc.report_type.code == "11506-3" and doc.report_type.system == "http://loinc.org"
    assert doc.status is Status.FINAL
    assert doc.version.version_number == 2
    assert doc.version.filing_time == datetime(
        2024, 3, 5, 10, 15, tzinfo=timezone(timedelta(hours=-5))
    )
    # unresolved author reference: its display names the provider
    assert PersonName("Vandermeer", ("Otto",), "", "MD") in doc.identifiers.provider_names


def test_r5_context_list_relates_to_codeable_concept_and_html() -> None:
    (doc,) = docs("docref-r5-html-replaces.json")
    assert doc.text == "Addendum:\n\nLabs reviewed."
    assert doc.visit_id == "enc-1"
    assert doc.status is Status.AMENDED
    assert doc.version.replaces_id == "doc-1"
    assert doc.version.version_number == 3


def test_rtf_attachment() -> None:
    assert docs("docref-rtf.json")[0].text == "Plan: rest and fluids."


def test_contained_patient_gives_identifiers_and_mr_patient_id() -> None:
    (doc,) = docs("docref-contained-patient.json")
    ids = doc.identifiers
    assert (doc.patient_id, doc.assigning_authority) == ("MRN00417", "urn:oid:1.2.3.4")
    assert PersonName("Quillfeather", ("Ondine", "Marisol"), "Ms") in ids.patient_names
    assert ids.birth_date == date(1961, 4, 12)
    assert ids.ssn == ("999-00-1234",)
    assert Identifier("Q1234567", "urn:vt:dl", "DL") in ids.other_ids
    assert "(802) 555-0143" in ids.phones and "ondine.q@example.org" in ids.emails
    assert ids.addresses[0].city == "Brambleton"
    assert PersonName("Quillfeather", ("Bastian",)) in ids.relative_names


def test_entered_in_error_status() -> None:
    assert docs("docref-entered-in-error.json")[0].status is Status.ENTERED_IN_ERROR


def test_bom_is_accepted() -> None:
    assert docs("docref-bom.json")[0].text == "BOM note."


def test_bundle_resolves_urn_uuid_and_keeps_good_entries() -> None:
    raw = (F / "bundle-collection-partial.json").read_bytes()
    result = ingest(raw, max_bytes=LIMIT)
    assert [d.document_id for d in result.documents] == ["doc-6", "doc-8"]
    assert [(i, type(e)) for i, e in result.errors] == [(4, UrlOnlyAttachment)]
    first = result.documents[0]
    # urn:uuid subject resolved to the bundled Patient: keyed on its logical id, as a
    # stand-alone reference Patient/pat-1 would be; the MR is a known identifier
    assert (first.patient_id, first.assigning_authority) == ("pat-1", "fhir")
    assert Identifier("MRN00417", "urn:oid:1.2.3.4", "MR") in first.identifiers.patient_ids
    assert "Vandermeer" in {p.family for p in first.identifiers.provider_names}  # Practitioner
    assert Identifier("V5521", "", "VN") in first.identifiers.other_ids  # bundled Encounter
    assert all(d.message_id == "b-1" for d in result.documents)
    with pytest.raises(PartialInput) as info:
        parse_input(raw, max_bytes=LIMIT)
    assert [d.document_id for d in info.value.documents] == ["doc-6", "doc-8"]  # type: ignore[attr-defined]
    assert "entry=4" in str(info.value.entry_errors[0][1])


def test_ndjson_lines_are_entries_and_context() -> None:
    raw = (F / "docrefs-partial.ndjson").read_bytes()
    result = ingest(raw, max_bytes=LIMIT)
    assert result.kind == "ndjson"
    assert [d.document_id for d in result.documents] == ["doc-20", "doc-21"]
    assert all(d.patient_id == "pat-1" for d in result.documents)
    assert all(  # the Patient line resolves: its identifiers are known
        Identifier("MRN00417", "urn:oid:1.2.3.4", "MR") in d.identifiers.patient_ids
        for d in result.documents
    )
    assert [(i, type(e)) for i, e in result.errors] == [(3, InvalidJSON)]


def test_content_hint_forces_ndjson_for_a_single_line() -> None:
    line = orjson.dumps(orjson.loads((F / "docref-r4-plain.json").read_bytes()))
    result = ingest(line, content_hint="application/fhir+ndjson", max_bytes=LIMIT)
    assert result.kind == "ndjson" and len(result.documents) == 1


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("err-not-a-document.json", NotADocument),
        ("err-url-only.json", UrlOnlyAttachment),
        ("err-no-subject.json", MissingPatientId),
        ("err-bad-base64.json", BadEncoding),
        ("err-pdf-only.json", UnsupportedContentType),
        ("err-wrong-type.json", InvalidFHIR),
        ("err-bundle-no-document.json", NotADocument),
        ("err-invalid-json.json", InvalidJSON),
    ],
)
def test_error_classes(name: str, error: type[InputError]) -> None:
    with pytest.raises(error) as info:
        docs(name)
    assert type(info.value) is error
    for value in ("Quillfeather", "MRN00417", "999-00-1234", "example.org"):
        assert value not in str(info.value)


def test_validation_accepts_r4_and_r5_and_names_the_element_only() -> None:
    r4 = orjson.loads((F / "docref-r4-plain.json").read_bytes())
    r5 = orjson.loads((F / "docref-r5-html-replaces.json").read_bytes())
    assert validate_resource(r4) == "R4B"
    assert validate_resource(r5) == "R5"
    r4["date"] = "Quillfeather-not-a-date"
    with pytest.raises(InvalidFHIR) as info:
        validate_resource(r4)
    assert "date" in str(info.value) and "Quillfeather" not in str(info.value)
    with pytest.raises(InvalidFHIR):
        parse_resource(r4, validate=True)


def test_json_hint_still_detects_ndjson() -> None:
    raw = (F / "docrefs-partial.ndjson").read_bytes()
    assert ingest(raw, content_hint="application/fhir+json", max_bytes=LIMIT).kind == "ndjson"
