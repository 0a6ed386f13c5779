"""What an MLLP gateway must know before it takes a message: that it is HL7 v2 of a type we
handle, and whose it is (the Kafka key: one patient's messages stay in one partition).

Uses the fast ER7 reader only (split, charset, MSH, PID) — a few microseconds — and the same
rules as the full mapping (:func:`~pipelines.hl7.mapping.message_type`,
:func:`~pipelines.hl7.mapping.patient_identifier`), so a message the gateway keys is keyed by
the patient the pipeline later files it under. Errors are the typed input errors.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.document import Identifier
from pipelines.errors import EmptyInput, input_errors_only
from pipelines.hl7.er7 import read_message
from pipelines.hl7.framing import split_messages
from pipelines.hl7.mapping import message_type, patient_identifier

_UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class Route:
    patient: Identifier
    message_type: str  # MSH-9.1
    trigger: str  # MSH-9.2
    messages: int  # messages in the frame (a batch may hold several; keyed by the first)

    @property
    def key(self) -> bytes:
        """The Kafka key: the patient id value (as ``deidstream replay`` keys a one-MR PID-3)."""
        return self.patient.value.encode("utf-8")


def route(payload: bytes) -> Route:
    """Route one MLLP payload (the bytes between 0x0B and 0x1C 0x0D); only ``InputError``
    escapes (anything else unexpected becomes ``MalformedInput``)."""
    with input_errors_only("the router"):
        return _route(payload)


def _route(payload: bytes) -> Route:
    body = payload.lstrip(b" \t\r\n").removeprefix(_UTF8_BOM)
    if not body.strip(b" \t\r\n\x00"):
        raise EmptyInput("frame holds no data")
    messages = split_messages(body)
    msg = read_message(messages[0])
    mtype, trigger = message_type(msg)
    return Route(patient_identifier(msg), mtype, trigger, len(messages))


__all__ = ["Route", "route"]
