"""What the runner sends for one input: research records, dead letters, held records — built
from the processor's outcomes or the error it raised, with the metrics each one counts once
the broker has acknowledged it. No I/O here."""

from __future__ import annotations

import logging
import time
from collections import Counter as Tally
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, assert_never

import orjson

from pipelines.errors import DeidstreamError
from pipelines.outcome import Outcome, OutcomeKind
from service.metrics import Metrics, package_version
from service.runner.contract import dead_letter_mark, research_keys
from service.settings import Settings

log = logging.getLogger("deidstream.runner")

MAX_REASON_CHARS = 400
RESEARCH_CONTENT_TYPE = "application/fhir+json"
RESEARCH_CONTENT_TYPE_BYTES = RESEARCH_CONTENT_TYPE.encode()


def safe_reason(exc: BaseException) -> tuple[str, str]:
    """(reason_class, reason) with no message content: our errors carry coordinates only;
    anything else is named by its type alone (its text might quote the input)."""
    if isinstance(exc, DeidstreamError):
        return exc.reason_class, str(exc)[:MAX_REASON_CHARS]
    return "internal_error", f"unexpected {type(exc).__name__} while processing"


@dataclass
class OutRecord:
    """One record to send; ``on_ack`` records metrics once the broker has it."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]
    on_ack: Callable[[], None] = lambda: None
    on_reject: Callable[[BaseException], OutRecord | None] | None = None
    # a dead letter's mark (``dead_letter_mark``): sent once per input, not again on a replay
    once: str | None = None


class Refusal:
    """Whether the broker refused one of an input's outputs. Its own small object so the
    outputs' ``on_reject`` callbacks can set it without holding the :class:`Handled` that holds
    them: that reference cycle kept every record's objects alive until a garbage collection
    (~40 objects per document, most of the collector's work in the service)."""

    __slots__ = ("refused",)

    def __init__(self) -> None:
        self.refused = False


@dataclass
class Handled:
    """One input record after processing: what to send, and what to confirm after the acks."""

    record: Any
    outputs: list[OutRecord] = field(default_factory=list)
    outcomes: Sequence[Outcome] = ()
    kind: str = ""  # summary for status counts
    effects: list[Callable[[], None]] = field(default_factory=list)  # metrics, once accepted
    refusal: Refusal = field(default_factory=Refusal)

    @property
    def rejected(self) -> bool:
        """An output was refused by the broker: do not confirm."""
        return self.refusal.refused

    def research_keys(self) -> set[str]:
        return research_keys(self.outcomes)

    def apply(self) -> None:
        for effect in self.effects:
            effect()
        self.effects.clear()


class Outputs:
    """Builds the records to send for each input (and their on-ack metrics)."""

    def __init__(self, settings: Settings, metrics: Metrics, counts: Tally[str]) -> None:
        self.settings = settings
        self.metrics = metrics
        self.counts = counts
        # metric children by label, looked up once (labels() takes a lock and builds a key)
        self._stage_observe: dict[str, Callable[[float], None]] = {}
        self._spans_inc: dict[str, Callable[[float], None]] = {}
        self._published_inc = metrics.published.labels("document").inc
        self._tombstoned_inc = metrics.published.labels("tombstone").inc
        self._end_to_end = metrics.end_to_end_seconds.observe
        self._version = package_version().encode()
        self._source: dict[str, bytes] = {}  # content hint -> header value

    def _observe_stage(self, stage: str) -> Callable[[float], None]:
        found = self._stage_observe.get(stage)
        if found is None:
            found = self._stage_observe[stage] = self.metrics.stage_seconds.labels(stage).observe
        return found

    def _count_spans(self, category: str) -> Callable[[float], None]:
        found = self._spans_inc.get(category)
        if found is None:
            found = self._spans_inc[category] = self.metrics.phi_spans.labels(category).inc
        return found

    def route(
        self, rec: Any, hint: str, outcomes: Sequence[Outcome], first_seen: datetime
    ) -> Handled:
        handled = Handled(rec, outcomes=outcomes)
        kinds = []
        for out in outcomes:
            kinds.append(out.kind.value)
            if out.stage_seconds:
                handled.effects.append(partial(self._observe_stages, out.stage_seconds))
            self._route_one(handled, rec, hint, out, first_seen)
        handled.kind = kinds[0] if len(kinds) == 1 else ",".join(sorted(set(kinds)))
        if handled.outputs:
            rejected = partial(self.output_rejected, handled.refusal, rec, first_seen)
            for output in handled.outputs:
                if output.on_reject is None:
                    output.on_reject = rejected
        return handled

    def _route_one(
        self, handled: Handled, rec: Any, hint: str, out: Outcome, first_seen: datetime
    ) -> None:
        """What one outcome adds to its input's handling; every kind is matched (mypy checks
        that a new :class:`OutcomeKind` is routed here)."""
        kind = out.kind
        match kind:
            case OutcomeKind.PUBLISH | OutcomeKind.TOMBSTONE:
                if out.reason_class:  # a same-time correction: said once, never silent
                    _log_decision(rec, out)
                handled.outputs.append(self.research_record(rec, hint, out))
            case OutcomeKind.DUPLICATE | OutcomeKind.SUPERSEDED | OutcomeKind.CONTEXT:
                if kind is OutcomeKind.SUPERSEDED:  # another text, dropped: never silently
                    _log_decision(rec, out)
                handled.effects.append(partial(self.count_drop, kind.value))
            case OutcomeKind.HELD:
                reason_class = out.reason_class or "leak_guard"
                reason = out.reason or "held back by the leak guard"
                patient = next((v for k, v in out.headers if k == "patient"), None)
                held = self.held(
                    rec, out.research_key, reason_class, reason, first_seen, patient=patient
                )
                handled.outputs.extend(held.outputs)
            case _:
                assert_never(kind)

    def _observe_stages(self, times: Mapping[str, float]) -> None:
        for stage, seconds in times.items():
            self._observe_stage(str(stage))(float(seconds))

    def output_rejected(
        self, refusal: Refusal, rec: Any, first_seen: datetime, exc: BaseException
    ) -> OutRecord | None:
        """A research/held record the broker refuses: dead-letter the input instead, and do
        not confirm the version (a later replay from the dead-letter topic decides again)."""
        refusal.refused = True
        reason = f"output refused by the broker ({type(exc).__name__})"
        return self.dead_letter(rec, "output_rejected", reason, first_seen).outputs[0]

    def count_drop(self, kind: str) -> None:
        if kind == "context":
            self.metrics.context.inc()
        else:
            self.metrics.dropped.labels(kind).inc()
        self.counts[kind] += 1

    def research_record(self, rec: Any, hint: str, out: Outcome) -> OutRecord:
        key = out.research_key
        # the outcome's headers, then ours where it has none
        headers: dict[str, bytes] = {name: item.encode() for name, item in out.headers}
        if "source" not in headers:
            source = self._source.get(hint)
            if source is None:
                source = self._source[hint] = hint.encode()
            headers["source"] = source
        if "content-type" not in headers:
            headers["content-type"] = RESEARCH_CONTENT_TYPE_BYTES
        if "deidstream-version" not in headers:
            headers["deidstream-version"] = self._version
        value = None if out.kind is OutcomeKind.TOMBSTONE else out.value
        spans = dict(out.span_counts)
        timestamp = getattr(rec, "timestamp", None)

        def on_ack() -> None:
            if value is None:
                self._tombstoned_inc()
                self.counts["tombstoned"] += 1
            else:
                self._published_inc()
                self.counts["published"] += 1
            if spans:
                for category, n in spans.items():
                    self._count_spans(str(category))(int(n))
            if timestamp:
                self._end_to_end(max(0.0, time.time() - timestamp / 1000))

        return OutRecord(
            self.settings.research_topic,
            None if key is None else key.encode(),
            value,
            list(headers.items()),
            on_ack,
        )

    def coordinates(
        self, rec: Any, reason_class: str, reason: str, first_seen: datetime
    ) -> list[tuple[str, bytes]]:
        return [
            ("reason-class", reason_class.encode()),
            ("reason", reason[:MAX_REASON_CHARS].encode()),
            ("source-topic", rec.topic.encode()),
            ("source-partition", str(rec.partition).encode()),
            ("source-offset", str(rec.offset).encode()),
            ("source-timestamp", str(rec.timestamp or "").encode()),
            ("first-seen", first_seen.isoformat().encode()),
        ]

    def dead_letter(
        self,
        rec: Any,
        reason_class: str,
        reason: str,
        first_seen: datetime,
        extra: Sequence[tuple[str, bytes]] = (),
    ) -> Handled:
        original = [(k, v) for k, v in (rec.headers or ()) if not k.startswith("reason")]
        headers = self.coordinates(rec, reason_class, reason, first_seen) + list(extra)
        headers += original

        def on_ack() -> None:
            self.metrics.deadlettered.labels(reason_class).inc()
            self.counts["deadlettered"] += 1

        def without_value(exc: BaseException) -> OutRecord:
            # the original is too big for the dead-letter topic: keep the coordinates
            note = [("value-dropped", type(exc).__name__.encode())]
            return OutRecord(
                self.settings.deadletter_topic,
                rec.key,
                b"",
                headers + note,
                on_ack,
                on_reject=lambda _exc: None,
                once=once,
            )

        once = dead_letter_mark(rec)
        out = OutRecord(
            self.settings.deadletter_topic,
            rec.key,
            rec.value or b"",
            headers,
            on_ack,
            on_reject=without_value,
            once=once,
        )
        return Handled(rec, [out], kind="deadletter")

    def held(
        self,
        rec: Any,
        research_key: str | None,
        reason_class: str,
        reason: str,
        first_seen: datetime,
        *,
        patient: str | None = None,
    ) -> Handled:
        """The held record; once the broker has it, one log line (an incident to review:
        docs/operations.md) with the reason class, the input's coordinates and the patient's
        pseudonym (``patient``: ``Patient/…`` as subject.reference has it) — no text."""
        headers = self.coordinates(rec, reason_class, reason, first_seen)
        released = next((v for k, v in rec.headers or () if k == "released-from"), None)
        if released:  # `deidstream held release` sent it again: link the two held records
            headers.append(("released-from", bytes(released)))
        if self.settings.held_topic_secure:
            value = rec.value or b""  # the original input only; never the half-cleaned text
        else:
            value = orjson.dumps(
                {
                    "source_topic": rec.topic,
                    "source_partition": rec.partition,
                    "source_offset": rec.offset,
                    "reason_class": reason_class,
                    "reason": reason[:MAX_REASON_CHARS],
                    "research_key": research_key,
                    "first_seen": first_seen.isoformat(),
                }
            )

        def on_ack() -> None:
            self.metrics.held.labels(reason_class).inc()
            self.counts["held"] += 1
            log.warning(
                "document held [%s] input %s:%s:%s patient %s",
                reason_class,
                rec.topic,
                rec.partition,
                rec.offset,
                patient or "unknown",
            )

        key = research_key.encode() if research_key else None
        return Handled(
            rec, [OutRecord(self.settings.held_topic, key, value, headers, on_ack)], kind="held"
        )


def _log_decision(rec: Any, out: Outcome) -> None:
    """One INFO line for a version decision an operator may ask about (a correction taken,
    another text dropped as superseded): the input's coordinates and the PHI-free reason."""
    log.info(
        "%s at %s/%s@%s: %s",
        out.reason_class or out.kind.value,
        getattr(rec, "topic", "-"),
        getattr(rec, "partition", "-"),
        getattr(rec, "offset", "-"),
        out.reason,
    )
