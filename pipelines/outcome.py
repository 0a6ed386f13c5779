"""What processing one document decided: an :class:`Outcome` of one :class:`OutcomeKind`.

The processor (:mod:`pipelines.process`) builds them; the service's runner routes them
(``service/runner/outputs.py`` matches the kind exhaustively), confirms them after the
broker's acknowledgement (``Processor.commit``), and test doubles of the processor return
the same type. Outcomes carry no PHI outside ``value`` (the research DocumentReference).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from pipelines.versions import Mark, State

EMPTY_COUNTS: Mapping[str, int] = MappingProxyType({})
EMPTY_TIMES: Mapping[str, float] = MappingProxyType({})


class OutcomeKind(StrEnum):
    """What becomes of one document (a ``StrEnum``: its value is the wire/metric name)."""

    PUBLISH = "publish"  # key + research DocumentReference JSON
    TOMBSTONE = "tombstone"  # key, value None: the report was entered in error
    DUPLICATE = "duplicate"  # same text as a version already seen: nothing to send
    SUPERSEDED = "superseded"  # an older version than one already seen: nothing to send
    HELD = "held"  # the leak guard kept it back: route the input aside
    CONTEXT = "context"  # an ADT message: identifiers kept in the patient's state


@dataclass(frozen=True, slots=True)
class AckToken:
    """What ``commit`` needs to mark one decided version acknowledged (no PHI)."""

    key: str
    text_hash: bytes
    state: State
    mark: bytes | None = None  # the mark as process() left it (commit's expected value)
    # ``mark`` decoded (what process() decided): commit need not parse it again
    decoded: Mark | None = field(default=None, compare=False, repr=False)
    version_id: str = ""  # the version decided (empty: text and state alone are compared)


@dataclass(frozen=True, slots=True, kw_only=True)  # slots: two per document, no dict each
class Outcome:
    """One document's decided outcome; built by keyword."""

    kind: OutcomeKind
    research_key: str | None = None  # Kafka key: publish / tombstone (and held, for routing)
    value: bytes | None = None  # research DocumentReference JSON (publish); None otherwise
    headers: tuple[tuple[str, str], ...] = ()  # no PHI: source, version, content-type…
    reason_class: str | None = None
    reason: str | None = None  # no PHI
    span_counts: Mapping[str, int] = field(default_factory=lambda: EMPTY_COUNTS)
    stage_seconds: Mapping[str, float] = field(default_factory=lambda: EMPTY_TIMES)
    ack: AckToken | None = field(default=None, compare=False, repr=False)


def held_meta(base: list[tuple[str, str]], reason: str, pseudonym: str) -> list[tuple[str, str]]:
    """A held document's headers: ``base``, its reason, and its patient's pseudonym as
    ``subject.reference`` has it (``Patient/…``, what ``keys reveal`` takes) — the runner
    logs it with the input's coordinates (a hold is an incident to look into); no text."""
    return [*base, ("reason", reason), ("patient", f"Patient/{pseudonym}")]


__all__ = ["EMPTY_COUNTS", "EMPTY_TIMES", "AckToken", "Outcome", "OutcomeKind", "held_meta"]
