"""Our own HL7 v2 fixtures: one per message type, version rule input and error class."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from pipelines.document import Address, Identifier, PersonName, Source, Status
from pipelines.errors import (
    BadEncoding,
    BadEncodingCharacters,
    EmptyInput,
    InputError,
    MissingPatientId,
    NoMSH,
    NoNarrative,
    NotHL7,
    OversizeInput,
    PartialInput,
    UnsupportedContentType,
    UnsupportedMessageType,
    UnsupportedVersion,
)
from pipelines.hl7.framing import mllp_frame
from pipelines.ingest import ingest, parse_input
from tests.conftest import FIXTURES

H = FIXTURES / "hl7v2"
LIMIT = 1 << 20
EST = timezone(timedelta(hours=-5))


def one(name: str):  # type: ignore[no-untyped-def]
    docs = parse_input((H / name).read_bytes(), max_bytes=LIMIT)
    assert len(docs) == 1
    return docs[0]


def test_oru_narrative_joins_obx_and_nte_in_order_with_escapes_decoded() -> None:
    doc = one("oru-r01-tx-ft-nte-v251.hl7")
    assert doc.source is Source.HL7V2
    assert doc.text == (
        "CT CHEST WITHOUT CONTRAST\n"
        "FINDINGS:\nNo mass & no effusion.\nRatio 3^4 | size 5~6 mm, escape \\ kept.Bold end\n"
        "Compared with prior study\ndated last year\n"
        "Stable appearance\n"
        "Hex ABC done"
    )
    assert "Patient prefers morning visits" not in doc.text  # NTE after PID: not the report
    assert "170" not in doc.text  # NM results are not narrative
    assert doc.message_id == "ORU-0001"
    assert doc.patient_id == "MRN00417"
    assert doc.assigning_authority == "NORTHCLINIC"
    assert doc.visit_id == "V5521"
    assert doc.document_id == "FI-1"
    assert (doc.report_type.code, doc.report_type.display, doc.report_type.system) == (
        "24627-2",
        "CT Chest",
        "LN",
    )
    assert doc.status is Status.FINAL
    assert doc.version.filing_time == datetime(2024, 3, 5, 10, 0, tzinfo=EST)
    assert doc.document_date == datetime(2024, 3, 5, 9, 0, tzinfo=EST)


def test_identifiers_from_pid_nk1_pv1_obr() -> None:
    ids = one("oru-r01-tx-ft-nte-v251.hl7").identifiers
    assert PersonName("Quillfeather", ("Ondine", "Marisol"), "Ms", "") in ids.patient_names
    assert PersonName("Quillfeather", ("Ondi",)) in ids.patient_names  # PID-9 alias
    assert PersonName("Quillfeather", ("Bastian",), "Mr") in ids.relative_names  # NK1-2
    assert ids.birth_date == date(1961, 4, 12)
    assert Identifier("MRN00417", "NORTHCLINIC", "MR") in ids.patient_ids
    assert Identifier("ACC-55", "NORTHCLINIC", "AN") in ids.patient_ids
    assert Identifier("EXT-77", "OLDSYS", "") in ids.patient_ids  # PID-2
    assert ids.ssn == ("999-00-1234",)
    assert ids.account_numbers == ("ACCT-3321",)
    assert Identifier("Q1234567", "VT", "DL") in ids.other_ids
    assert Identifier("V5521", "NORTHCLINIC", "VN") in ids.other_ids
    assert (
        Address(("42 Larkspur Way", "Apt 3"), "Brambleton", "VT", "05009", "USA") in ids.addresses
    )
    assert {"(802)555-0143", "(802)555-0199", "(802)555-0177"} <= set(ids.phones)
    assert ids.emails == ("ondine.q@example.org",)
    families = {p.family for p in ids.provider_names}
    # PV1-7/8/9/17, OBR-16 and OBR-32 (NDL subcomponents)
    assert {"Marchbanks", "Tolliver", "Ashgrove", "Okonkwo", "Vandermeer", "Kestrel"} <= families


def test_ed_base64_html_becomes_text() -> None:
    doc = one("oru-r01-ed-html-base64-v24.hl7")
    assert doc.text == "Echo report\n\nNormal left ventricle.\n\nEF 60%"
    assert doc.status is Status.PRELIMINARY  # OBR-25 P


def test_crlf_and_obr25_corrected() -> None:
    doc = one("oru-r01-corrected-crlf-v23.hl7")
    assert doc.status is Status.CORRECTED
    assert doc.text == "Corrected: no pneumothorax."


def test_msh18_latin1_is_decoded() -> None:
    assert "unauffällig, Größe" in one("oru-r01-latin1-v25.hl7").text


@pytest.mark.parametrize(
    ("name", "status", "doc_id", "replaces", "type_code"),
    [
        ("mdm-t02-v25.hl7", Status.FINAL, "DOC-1", None, "PN"),
        ("mdm-t04-v26.hl7", Status.FINAL, "DOC-2", None, "PN"),  # LA legally authenticated
        ("mdm-t06-addendum-v27.hl7", Status.AMENDED, "DOC-3", "DOC-1", "PN"),
        ("mdm-t08-edit-v28.hl7", Status.AMENDED, "DOC-1-v2", "DOC-1", "PN"),
        ("mdm-t10-replacement-v231.hl7", Status.PRELIMINARY, "DOC-9", "DOC-8", "DS"),  # DI
        ("mdm-t02-cancelled-v25.hl7", Status.ENTERED_IN_ERROR, "DOC-4", None, "PN"),  # CA
    ],
)
def test_mdm_version_facts(
    name: str, status: Status, doc_id: str, replaces: str | None, type_code: str
) -> None:
    doc = one(name)
    assert doc.status is status
    assert doc.document_id == doc_id
    assert doc.version.replaces_id == replaces
    assert doc.report_type.code == type_code
    assert "Lindqvist" in {p.family for p in doc.identifiers.provider_names}  # TXA-9
    assert "Pemberton" in {p.family for p in doc.identifiers.provider_names}  # TXA-22


def test_mdm_repetition_is_a_line_break_and_t08_edit_time_is_filing_time() -> None:
    doc = one("mdm-t08-edit-v28.hl7")
    assert doc.text.startswith("Follow-up visit.\nDoing well since last visit.\nPlan: continue.\n")
    assert doc.version.filing_time == datetime(2024, 3, 7, 8, 15, tzinfo=EST)  # TXA-8
    assert doc.document_date == datetime(2024, 3, 5, 8, 0, tzinfo=EST)  # TXA-4


@pytest.mark.parametrize("trigger", ["a01", "a03", "a04", "a08"])
def test_adt_is_context_only(trigger: str) -> None:
    doc = one(f"adt-{trigger}-v25.hl7")
    assert doc.context_only and doc.text == ""
    assert doc.patient_id == "MRN00417"
    assert doc.identifiers.patient_names[0].family == "Quillfeather"


def test_batch_keeps_good_messages_and_reports_the_bad_one() -> None:
    raw = (H / "batch-fhs-bhs-v25.hl7").read_bytes()
    result = ingest(raw, max_bytes=LIMIT)
    assert [d.message_id for d in result.documents] == ["MDM-0001", "ADT-A08"]
    assert [(i, type(e)) for i, e in result.errors] == [(1, NoNarrative)]
    with pytest.raises(PartialInput) as info:
        parse_input(raw, max_bytes=LIMIT)
    assert len(info.value.documents) == 2
    assert info.value.entry_errors[0][0] == 1


def test_mllp_frames_bom_and_lf_are_accepted() -> None:
    a = (H / "mdm-t02-v25.hl7").read_bytes()
    b = (H / "oru-r01-corrected-crlf-v23.hl7").read_bytes()
    framed = mllp_frame(b"\xef\xbb\xbf" + a.replace(b"\r", b"\n")) + mllp_frame(b)
    docs = parse_input(framed, max_bytes=LIMIT)
    assert [d.message_id for d in docs] == ["MDM-0001", "ORU-0003"]


def test_continuation_line_is_joined_to_its_segment() -> None:
    raw = (H / "mdm-t02-v25.hl7").read_bytes().replace(b"Seen with Dr.", b"Seen with\rDr.")
    doc = parse_input(raw, max_bytes=LIMIT)[0]
    assert doc.text.endswith("Seen with\nDr. Vandermeer.")


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("err-no-msh.hl7", NoMSH),
        ("err-bad-encoding-characters.hl7", BadEncodingCharacters),
        ("err-unsupported-type.hl7", UnsupportedMessageType),
        ("err-unsupported-version.hl7", UnsupportedVersion),
        ("err-missing-patient-id.hl7", MissingPatientId),
        ("err-bad-encoding-utf8.hl7", BadEncoding),
        ("err-bad-base64.hl7", BadEncoding),
        ("err-not-hl7.txt", NotHL7),
        ("err-empty.hl7", EmptyInput),
        ("oru-r01-no-narrative-v25.hl7", NoNarrative),
        ("oru-r01-pdf-only-v251.hl7", UnsupportedContentType),
    ],
)
def test_error_classes(name: str, error: type[InputError]) -> None:
    raw = (H / name).read_bytes()
    with pytest.raises(error) as info:
        parse_input(raw, max_bytes=LIMIT)
    assert type(info.value) is error
    reason = str(info.value)
    # reasons carry coordinates only: none of the message's values may leak into them
    for value in ("Quillfeather", "Ondine", "MRN00417", "999-00-1234", "Larkspur", "caf"):
        assert value not in reason


def test_oversize_is_checked_before_parsing() -> None:
    with pytest.raises(OversizeInput):
        parse_input((H / "mdm-t02-v25.hl7").read_bytes(), max_bytes=100)


def test_a_bad_mllp_frame_does_not_lose_the_good_ones() -> None:
    good = (H / "mdm-t02-v25.hl7").read_bytes()
    framed = mllp_frame(good) + mllp_frame(b"PID|1|orphan") + mllp_frame(good)
    result = ingest(framed, max_bytes=LIMIT)
    assert len(result.documents) == 2
    assert [(i, type(e)) for i, e in result.errors] == [(1, NoMSH)]


def test_an_oru_with_two_patients_gives_one_document_each() -> None:
    raw = (
        b"MSH|^~\\&|A|B|C|D|20240101||ORU^R01|M2|P|2.5\r"
        b"PID|1||P-ONE^^^H^MR||First^Patient\rOBR|1||F-1|XR^X-ray\rOBX|1|TX|XR||Report one.\r"
        b"PID|2||P-TWO^^^H^MR||Second^Patient\rOBR|1||F-2|CT^CT\rOBX|1|TX|CT||Report two.\r"
    )
    docs = parse_input(raw, max_bytes=LIMIT)
    assert [(d.patient_id, d.document_id, d.text) for d in docs] == [
        ("P-ONE", "F-1", "Report one."),
        ("P-TWO", "F-2", "Report two."),
    ]
    assert [n.family for n in docs[1].identifiers.patient_names] == ["Second"]
    from pipelines.hl7.mapping import parse_hl7v2

    with pytest.raises(UnsupportedMessageType):
        parse_hl7v2(raw)
