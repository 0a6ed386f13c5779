"""What the runner expects of a processor, and the small pure helpers around one input
record: its content hint, its subject (to tell patients apart), its research keys, and
``process_each`` — ``process_many`` for a processor that only has ``process``
(:class:`BaseProcessor` gives it and the other defaults)."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from pipelines.errors import PartialInput
from pipelines.outcome import Outcome
from service.runner.retry import is_retriable

Result = Sequence[Outcome] | BaseException  # one item's outcomes, or what processing raised
ProcessItem = tuple[bytes, str | None, datetime]  # (raw, content hint, now)


class Processor(Protocol):
    """The pure pipeline behind the runner (``service.wiring.ServiceProcessor`` around
    ``pipelines.process.Processor``): bytes in, outcomes out. Every method the runner calls
    is named here, and every one runs on the runner's worker thread (the processor's key
    store connection lives there). :class:`BaseProcessor` gives the defaults for a
    processor that has only ``process``."""

    # True: ``process_many`` decides a repeat of an ``unconfirmed`` research key as if its
    # outputs were confirmed, so the runner takes its results as they are; False: the runner
    # decides such a record again once the earlier outputs are durable
    decides_repeats: bool

    def process(self, raw: bytes, *, content_hint: str, now: datetime) -> Sequence[Outcome]:
        """One input's outcomes; input errors are raised."""
        ...

    def process_many(
        self, items: Sequence[ProcessItem], unconfirmed: Sequence[set[str]] = ()
    ) -> Sequence[Result]:
        """Several inputs in one call: each item's outcomes or its exception, returned, in
        order; it may stop early (a prefix), e.g. after an item deciding a research key in
        ``unconfirmed`` or decided by an earlier item (see :func:`process_each`)."""
        ...

    def preview(self, raw: bytes, *, content_hint: str, now: datetime) -> Sequence[Outcome]:
        """``process`` without side effects on the stream (for ``/v1/deidentify``)."""
        ...

    def commit(self, outcomes: Sequence[Outcome]) -> None:
        """The outcomes' outputs are acknowledged by the broker: make them durable."""
        ...

    def sent_marks(self, marks: Sequence[str]) -> set[str]:
        """Which of these dead letters (:func:`dead_letter_mark`) were sent before."""
        ...

    def mark_sent(self, marks: Sequence[str]) -> None:
        """Remember dead letters the broker acknowledged."""
        ...

    def diagnose(self, error: BaseException, raw: bytes) -> Mapping[str, str]:
        """Extra dead-letter headers for a failed input (coordinates, no content)."""
        ...

    def ping(self) -> None:
        """Raise if the processor's store does not answer (readiness while idle)."""
        ...

    def close(self) -> None: ...


class BaseProcessor(ABC):
    """A processor that has only ``process``: the rest of :class:`Processor` as the runner
    treats a processor without them — ``process_many`` is :func:`process_each`, ``preview``
    is ``process``, no confirmation, no dead-letter marks, no diagnosis, nothing to ping or
    close. Subclasses override what they have."""

    decides_repeats = False

    @abstractmethod
    def process(self, raw: bytes, *, content_hint: str, now: datetime) -> Sequence[Outcome]: ...

    def process_many(
        self, items: Sequence[ProcessItem], unconfirmed: Sequence[set[str]] = ()
    ) -> Sequence[Result]:
        return process_each(self, items, unconfirmed)

    def preview(self, raw: bytes, *, content_hint: str, now: datetime) -> Sequence[Outcome]:
        return self.process(raw, content_hint=content_hint, now=now)

    def commit(self, outcomes: Sequence[Outcome]) -> None:
        return None

    def sent_marks(self, marks: Sequence[str]) -> set[str]:
        return set()

    def mark_sent(self, marks: Sequence[str]) -> None:
        return None

    def diagnose(self, error: BaseException, raw: bytes) -> Mapping[str, str]:
        return {}

    def ping(self) -> None:
        return None

    def close(self) -> None:
        return None


ProcessorFactory = Callable[[], Processor]


def content_hint(topic: str, headers: Sequence[tuple[str, bytes]] | None) -> str:
    """hl7v2 | fhir | auto, from a content-type header or else the topic name."""
    for name, value in headers or ():
        if name.lower() in ("content-type", "content_type") and value:
            ctype = value.decode("ascii", "replace").lower()
            if "fhir" in ctype or "json" in ctype:
                return "fhir"
            if "hl7" in ctype or "er7" in ctype:
                return "hl7v2"
    low = topic.lower()
    if "fhir" in low:
        return "fhir"
    if "hl7" in low:
        return "hl7v2"
    return "auto"


def record_subject(rec: Any) -> str | None:
    """Who an input is about, to tell patients apart in memory only (inputs are keyed by
    patient): a digest of the record key, never logged."""
    key = getattr(rec, "key", None)
    if not key:
        return None
    return hashlib.blake2b(key, digest_size=8).hexdigest()


def dead_letter_mark(rec: Any) -> str:
    """The mark saying an input was dead-lettered (and acknowledged): its coordinates and a
    digest of its bytes, so a replay of the same input sends no second dead letter while
    another input at the same coordinates (a re-created topic) is not mistaken for it. The
    key store keys marks by a keyed hash and seals their values: nothing readable is kept."""
    digest = hashlib.blake2b(rec.value or b"", digest_size=16).hexdigest()
    return f"deadletter|{rec.topic}|{rec.partition}|{rec.offset}|{digest}"


def research_keys(outcomes: Iterable[Outcome]) -> set[str]:
    return {k for o in outcomes if (k := o.research_key)}


def partial_outcomes(exc: BaseException) -> Sequence[Outcome]:
    """The outcomes of the good documents of an input that failed in part (none else)."""
    return exc.outcomes if isinstance(exc, PartialInput) else ()


@dataclass(slots=True)
class Item:
    """One input record on its way to the processor."""

    rec: Any
    raw: bytes
    hint: str
    first_seen: datetime  # also the ``now`` the processor is given
    oversize: bool = False
    retried: bool = False  # processed again after a retriable failure or a store fault
    subject: str | None = None
    in_flight: Sequence[set[str]] = ()  # research keys in flight when it was routed

    def subject_of(self) -> str | None:
        return self.subject if self.rec is None else record_subject(self.rec)


def process_each(
    processor: Processor | BaseProcessor,
    items: Sequence[ProcessItem],
    unconfirmed: Sequence[set[str]] = (),
) -> list[Result]:
    """``process_many`` for a processor that has only ``process`` (runs on the worker
    thread): each item's outcomes, or the exception its processing raised (returned, not
    raised), in order — stopping after a retriable failure (the runner retries that item,
    then processes the rest) and after an item deciding a research key in ``unconfirmed``
    or decided by an earlier item (the runner confirms the earlier outputs and decides it
    again before the rest are decided)."""
    results: list[Result] = []
    seen: set[str] = set()
    for raw, hint, now in items:
        try:
            got = processor.process(raw, content_hint=hint or "auto", now=now)
        except Exception as exc:  # noqa: BLE001 - the caller routes it like process() raising
            results.append(exc)
            if is_retriable(exc):
                break
            keys = research_keys(partial_outcomes(exc))
        else:
            results.append(got)
            keys = research_keys(got)
        if keys:
            if not seen.isdisjoint(keys) or not all(keys.isdisjoint(u) for u in unconfirmed):
                break
            seen |= keys
    return results
