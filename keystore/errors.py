"""The one error hierarchy of deidstream.

It lives in the lowest package so every layer (keystore → surrogates → pipelines → service)
can raise and catch the same types. ``retriable`` tells the runner whether to retry with
backoff (infrastructure trouble) or dead-letter the input and go on (the input is at fault).
Messages carry coordinates (ids, offsets, field paths), never message content or PHI.
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar


class DeidstreamError(Exception):
    """Base of every error the project raises on purpose."""

    retriable: ClassVar[bool] = False
    reason_class: ClassVar[str] = "error"

    def __init__(self, reason: str, **coordinates: object) -> None:
        self.reason = reason
        self.coordinates = {k: v for k, v in coordinates.items() if v is not None}
        super().__init__(self.__str__())

    def __str__(self) -> str:
        if not self.coordinates:
            return self.reason
        where = ", ".join(f"{k}={v}" for k, v in sorted(self.coordinates.items()))
        return f"{self.reason} ({where})"


class TransientError(DeidstreamError):
    """Something outside the input failed (broker, database); retry, do not dead-letter."""

    retriable = True
    reason_class = "transient"


class KeystoreError(DeidstreamError):
    """The key store refused or failed an operation."""

    reason_class = "keystore"


class KeystoreUnavailable(KeystoreError, TransientError):
    """The database could not be reached; the operation may succeed later."""

    retriable = True
    reason_class = "keystore_unavailable"


class IntegrityError(KeystoreError):
    """A record failed authentication: tampered, swapped or sealed under an unknown key."""

    reason_class = "keystore_integrity"


class MissingKeyError(KeystoreError):
    """No master key is configured, or the key that sealed a record is not available."""

    reason_class = "missing_key"


class ForgottenPatientError(KeystoreError):
    """The patient was crypto-shredded; their state can never be read again."""

    reason_class = "forgotten"


class FaultKind(StrEnum):
    """Why the key store's database refused an operation: never the record's fault."""

    CONNECTION = "connection"  # cannot connect, connection lost, server shutting down
    PERMISSION = "permission"  # a revoked privilege, a role that may not log in
    SCHEMA = "schema"  # a missing schema, table or column: migrations not run, or dropped
    READ_ONLY = "read_only"  # a read-only role, transaction or replica; a read-only file
    RESOURCES = "resources"  # disk full, out of memory, too many connections
    CONTENTION = "contention"  # lock or statement timeout, deadlock, serialization, busy
    CORRUPT = "corrupt"  # the database file or data is damaged
    DATABASE = "database"  # any other database error


class KeystoreFault(KeystoreUnavailable):
    """The key store's database refused an operation for a reason outside the record: a
    stream fault (stop the batch, commit nothing, not ready, retry with backoff), never a
    dead letter. ``kind`` says why; the reason class is ``keystore_<kind>`` (set for each
    subclass from its ``kind``, which also registers it in :data:`FAULTS`)."""

    kind: ClassVar[FaultKind] = FaultKind.DATABASE
    reason_class = "keystore_database"

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.reason_class = f"keystore_{cls.kind.value}"
        FAULTS[cls.kind] = cls


FAULTS: dict[FaultKind, type[KeystoreFault]] = {FaultKind.DATABASE: KeystoreFault}


class KeystoreConnectionFault(KeystoreFault):
    kind = FaultKind.CONNECTION


class KeystorePermissionFault(KeystoreFault):
    kind = FaultKind.PERMISSION


class KeystoreSchemaFault(KeystoreFault):
    """Tables or schema missing or older than this program: run ``deidstream keys migrate``."""

    kind = FaultKind.SCHEMA


class KeystoreReadOnlyFault(KeystoreFault):
    kind = FaultKind.READ_ONLY


class KeystoreResourcesFault(KeystoreFault):
    kind = FaultKind.RESOURCES


class KeystoreContentionFault(KeystoreFault):
    kind = FaultKind.CONTENTION


class KeystoreCorruptFault(KeystoreFault):
    kind = FaultKind.CORRUPT


def fault(kind: FaultKind, reason: str, **coordinates: object) -> KeystoreFault:
    """The error of ``kind`` (its class carries the reason class)."""
    return FAULTS[kind](reason, **coordinates)


class KeyRetiredError(MissingKeyError):
    """This instance's primary master key was retired (``keys rotate --retire-old``): it
    must not seal anything under it. Configure the new key first and restart."""

    reason_class = "key_retired"


class RetireRefused(KeystoreError):
    """Retiring a master key was refused: a live instance still seals with it, or records
    (or the store root) are still wrapped under it."""

    reason_class = "retire_refused"
