"""Input errors: the input is at fault, so it goes to the dead-letter topic with ``reason_class``.

Re-exports the base hierarchy from :mod:`keystore.errors` so callers import one place.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from keystore.errors import (
    DeidstreamError,
    IntegrityError,
    KeystoreError,
    KeystoreUnavailable,
    MissingKeyError,
    TransientError,
)

if TYPE_CHECKING:
    from pipelines.outcome import Outcome

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
    "UnsupportedVersion",
    "NoNarrative",
    "MissingPatientId",
    "InvalidJSON",
    "InvalidFHIR",
    "NotADocument",
    "UrlOnlyAttachment",
    "UnsupportedContentType",
    "LeakHeldBack",
    "PartialInput",
    "MalformedInput",
    "DeadlineExceeded",
    "input_errors_only",
]

_log = logging.getLogger("deidstream.ingest")


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


class UnsupportedVersion(UnsupportedMessageType):
    """MSH-12 names an HL7 version outside the ones we read (2.3 to 2.8.x)."""

    reason_class = "unsupported_version"


class MalformedInput(InputError):
    """The parser met something it does not expect in this input (a value out of range, an
    unreadable number…). The safety net of ``ingest``/``route``: the parsers raise the precise
    errors above; an unexpected exception on some input becomes this one, so that input is
    dead-lettered (MLLP ``AR``), not treated as a fault of the service. The fuzz tests assert
    it is never raised: each case found is turned into a precise error."""

    reason_class = "malformed"


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


class PartialInput(InputError):
    """Some entries of a batch/Bundle/NDJSON parsed, others failed.

    ``documents`` holds the good ones (publish them); ``entry_errors`` holds (entry index,
    error) pairs (dead-letter the input with them). A caller that does not know this class
    still dead-letters the whole input, so nothing is lost silently.
    """

    reason_class = "partial_input"

    def __init__(
        self,
        reason: str,
        *,
        documents: tuple[object, ...] = (),
        entry_errors: tuple[tuple[int, InputError], ...] = (),
        **coordinates: object,
    ) -> None:
        self.documents = documents
        self.entry_errors = entry_errors
        # the good documents' outcomes, attached by the processor after it decided them
        self.outcomes: Sequence[Outcome] = ()
        super().__init__(reason, **coordinates)


class LeakHeldBack(DeidstreamError):
    """The leak guard found a known identifier or detected PHI string in the output."""

    reason_class = "leak_guard"


class DeadlineExceeded(InputError):
    """A document cost more than its budget (``document_deadline_seconds``: its message's
    parse and its de-identification together). The input is dead-lettered with reason class
    ``too_costly`` — never retried as transient, never held: sending the same bytes again
    costs the same — so one pathological input cannot stall the stream (issue 24, item 2)."""

    reason_class = "too_costly"


class input_errors_only:  # noqa: N801 - a context manager read as the verb it names
    """Around a parser: our own errors pass; any other exception (a parser bug met on some
    input: ``ValueError``, ``IndexError``, ``RecursionError``…) becomes :class:`MalformedInput`
    — named by its type only, since its text may quote the input — and a WARNING line.

    A class rather than a ``contextlib.contextmanager`` generator: it wraps every input the
    service parses, and a generator costs its creation, two resumptions and its closing."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is None or isinstance(exc, DeidstreamError) or not isinstance(exc, Exception):
            return  # nothing raised, our own error, or not an error (KeyboardInterrupt…)
        name = type(exc).__name__
        _log.warning("%s: unexpected %s on an input, dead-lettered as malformed", self.what, name)
        raise MalformedInput(f"{self.what} could not read the input", error=name) from None
