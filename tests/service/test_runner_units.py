"""Runner pieces that need no broker: content hints, safe reasons, partition lag."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipelines.errors import InvalidJSON, KeystoreUnavailable, NotHL7
from service.runner import PartitionState, content_hint, is_retriable, safe_reason


def test_content_hint_from_header_then_topic() -> None:
    assert content_hint("clinical.hl7v2", None) == "hl7v2"
    assert content_hint("clinical.fhir", []) == "fhir"
    assert content_hint("inbound", [("content-type", b"application/fhir+json")]) == "fhir"
    assert content_hint("clinical.fhir", [("Content-Type", b"x-application/hl7-v2+er7")]) == "hl7v2"
    assert content_hint("inbound", [("other", b"x")]) == "auto"


@given(st.text(max_size=30), st.lists(st.tuples(st.text(max_size=20), st.binary(max_size=30))))
def test_content_hint_total(topic: str, headers: list[tuple[str, bytes]]) -> None:
    assert content_hint(topic, headers) in ("hl7v2", "fhir", "auto")


def test_reasons_never_carry_foreign_exception_text() -> None:
    phi = "Jane Doe 123-45-6789"
    cls, reason = safe_reason(ValueError(f"could not parse {phi}"))
    assert cls == "internal_error" and phi not in reason and "ValueError" in reason
    cls, reason = safe_reason(NotHL7("input does not start with MSH", offset=0))
    assert cls == "not_hl7" and "offset=0" in reason
    cls, _ = safe_reason(InvalidJSON("bad json"))
    assert cls == "invalid_json"


def test_retriable_classification() -> None:
    assert is_retriable(KeystoreUnavailable("db down"))
    assert not is_retriable(NotHL7("nope"))
    assert is_retriable(ConnectionError())
    assert not is_retriable(ValueError())


def test_partition_lag() -> None:
    assert PartitionState().lag is None
    assert PartitionState(committed=5, highwater=9).lag == 4
    assert PartitionState(committed=None, highwater=3).lag is None
    assert PartitionState(position=2, highwater=3).lag == 1
    assert PartitionState(committed=3, position=9, highwater=9).lag == 6
