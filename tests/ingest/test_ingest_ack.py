"""ACK/NAK building and hl7apy diagnosis: standard shape, no PHI, no clock."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hl7apy.parser import parse_message
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.errors import InputError
from pipelines.hl7.ack import ACK_CODES, build_ack, diagnose
from pipelines.hl7.framing import mllp_frame
from pipelines.ingest import parse_input
from tests.conftest import FIXTURES

H = FIXTURES / "hl7v2"
NOW = datetime(2024, 3, 5, 15, 0, tzinfo=UTC)


def _segments(ack: bytes) -> dict[str, list[str]]:
    return {line[:3]: line.split("|") for line in ack.decode().split("\r") if line}


def test_aa_echoes_control_id_and_addresses_the_sender() -> None:
    raw = (H / "mdm-t02-v25.hl7").read_bytes()
    ack = build_ack(mllp_frame(raw), "AA", now=NOW)
    seg = _segments(ack)
    assert seg["MSH"][2:6] == ["DEIDSTREAM", "", "RADIS", "NORTHCLINIC"]
    assert seg["MSH"][6] == "20240305150000+0000"
    assert seg["MSH"][8] == "ACK^T02^ACK"
    assert seg["MSH"][11] == "2.5"
    assert seg["MSA"][1:3] == ["AA", "MDM-0001"]
    assert "ERR" not in seg
    parse_message(ack.decode())  # hl7apy reads its own output back


def test_nak_for_a_dead_lettered_message_has_err_and_no_phi() -> None:
    raw = (H / "oru-r01-no-narrative-v25.hl7").read_bytes()
    with pytest.raises(InputError) as info:
        parse_input(raw, max_bytes=1 << 20)
    ack = build_ack(raw, "AE", str(info.value), reason_class=info.value.reason_class, now=NOW)
    seg = _segments(ack)
    assert seg["MSA"][1:3] == ["AE", "ORU-0005"]
    assert seg["ERR"][3] == "101^Required field missing^HL70357"  # no text OBX: a missing field
    assert seg["ERR"][4] == "E"
    assert b"Quillfeather" not in ack and b"MRN00417" not in ack


def test_reject_codes_and_old_versions_use_err1() -> None:
    raw = (H / "mdm-t10-replacement-v231.hl7").read_bytes()
    ack = build_ack(
        raw, "AR", "unsupported | type ^ x", reason_class="unsupported_message_type", now=NOW
    )
    seg = _segments(ack)
    assert seg["MSA"][1] == "AR" and seg["MSA"][3] == "unsupported   type   x"
    assert seg["ERR"][1] == "^^^200&Unsupported message type&HL70357"


def test_ack_for_unreadable_input_still_builds() -> None:
    ack = build_ack(b"not hl7 at all", "AR", "not HL7", now=NOW)
    seg = _segments(ack)
    assert seg["MSA"][1] == "AR" and seg["MSH"][11] == "2.5"
    with pytest.raises(ValueError, match="ACK code"):
        build_ack(b"", "XX")


def test_diagnose_names_positions_not_values() -> None:
    raw = (H / "mdm-t02-v25.hl7").read_bytes().replace(b"\rPV1|", b"\rQ9Z|Quillfeather|\rPV1|")
    findings = diagnose(raw)
    assert findings and findings[0] == "segment #3: not a segment of HL7 2.5"
    assert not any("Quillfeather" in f or "Q9Z" in f for f in findings)
    assert diagnose(b"MSH|^^\\&|x") == ("MSH-1/MSH-2 encoding characters are not distinct",)
    assert diagnose(b"") == ("empty message",)


def test_reason_headers_add_hl7apy_findings_for_structural_errors() -> None:
    from pipelines.ingest import reason_headers

    raw = (H / "err-missing-patient-id.hl7").read_bytes()
    with pytest.raises(InputError) as info:
        parse_input(raw, max_bytes=1 << 20)
    headers = reason_headers(info.value, raw)
    assert headers["reason_class"] == "missing_patient_id"
    assert "PID_3" in headers["hl7_findings"]
    assert "Nobody" not in "".join(headers.values())


# -- the direct ER7 composer gives hl7apy's bytes ----------------------------------------

_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
_HD = st.text(alphabet="ABCXYZ09 ._-^&", max_size=12)
_ID = st.text(alphabet="ABC0123456789-_.", max_size=25)


@settings(max_examples=300, deadline=None)
@given(
    app=_HD,
    facility=_HD,
    control=_ID,
    trigger=st.sampled_from(["R01", "T02", "A08", "", "X^Y"]),
    version=st.sampled_from(["2.3", "2.3.1", "2.4", "2.5", "2.5.1", "2.6", "2.8", "9.9", ""]),
    processing=st.sampled_from(["P", "T", "D^A", ""]),
    code=st.sampled_from(sorted(ACK_CODES)),
    text=_TEXT,
    reason=st.sampled_from(["", "missing_patient_id", "unsupported_version", "other"]),
    stamp=st.sampled_from(["", "20240305101500-0500", "20240305"]),
    with_now=st.booleans(),
)
def test_direct_ack_is_byte_identical_to_hl7apy(
    app: str,
    facility: str,
    control: str,
    trigger: str,
    version: str,
    processing: str,
    code: str,
    text: str,
    reason: str,
    stamp: str,
    with_now: bool,
) -> None:
    mtype = f"ORU^{trigger}" if trigger else "ORU"
    raw = f"MSH|^~\\&|{app}|{facility}|DEID|R|{stamp}||{mtype}|{control}|{processing}|{version}\r"
    raw += "PID|1||X^^^A^MR\r"
    now = NOW if with_now else None
    if not with_now and not stamp:
        return  # hl7apy stamps MSH-7 from its own clock: nothing to compare
    kwargs = {"reason_class": reason, "now": now}
    fast = build_ack(raw.encode(), code, text, **kwargs)  # type: ignore[arg-type]
    reference = build_ack(raw.encode(), code, text, engine="hl7apy", **kwargs)  # type: ignore[arg-type]
    assert fast == reference
    if code[1] != "A" and version not in ("2.3", "2.3.1", "2.4"):
        # ERR-3 is the third field in every version (hl7apy's own 2.8 ERR writes it one
        # field early: build_ack writes that segment itself)
        err = fast.split(b"\r")[-1].split(b"|")
        assert err[3].endswith(b"^HL70357") and err[1:3] == [b"", b""]
