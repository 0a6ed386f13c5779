"""HL7 v2 (ER7) ingest: a fast exact reader for the hot path, hl7apy where the standard matters.

- :mod:`pipelines.hl7.framing` — MLLP frames, batches, segment lines (on bytes)
- :mod:`pipelines.hl7.er7`     — charset, encoding characters, segments, field paths
- :mod:`pipelines.hl7.escapes` — escape sequences and formatting commands → text
- :mod:`pipelines.hl7.mapping` — one ER7 message → :class:`~pipelines.document.ClinicalDocument`
- :mod:`pipelines.hl7.ack`     — ACK/NAK messages and precise malformed-message reasons (hl7apy)
"""

from __future__ import annotations

from pipelines.hl7.er7 import Delimiters, Er7Message, Segment, read_message
from pipelines.hl7.escapes import decode_escapes
from pipelines.hl7.framing import split_messages, unframe_mllp
from pipelines.hl7.mapping import parse_hl7v2, to_document

__all__ = [
    "Delimiters",
    "Er7Message",
    "Segment",
    "decode_escapes",
    "parse_hl7v2",
    "read_message",
    "split_messages",
    "to_document",
    "unframe_mllp",
]
