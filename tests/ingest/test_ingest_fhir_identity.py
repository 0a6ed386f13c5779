"""FHIR patient identity: one patient gets one keystore identity whether or not its Patient
resource came along in the same Bundle (rule in pipelines/fhir/documents.py)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.document import ClinicalDocument, Identifier
from pipelines.errors import MissingPatientId
from pipelines.ingest import parse_input
from tests.conftest import FIXTURES

F = FIXTURES / "fhir"
LIMIT = 1 << 20


def _load(name: str) -> dict[str, Any]:
    value: dict[str, Any] = orjson.loads((F / name).read_bytes())
    return value


DOCREF = _load("docref-r4-plain.json")
PATIENT = _load("docref-contained-patient.json")["contained"][0] | {"id": "pat-1"}
MR = Identifier("MRN00417", "urn:oid:1.2.3.4", "MR")


def parse(resource: dict[str, Any]) -> ClinicalDocument:
    (doc,) = parse_input(orjson.dumps(resource), max_bytes=LIMIT)
    return doc


def docref(subject: dict[str, Any]) -> dict[str, Any]:
    res = copy.deepcopy(DOCREF)
    res["subject"] = subject
    return res


def bundle(doc: dict[str, Any], patient_url: str, patient: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceType": "Bundle",
        "type": "collection",
        "entry": [
            {"fullUrl": patient_url, "resource": patient},
            {"fullUrl": "http://example.org/fhir/DocumentReference/doc-1", "resource": doc},
        ],
    }


def key(doc: ClinicalDocument) -> tuple[str, str]:
    return doc.patient_id, doc.assigning_authority


@pytest.mark.parametrize(
    "reference",
    [
        "Patient/pat-1",
        "http://example.org/fhir/Patient/pat-1",
        "Patient/pat-1/_history/4",
    ],
)
def test_same_identity_with_and_without_the_bundled_patient(reference: str) -> None:
    alone = parse(docref({"reference": reference}))
    bundled = parse(
        bundle(docref({"reference": reference}), "http://example.org/fhir/Patient/pat-1", PATIENT)
    )
    assert key(alone) == key(bundled) == ("pat-1", "fhir")
    assert MR in bundled.identifiers.patient_ids  # the included Patient still tells its MR
    assert MR not in alone.identifiers.patient_ids


def test_urn_uuid_reference_keys_on_the_included_patients_logical_id() -> None:
    urn = "urn:uuid:11111111-1111-4111-8111-111111111111"
    bundled = parse(bundle(docref({"reference": urn}), urn, PATIENT))
    assert key(bundled) == key(parse(docref({"reference": "Patient/pat-1"})))
    # a transaction Bundle's new Patient has no id yet: its MR is the best key there is
    no_id = {k: v for k, v in PATIENT.items() if k != "id"}
    assert key(parse(bundle(docref({"reference": urn}), urn, no_id))) == (
        MR.value,
        MR.authority,
    )


def test_subject_identifier_wins_in_every_packaging() -> None:
    ident = {"system": MR.authority, "value": MR.value}
    alone = parse(docref({"identifier": ident}))
    with_ref = parse(docref({"reference": "Patient/pat-1", "identifier": ident}))
    bundled = parse(
        bundle(
            docref({"reference": "Patient/pat-1", "identifier": ident}),
            "http://example.org/fhir/Patient/pat-1",
            PATIENT,
        )
    )
    conditional = parse(docref({"reference": f"Patient?identifier={MR.authority}|{MR.value}"}))
    assert (
        key(alone)
        == key(with_ref)
        == key(bundled)
        == key(conditional)
        == (
            MR.value,
            MR.authority,
        )
    )
    assert all(
        MR.value in {i.value for i in d.identifiers.patient_ids}
        for d in (alone, with_ref, bundled, conditional)
    )


def test_contained_patient_keys_on_its_mr_and_never_on_its_local_id() -> None:
    contained = _load("docref-contained-patient.json")
    assert key(parse(contained)) == (MR.value, MR.authority)
    anonymous = copy.deepcopy(contained)
    anonymous["contained"][0].pop("identifier")
    with pytest.raises(MissingPatientId):  # "#p" would merge every contained patient
        parse(anonymous)


def test_a_non_patient_subject_has_its_own_id_space() -> None:
    assert key(parse(docref({"reference": "Group/pat-1"}))) == ("pat-1", "fhir:Group")


def test_display_only_subject_is_missing_patient_id() -> None:
    with pytest.raises(MissingPatientId):
        parse(docref({"display": "Someone"}))


@given(
    logical=st.from_regex(r"[A-Za-z0-9\-.]{1,64}", fullmatch=True),
    base=st.sampled_from(["", "http://example.org/fhir/", "https://h.example/r4/"]),
    include=st.booleans(),
)
def test_identity_does_not_depend_on_packaging(logical: str, base: str, include: bool) -> None:
    reference = f"{base}Patient/{logical}"
    doc = docref({"reference": reference})
    resource = (
        bundle(doc, f"http://example.org/fhir/Patient/{logical}", PATIENT | {"id": logical})
        if include
        else doc
    )
    assert key(parse(resource)) == (logical, "fhir")
