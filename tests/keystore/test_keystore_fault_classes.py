"""One fault class per FaultKind, each with the reason class its kind names."""

from __future__ import annotations

import pytest

from keystore.errors import (
    FAULTS,
    FaultKind,
    KeystoreConnectionFault,
    KeystoreCorruptFault,
    KeystoreFault,
    KeystoreSchemaFault,
    fault,
)


def test_every_kind_has_its_own_class_and_reason_class() -> None:
    assert set(FAULTS) == set(FaultKind)
    for kind, cls in FAULTS.items():
        assert cls.kind is kind
        assert cls.reason_class == f"keystore_{kind.value}"
        assert issubclass(cls, KeystoreFault)
        assert cls.retriable


@pytest.mark.parametrize(
    ("kind", "cls"),
    [
        (FaultKind.CONNECTION, KeystoreConnectionFault),
        (FaultKind.SCHEMA, KeystoreSchemaFault),
        (FaultKind.CORRUPT, KeystoreCorruptFault),
        (FaultKind.DATABASE, KeystoreFault),
    ],
)
def test_fault_builds_the_named_class(kind: FaultKind, cls: type[KeystoreFault]) -> None:
    made = fault(kind, "refused", sqlstate="42501")
    assert type(made) is cls
    assert made.reason_class == f"keystore_{kind.value}"
    assert str(made) == "refused (sqlstate=42501)"
