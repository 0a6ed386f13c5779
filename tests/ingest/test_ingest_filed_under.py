"""to_document files a document under the ids its identifier walk read (first PID: PID-3,
else PID-2; an MR first) and the first PV1-19: the same as patient_identifier and a fresh
PV1-19 read give, for any mix of repetitions, types and empty fields."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipelines.errors import MissingPatientId
from pipelines.hl7.datatypes import cx
from pipelines.hl7.er7 import read_message
from pipelines.hl7.mapping import patient_identifier, to_document

_CX = st.tuples(
    st.sampled_from(["", "A1", "B2", "c3"]),
    st.sampled_from(["", "HOSP", "H2"]),
    st.sampled_from(["", "MR", "PI", "AN"]),
).map(lambda t: "" if not any(t) else f"{t[0]}^^^{t[1]}^{t[2]}")
_FIELD = st.lists(_CX, max_size=3).map("~".join)


@given(_FIELD, _FIELD, _FIELD, st.booleans(), _FIELD)
def test_patient_and_visit_are_what_a_fresh_read_gives(
    pid3: str, pid2: str, second_pid3: str, with_pv1: bool, pv1_19: str
) -> None:
    lines = [
        "MSH|^~\\&|S|F|R|F|20260101000000||ORU^R01|M1|P|2.5",
        f"PID|1|{pid2}|{pid3}||DOE^JANE",
        f"PID|2||{second_pid3}||ROE^RICHARD",
    ]
    if with_pv1:
        lines.append("PV1|1|I" + "|" * 17 + pv1_19)
    lines += ["OBR|1||D1|1^Note^LN", "OBX|1|TX|1^Note^LN||some text||||||F"]
    msg = read_message("\r".join(lines).encode())
    try:
        expected = patient_identifier(msg)
    except MissingPatientId:
        try:
            to_document(msg)
        except MissingPatientId as exc:
            assert "PID-3" in str(exc)
            return
        raise AssertionError("to_document filed a document patient_identifier refuses") from None
    document = to_document(msg)
    assert (document.patient_id, document.assigning_authority) == (
        expected.value,
        expected.authority,
    )
    pv1 = msg.first("PV1")
    visit = cx(pv1.raw(19, 0), msg.delimiters, msg.charset) if pv1 is not None else None
    assert document.visit_id == (visit.value if visit is not None else "")
