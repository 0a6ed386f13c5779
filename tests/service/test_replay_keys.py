"""replay: message splitting and the patient key an interface engine would route by."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from service.commands.demo import demo_files, side_by_side
from service.commands.replay import fhir_patient_key, hl7_patient_key, messages_of, split_hl7

MSG = (
    b"MSH|^~\\&|A|B|C|D|20250101||ORU^R01|1|P|2.5\r"
    b"PID|1||MRN1^^^H^MR~SSN9^^^SSA^SS||Doe^Jane\rOBX|1|TX|x||text||||||F\r"
)


def test_split_hl7_handles_framing_batches_and_line_endings() -> None:
    other = MSG.replace(b"MRN1", b"MRN2").replace(b"|1|P|", b"|2|P|")
    data = (
        b"FHS|^~\\&\nBHS|^~\\&\n\x0b"
        + MSG.replace(b"\r", b"\r\n")
        + b"\x1c\r"
        + b"\n\n"
        + other.replace(b"\r", b"\n")
        + b"BTS|2\nFTS|1\n"
    )
    msgs = split_hl7(data)
    assert len(msgs) == 2
    assert all(m.startswith(b"MSH|") and m.endswith(b"\r") and b"\n" not in m for m in msgs)
    assert [hl7_patient_key(m) for m in msgs] == [b"MRN1", b"MRN2"]


def test_hl7_key_uses_the_message_delimiters() -> None:
    odd = MSG.replace(b"|", b"#").replace(b"^", b"@")
    assert hl7_patient_key(odd) == b"MRN1"
    assert hl7_patient_key(b"MSH|^~\\&|no pid") is None
    assert hl7_patient_key(b"garbage") is None


def test_fhir_keys() -> None:
    doc = {"resourceType": "DocumentReference", "subject": {"reference": "Patient/p-9"}}
    bundle = {
        "resourceType": "Bundle",
        "entry": [
            {"resource": {"resourceType": "Encounter"}},
            {"resource": {"resourceType": "Patient", "identifier": [{"value": "M-5"}]}},
        ],
    }
    contained = {"resourceType": "DocumentReference", "subject": {"reference": "#pat"}}
    assert fhir_patient_key(json.dumps(doc).encode()) == b"p-9"
    assert fhir_patient_key(json.dumps(bundle).encode()) == b"M-5"
    assert fhir_patient_key(json.dumps(contained).encode()) == b"pat"
    assert fhir_patient_key(b"{not json") is None


def test_ndjson_one_record_per_line(tmp_path: Path) -> None:
    f = tmp_path / "docs.ndjson"
    lines = [
        {"resourceType": "DocumentReference", "subject": {"reference": f"Patient/{i}"}}
        for i in range(3)
    ]
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n", encoding="utf-8")
    assert [k for k, _ in messages_of(f)] == [b"0", b"1", b"2"]


def test_demo_files_are_keyed_except_the_malformed_one() -> None:
    files = demo_files()
    assert len(files) >= 8
    for path in files:
        records = list(messages_of(path))
        assert len(records) == 1, path.name
        key = records[0][0]
        assert (key is None) == ("malformed" in path.name), path.name


@given(st.binary(max_size=300))
def test_key_readers_never_raise(data: bytes) -> None:
    hl7_patient_key(data)
    fhir_patient_key(data)
    split_hl7(data)


def test_side_by_side_keeps_both_columns() -> None:
    out = side_by_side("L", "left text " * 20, "R", "right")
    lines = out.splitlines()
    assert lines[0].startswith("L") and "| R" in lines[0]
    assert all(" | " in line or "-+-" in line for line in lines)
    assert "right" in lines[2]
