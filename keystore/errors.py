"""The one error hierarchy of deidstream.

It lives in the lowest package so every layer (keystore → surrogates → pipelines → service)
can raise and catch the same types. ``retriable`` tells the runner whether to retry with
backoff (infrastructure trouble) or dead-letter the input and go on (the input is at fault).
Messages carry coordinates (ids, offsets, field paths), never message content or PHI.
"""

from __future__ import annotations

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
