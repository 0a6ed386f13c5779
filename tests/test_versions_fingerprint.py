"""versions.fingerprint hashes with the research key encoded once: the same fingerprint as
the documented construction with ``keyed_hash`` (property test over texts, keys, ids,
statuses, versions and filing times)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from pipelines.document import ClinicalDocument, ReportType, Status, VersionMarker
from pipelines.versions import (
    STATUS_RANK,
    Fingerprint,
    VersionOrder,
    _utc_micros,
    fingerprint,
    keyed_hash,
    normalise,
)

T0 = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)


def _reference(document: ClinicalDocument, key: str) -> Fingerprint:
    text_hash = keyed_hash(key, normalise(document.text))
    rank = STATUS_RANK.get(document.status, STATUS_RANK[Status.FINAL])
    filed = document.version.filing_time or document.document_date
    version = document.version.version_number
    order = VersionOrder(
        filing_us=_utc_micros(filed),
        status_rank=rank,
        version=-1 if version is None else version,
        tiebreak=keyed_hash(key, "msg\x1f" + document.message_id, 8),
        text_hash=text_hash,
    )
    version_id = keyed_hash(key, f"version\x1f{text_hash.hex()}\x1f{rank}", 16).hex()
    return Fingerprint(key=key, text_hash=text_hash, order=order,
                       retraction=document.status is Status.ENTERED_IN_ERROR,
                       version_id=version_id)


@given(
    text=st.text(max_size=80),
    key=st.one_of(st.text(max_size=80), st.sampled_from(["k", "é" * 40, "x" * 70])),
    message_id=st.text(max_size=20),
    status=st.sampled_from(list(Status)),
    version=st.none() | st.integers(-3, 10**6),
    minutes=st.none() | st.integers(-10**6, 10**6),
)
def test_fingerprint_equals_the_keyed_hash_construction(
    text: str, key: str, message_id: str, status: Status, version: int | None,
    minutes: int | None
) -> None:
    filed = None if minutes is None else T0 + timedelta(minutes=minutes)
    document = ClinicalDocument(
        text=text,
        patient_id="P1",
        visit_id="V1",
        report_type=ReportType("11506-3", "Progress note", "http://loinc.org"),
        status=status,
        version=VersionMarker(filing_time=filed, version_number=version),
        message_id=message_id,
    )
    assert fingerprint(document, key) == _reference(document, key)
