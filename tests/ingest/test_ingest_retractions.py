"""Retractions without narrative (ORU OBR-25 X / OBX-11 D, MDM^T11, TXA-17 CA, FHIR
entered-in-error without data) are entered-in-error documents with empty text and their
version facts — and through the Processor a retraction after a published report tombstones
the same research key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from keystore.memory import InMemoryStore
from keystore.pseudonyms import Pseudonyms
from pipelines.document import ClinicalDocument, Status
from pipelines.errors import NoNarrative, UnsupportedContentType, UrlOnlyAttachment
from pipelines.ingest import parse_input
from pipelines.policy import Policy
from pipelines.process import Processor
from tests.conftest import FIXTURES

H = FIXTURES / "hl7v2"
F = FIXTURES / "fhir"
LIMIT = 1 << 20
EST = timezone(timedelta(hours=-5))
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def one(path: str) -> ClinicalDocument:
    (doc,) = parse_input((FIXTURES / path).read_bytes(), max_bytes=LIMIT)
    return doc


@pytest.mark.parametrize(
    ("path", "document_id", "type_code", "filed"),
    [
        (
            "hl7v2/oru-r01-retracted-no-obx-v25.hl7",
            "FI-1",
            "24627-2",
            datetime(2024, 3, 6, 10, tzinfo=EST),
        ),
        (
            "hl7v2/oru-r01-retracted-obx-d-v251.hl7",
            "FI-1",
            "24627-2",
            datetime(2024, 3, 6, 10, tzinfo=EST),
        ),
        ("hl7v2/mdm-t11-cancel-v25.hl7", "DOC-1", "PN", datetime(2024, 3, 6, 8, 15, tzinfo=EST)),
        (
            "hl7v2/mdm-t02-ca-no-obx-v25.hl7",
            "DOC-4",
            "PN",
            datetime(2024, 3, 5, 10, 15, tzinfo=EST),
        ),  # MSH-7 > TXA-6
    ],
)
def test_hl7_retraction_without_narrative_is_an_empty_entered_in_error_document(
    path: str, document_id: str, type_code: str, filed: datetime
) -> None:
    doc = one(path)
    assert doc.status is Status.ENTERED_IN_ERROR
    assert doc.text == ""
    assert not doc.context_only
    assert (doc.patient_id, doc.assigning_authority, doc.visit_id) == (
        "MRN00417",
        "NORTHCLINIC",
        "V5521",
    )
    assert doc.document_id == document_id
    assert doc.report_type.code == type_code
    assert doc.version.filing_time == filed
    assert doc.identifiers.patient_names[0].family == "Quillfeather"  # leak-guard context kept


def test_final_report_without_narrative_is_still_no_narrative() -> None:
    for name in ("oru-r01-final-no-obx-v25.hl7", "oru-r01-no-narrative-v25.hl7"):
        with pytest.raises(NoNarrative):
            parse_input((H / name).read_bytes(), max_bytes=LIMIT)


def test_retracted_pdf_only_report_is_a_retraction_but_a_final_one_is_unsupported() -> None:
    pdf = (H / "oru-r01-pdf-only-v251.hl7").read_bytes()
    with pytest.raises(UnsupportedContentType):
        parse_input(pdf, max_bytes=LIMIT)
    retracted = pdf.replace(b"JVBERi0xLjQKJcfs||||||F", b"JVBERi0xLjQKJcfs||||||X")
    assert retracted != pdf
    (doc,) = parse_input(retracted, max_bytes=LIMIT)
    assert (doc.status, doc.text) == (Status.ENTERED_IN_ERROR, "")


@pytest.mark.parametrize(
    "name", ["docref-entered-in-error-no-data.json", "docref-entered-in-error-url-only.json"]
)
def test_fhir_entered_in_error_without_data(name: str) -> None:
    doc = one(f"fhir/{name}")
    assert (doc.status, doc.text) == (Status.ENTERED_IN_ERROR, "")
    assert (doc.patient_id, doc.visit_id, doc.document_id) == ("pat-1", "enc-1", "doc-1")
    assert doc.report_type.code == "11506-3"
    assert doc.version.version_number == 3


def test_fhir_current_document_without_data_is_still_an_error() -> None:
    from pipelines.errors import NoNarrative as _NoNarrative

    with pytest.raises(_NoNarrative):
        one("fhir/docref-no-data-current.json")
    url_only = (F / "docref-entered-in-error-url-only.json").read_bytes()
    with pytest.raises(UrlOnlyAttachment):
        parse_input(url_only.replace(b'"entered-in-error"', b'"current"'), max_bytes=LIMIT)


def test_fhir_diagnostic_report_cancelled_without_presented_form() -> None:
    import orjson

    report = {
        "resourceType": "DiagnosticReport",
        "id": "dr-1",
        "status": "cancelled",
        "code": {"coding": [{"system": "http://loinc.org", "code": "24627-2"}]},
        "subject": {"reference": "Patient/pat-1"},
        "issued": "2024-03-06T10:00:00Z",
    }
    (doc,) = parse_input(orjson.dumps(report), max_bytes=LIMIT)
    assert (doc.status, doc.text, doc.document_id) == (Status.ENTERED_IN_ERROR, "", "dr-1")
    report["status"] = "final"
    with pytest.raises(NoNarrative):
        parse_input(orjson.dumps(report), max_bytes=LIMIT)


# -- end to end through the Processor ---------------------------------------------------


@pytest.fixture(scope="module")
def policy() -> Policy:
    return Policy.load()


def _process(proc: Processor, path: str) -> list[tuple[str, str | None, bool]]:
    hint = "fhir" if path.startswith("fhir/") else "hl7v2"
    outs = proc.process((FIXTURES / path).read_bytes(), content_hint=hint, now=NOW)
    proc.commit(outs)
    return [(o.kind, o.research_key, o.value is not None) for o in outs]


@pytest.mark.parametrize(
    ("report", "retraction"),
    [
        ("hl7v2/mdm-t02-v25.hl7", "hl7v2/mdm-t11-cancel-v25.hl7"),
        ("hl7v2/oru-r01-tx-ft-nte-v251.hl7", "hl7v2/oru-r01-retracted-no-obx-v25.hl7"),
        ("hl7v2/oru-r01-tx-ft-nte-v251.hl7", "hl7v2/oru-r01-retracted-obx-d-v251.hl7"),
        ("fhir/docref-r4-plain.json", "fhir/docref-entered-in-error-no-data.json"),
    ],
)
def test_retraction_after_a_published_report_tombstones_its_key(
    policy: Policy, report: str, retraction: str
) -> None:
    calls: list[str] = []
    proc = Processor(policy=policy, store=InMemoryStore(), pseudonyms=Pseudonyms.random())
    real = proc._deidentify

    def counting(document: ClinicalDocument, state: object) -> object:
        calls.append(document.status.value)
        return real(document, state)  # type: ignore[arg-type]

    proc._deidentify = counting  # type: ignore[assignment]
    [(kind, key, has_value)] = _process(proc, report)
    assert (kind, has_value) == ("publish", True)
    [(kind2, key2, has_value2)] = _process(proc, retraction)
    assert (kind2, key2, has_value2) == ("tombstone", key, False)
    assert calls == ["final"]  # the retraction needed no de-identification
    # a replay of the retraction publishes nothing new
    assert _process(proc, retraction) == [("duplicate", None, False)]


def test_retraction_of_an_unknown_report_still_tombstones(policy: Policy) -> None:
    proc = Processor(policy=policy, store=InMemoryStore(), pseudonyms=Pseudonyms.random())
    [(kind, key, has_value)] = _process(proc, "hl7v2/mdm-t02-ca-no-obx-v25.hl7")
    assert kind == "tombstone" and key and not has_value


def test_cancel_repeating_old_document_times_still_wins_over_a_later_edit(policy: Policy) -> None:
    """T02 → T08 edit (TXA-8 on the 7th) → T11 sent on the 8th that repeats only the original
    TXA-6 (5th): the retraction is filed at MSH-7, so it tombstones the edited report."""
    t11 = (H / "mdm-t11-cancel-v25.hl7").read_bytes()
    t11 = t11.replace(b"|20240305101500-0500||MDM^T11", b"|20240308090000-0500||MDM^T11")
    t11 = t11.replace(b"|20240306081500-0500|2002^", b"||2002^")
    (doc,) = parse_input(t11, max_bytes=LIMIT)
    assert doc.version.filing_time == datetime(2024, 3, 8, 9, tzinfo=EST)
    proc = Processor(policy=policy, store=InMemoryStore(), pseudonyms=Pseudonyms.random())
    [(k1, key, _)] = _process(proc, "hl7v2/mdm-t02-v25.hl7")
    [(k2, key2, _)] = _process(proc, "hl7v2/mdm-t08-edit-v28.hl7")
    outs = proc.process(t11, content_hint="hl7v2", now=NOW)
    assert (k1, k2, key2) == ("publish", "publish", key)
    assert [(o.kind, o.research_key, o.value) for o in outs] == [("tombstone", key, None)]
