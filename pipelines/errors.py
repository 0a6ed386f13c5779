"""Input errors: the input is at fault, so it goes to the dead-letter topic with ``reason_class``.

Re-exports the base hierarchy from :mod:`keystore.errors` so callers import one place.
"""

from __future__ import annotations

from keystore.errors import (
    DeidstreamError,
    IntegrityError,
    KeystoreError,
    KeystoreUnavailable,
    MissingKeyError,
    TransientError,
)

__all__ = [
    "DeidstreamError",
    "TransientError",
    "KeystoreError",
    "KeystoreUnavailable",
    "IntegrityError",
    "MissingKeyError",
    "InputError",
    "EmptyInput",
    "OversizeInput",
    "BadEncoding",
    "NotHL7",
    "NoMSH",
    "BadEncodingCharacters",
    "UnsupportedMessageType",
    "NoNarrative",
    "MissingPatientId",
    "InvalidJSON",
    "InvalidFHIR",
    "NotADocument",
    "UrlOnlyAttachment",
    "UnsupportedContentType",
    "LeakHeldBack",
]


class InputError(DeidstreamError):
    """The message itself cannot be processed; never retried."""

    reason_class = "invalid_input"


class EmptyInput(InputError):
    reason_class = "empty"


class OversizeInput(InputError):
    reason_class = "oversize"


class BadEncoding(InputError):
    """Bytes are not valid in the declared or detected character encoding."""

    reason_class = "bad_encoding"


class NotHL7(InputError):
    reason_class = "not_hl7"


class NoMSH(InputError):
    reason_class = "no_msh"


class BadEncodingCharacters(InputError):
    reason_class = "bad_encoding_characters"


class UnsupportedMessageType(InputError):
    reason_class = "unsupported_message_type"


class NoNarrative(InputError):
    reason_class = "no_narrative"


class MissingPatientId(InputError):
    reason_class = "missing_patient_id"


class InvalidJSON(InputError):
    reason_class = "invalid_json"


class InvalidFHIR(InputError):
    reason_class = "invalid_fhir"


class NotADocument(InputError):
    reason_class = "not_a_document"


class UrlOnlyAttachment(InputError):
    reason_class = "url_only_attachment"


class UnsupportedContentType(InputError):
    reason_class = "unsupported_content_type"


class LeakHeldBack(DeidstreamError):
    """The leak guard found a known identifier or detected PHI string in the output."""

    reason_class = "leak_guard"
