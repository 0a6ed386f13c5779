"""Every file in ../shared/data/samples parses or fails with a deliberate, documented error.

The table is docs/samples.md in prose; keep the two in step.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.document import Status
from pipelines.errors import InputError
from pipelines.ingest import ingest, parse_input
from tests.conftest import SAMPLES

LIMIT = 1 << 20

# file → (documents, context-only documents, failed entries' reason class or "")
EXPECTED: dict[str, tuple[int, int, str]] = {
    "hl7v2/dcm4che-oru-r01-ed-cda-xml-v251.hl7": (1, 0, ""),
    "hl7v2/dcm4che-oru-r01-ed-pdf-base64-v251.hl7": (1, 0, ""),
    "hl7v2/dcm4che-oru-r01-radiology-findings-v231.hl7": (1, 0, ""),
    "hl7v2/dcm4che-oru-r01-radiology-findings-v251.hl7": (1, 0, ""),
    "hl7v2/hapi-adt-a01-uhn-v24.hl7": (1, 1, ""),
    "hl7v2/hapi-adt-a03-santer-v25.hl7": (1, 1, ""),
    "hl7v2/hapi-olis-erp-z99-chem-v231.hl7": (0, 0, "unsupported_message_type"),
    "hl7v2/hl7v2tofhir-adt-a01-vhis-v231.hl7": (1, 1, ""),
    "hl7v2/hl7v2tofhir-adt-a08-ntierprise-v23.hl7": (1, 1, ""),
    "hl7v2/hl7v2tofhir-mdm-t02-outpatient-note-v231.hl7": (1, 0, ""),
    "hl7v2/hl7v2tofhir-orm-o01-ihe-rad4-zds-v231.hl7": (0, 0, "unsupported_message_type"),
    "hl7v2/ipf-mdm-t02-ed-html-base64-v25.hl7": (1, 0, ""),
    "hl7v2/ipf-oru-r01-electrolytes-v25.hl7": (0, 0, "no_narrative"),
    "hl7v2/ipf-oru-r01-microalbumin-nte-v24.hl7": (1, 0, ""),
    "hl7v2/lfh-oru-r01-echo-report-multiline-mixed-v26.hl7": (1, 0, ""),
    "hl7v2/lfh-oru-r01-echo-report-multiline-v26.hl7": (1, 0, ""),
    "hl7v2/msfhirconv-adt-a01-accmgr-v23.hl7": (1, 1, ""),
    "hl7v2/msfhirconv-adt-a04-redox-v23.hl7": (1, 1, ""),
    "hl7v2/msfhirconv-lab-oru-r01-cbc-v25.hl7": (0, 0, "no_narrative"),
    "hl7v2/msfhirconv-mdm-t02-ed-pdf-v28.hl7": (1, 0, ""),
    "hl7v2/msfhirconv-mdm-t02-simhosp-v23.hl7": (1, 0, ""),
    "hl7v2/msfhirconv-mdm-t06-addendum-v28.hl7": (1, 0, ""),
    "hl7v2/msfhirconv-mdm-t10-replacement-v28.hl7": (1, 0, ""),
    "hl7v2/msfhirconv-oru-r01-ghh-glucose-v24.hl7": (0, 0, "no_narrative"),
    "hl7v2/simhospital-adt-a01-v23.hl7": (1, 1, ""),
    "hl7v2/simhospital-mdm-t02-clinical-doc-v23.hl7": (1, 0, ""),
    "hl7v2/simhospital-mdm-t02-progress-note-v23.hl7": (1, 0, ""),
    "hl7v2/simhospital-oru-r01-mri-ft-tx-v23.hl7": (1, 0, ""),
    "hl7v2/simhospital-oru-r01-mri-tx-ft-nte-v23.hl7": (1, 0, ""),
    "fhir/msfhirserver-documentreference-r4-spec-example-appends.json": (
        0,
        0,
        "url_only_attachment",
    ),
    "fhir/msfhirserver-documentreference-r4-spec-example-base64.json": (1, 0, ""),
    "fhir/synthea-bundle-denis399-schmitt836-12notes.json": (12, 0, ""),
    "fhir/synthea-bundle-devin82-cole117-12notes.json": (12, 0, ""),
    "fhir/synthea-bundle-kasandra729-shanahan202-12notes.json": (12, 0, ""),
    "fhir/synthea-documentreference-10-patients-sample.ndjson": (10, 0, ""),
    "fhir/uscore-bundle-docref-searchset-3pdf-urls.json": (0, 0, "url_only_attachment"),
    "fhir/uscore-bundle-docref-searchset-ccd-url.json": (0, 0, "url_only_attachment"),
    "fhir/uscore-diagnosticreport-chest-xray-xhtml.json": (1, 0, ""),
    "fhir/uscore-documentreference-discharge-summary.json": (1, 0, ""),
    "fhir/uscore-encounter-example-1.json": (0, 0, "not_a_document"),
    "fhir/uscore-patient-example-amy-shaw.json": (0, 0, "not_a_document"),
}


def _sample_files() -> list[str]:
    if not SAMPLES.exists():
        return sorted(EXPECTED)
    return sorted(
        str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*") if p.is_file() and p.suffix != ".md"
    )


def _outcome(raw: bytes) -> tuple[int, int, str]:
    try:
        result = ingest(raw, max_bytes=LIMIT)
    except InputError as e:
        return 0, 0, e.reason_class
    classes = {e.reason_class for _, e in result.errors}
    assert len(classes) <= 1
    return len(result.documents), sum(d.context_only for d in result.documents), "".join(classes)


@pytest.mark.corpus
@pytest.mark.parametrize("rel", _sample_files())
def test_sample_outcome_is_the_documented_one(samples_dir: Path, rel: str) -> None:
    assert rel in EXPECTED, f"new sample without a documented outcome: {rel}"
    raw = (samples_dir / rel).read_bytes()
    assert _outcome(raw) == EXPECTED[rel]
    docs, _, reason = EXPECTED[rel]
    if docs and not reason:
        for doc in parse_input(raw, max_bytes=LIMIT):
            assert doc.patient_id
            assert doc.context_only or doc.text.strip()


@pytest.mark.corpus
def test_sample_facts(samples_dir: Path) -> None:
    """A few version facts the dedup stage depends on, read from the public samples."""
    s = samples_dir

    def one(rel: str):  # type: ignore[no-untyped-def]
        (doc,) = parse_input((s / rel).read_bytes(), max_bytes=LIMIT)
        return doc

    t02 = one("hl7v2/hl7v2tofhir-mdm-t02-outpatient-note-v231.hl7")
    assert t02.report_type.code == "OV" and t02.document_id == "OV17872"
    assert any(line.strip().startswith("Asthma") for line in t02.text.splitlines())  # '~' → lines
    ip = one("hl7v2/msfhirconv-mdm-t02-simhosp-v23.hl7")
    assert ip.status is Status.PRELIMINARY  # TXA-17 IP (in progress)
    assert one("hl7v2/msfhirconv-mdm-t10-replacement-v28.hl7").status is Status.AMENDED
    spec = one("fhir/msfhirserver-documentreference-r4-spec-example-base64.json")
    assert spec.status is Status.PRELIMINARY and spec.version.replaces_id == "example"
    assert spec.text == "This is a test"
    cda = one("hl7v2/dcm4che-oru-r01-ed-cda-xml-v251.hl7")
    assert "cardiomediastinum" in cda.text and "<" not in cda.text
    html = one("hl7v2/ipf-mdm-t02-ed-html-base64-v25.hl7")
    assert "Load Test Results" in html.text and "<td" not in html.text
