"""The Kafka runner: consume input topics, run the processor, publish, commit after ack.

Delivery contract (at-least-once in, effectively-once out):

1. fetch a batch: at most ``max_in_flight`` records minus those of earlier batches still
   finishing (everything fetched and not committed counts against the limit);
2. process each record, in partition order, on a single worker thread (CPU-bound work stays
   off the event loop so heartbeats keep flowing; one thread keeps the processor's state and
   its database connection on one thread);
3. hand the batch to its *finisher* (a task) and go back to 1: the finisher waits for the
   previous batch's finisher, then sends every output (research document, tombstone,
   dead-letter, held record) and waits for every acknowledgement (``acks=all``; failed sends
   are retried with backoff, in key order);
4. tells the processor its outputs are durable (``Processor.commit``: the version marks it
   wrote unacknowledged become acknowledged), once per batch;
5. and commits the batch's offsets.

So the next batch is processed while the previous one is being acknowledged and committed,
and finishers run strictly in batch order: offsets are committed only after every output of
that batch and of all earlier ones is acknowledged and confirmed, and outputs are sent in input
order per partition (a batch's sends start after the previous batch's acks).

A crash before (4) replays the uncommitted batch and the processor re-emits the same outcomes
(same key, same bytes); after (4) the replay yields duplicates and publishes nothing. If a
record repeats a research key already decided earlier in the same batch or in a batch still
finishing, the earlier batches are finished and the earlier outputs flushed (3–4) first and the
record is decided again, so repeats are dropped.
Records fetched before a rebalance are not processed (the new owner reads them from the
committed offset). A rebalance waits for everything in flight (the revoke callback takes the
batch lock, then waits for the finishers). A record the broker refuses (too large) is replaced
by a dead letter.
Transient errors (broker, key store) are retried with exponential backoff and jitter — nothing
is committed meanwhile and readiness goes false. Errors of the input go to the dead-letter topic
and the stream goes on: no input can block its partition.

Key-store faults of the store as a whole are not the input's fault and are never dead-lettered:
a missing or unknown master key (``MissingKeyError``), a store that cannot be opened, or
``KEY_FAULT_STREAK`` records of different patients in a row failing authentication. They are
retried with backoff like an outage (the processor is re-opened first, so a corrected key file
is picked up), readiness goes false with the reason class (``/readyz``,
``deidstream_keystore_fault``), and nothing is committed. One record failing authentication
alone is dead-lettered (``keystore_integrity``), never given a new identity.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol, cast

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import (
    CommitFailedError,
    CorruptRecordException,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    RecordTooLargeError,
    TopicAlreadyExistsError,
)
from tenacity import AsyncRetrying, retry_if_exception, wait_exponential, wait_random

from pipelines.errors import (
    DeidstreamError,
    IntegrityError,
    KeystoreError,
    LeakHeldBack,
    MissingKeyError,
    PartialInput,
)
from service.metrics import Metrics, package_version
from service.settings import Settings

log = logging.getLogger("deidstream.runner")

MAX_REASON_CHARS = 400
# this many records of different patients in a row failing authentication: the store (its
# key) is wrong, not the records — stop and retry instead of dead-lettering the stream
KEY_FAULT_STREAK = 3
RESEARCH_CONTENT_TYPE = "application/fhir+json"


class Outcome(Protocol):
    """What the runner reads from one processing result (pipelines.process.Outcome)."""

    kind: str  # publish | tombstone | duplicate | superseded | held | context
    research_key: str | None
    value: bytes | None


class Processor(Protocol):
    """The pure pipeline (pipelines.process.Processor): bytes in, outcomes out, no I/O."""

    def process(self, raw: bytes, *, content_hint: str, now: datetime) -> Sequence[Any]: ...


ProcessorFactory = Callable[[], Processor]


class Stopping(Exception):  # noqa: N818 - control flow, not an error
    """Raised inside a batch when a stop was requested while waiting on a retry."""


class StoreFault(Exception):  # noqa: N818 - a retry signal, carries the reason class only
    """The key store as a whole is unusable (wrong key, cannot open): retry, never
    dead-letter. Carries the reason class, no content."""

    def __init__(self, reason_class: str) -> None:
        super().__init__(reason_class)
        self.reason_class = reason_class


# the broker refuses this one record (size, corruption): retrying cannot help, so the record
# is replaced (research/held output → dead-letter of the input; dead letter → without value)
RECORD_REJECTED = (MessageSizeTooLargeError, RecordTooLargeError, CorruptRecordException)


def _is_retriable(exc: BaseException) -> bool:
    if isinstance(exc, StoreFault):
        return True
    if isinstance(exc, DeidstreamError):
        return bool(exc.retriable)
    if isinstance(exc, KafkaTimeoutError):
        return True  # aiokafka marks it final, but it is what an unreachable broker gives
    if isinstance(exc, KafkaError):
        return bool(getattr(exc, "retriable", True))
    return isinstance(exc, (ConnectionError, TimeoutError))


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


def _headers_list(raw: Any) -> list[tuple[str, bytes]]:
    """Outcome headers may be a mapping or pairs, values str or bytes."""
    items: Iterable[tuple[str, Any]] = raw.items() if isinstance(raw, Mapping) else (raw or ())
    out = []
    for name, value in items:
        if value is None:
            continue
        out.append((str(name), value if isinstance(value, bytes) else str(value).encode()))
    return out


def _subject(rec: Any) -> str | None:
    """Who an input is about, to tell patients apart in memory only (inputs are keyed by
    patient): a digest of the record key, never logged."""
    key = getattr(rec, "key", None)
    if not key:
        return None
    return hashlib.blake2b(key, digest_size=8).hexdigest()


def _safe_reason(exc: BaseException) -> tuple[str, str]:
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


@dataclass
class Handled:
    """One input record after processing: what to send, and what to confirm after the acks."""

    record: Any
    outputs: list[OutRecord] = field(default_factory=list)
    outcomes: Sequence[Any] = ()
    kind: str = ""  # summary for status counts
    rejected: bool = False  # an output was refused by the broker: do not confirm
    effects: list[Callable[[], None]] = field(default_factory=list)  # metrics, once accepted

    def research_keys(self) -> set[str]:
        return research_keys(self.outcomes)

    def apply(self) -> None:
        for effect in self.effects:
            effect()
        self.effects.clear()


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

    def subject_of(self) -> str | None:
        return self.subject if self.rec is None else _subject(self.rec)


def research_keys(outcomes: Iterable[Any]) -> set[str]:
    return {str(k) for o in outcomes if (k := getattr(o, "research_key", None))}


def process_each(processor: Processor, items: Sequence[tuple[bytes, str | None, datetime]],
                 unconfirmed: Iterable[str] = ()) -> list[Sequence[Any] | BaseException]:
    """``process_many`` for a processor that has only ``process`` (runs on the worker
    thread): each item's outcomes, or the exception its processing raised (returned, not
    raised), in order — stopping after a retriable failure (the runner retries that item,
    then processes the rest) and after an item deciding a research key in ``unconfirmed``
    or decided by an earlier item (the runner confirms the earlier outputs and decides it
    again before the rest are decided)."""
    results: list[Sequence[Any] | BaseException] = []
    seen = set(unconfirmed)
    for raw, hint, now in items:
        try:
            got = processor.process(raw, content_hint=hint or "auto", now=now)
        except Exception as exc:  # noqa: BLE001 - the caller routes it like process() raising
            results.append(exc)
            if _is_retriable(exc):
                break
            keys = research_keys(getattr(exc, "outcomes", None) or ())
        else:
            results.append(got)
            keys = research_keys(got)
        if keys:
            if not seen.isdisjoint(keys):
                break
            seen |= keys
    return results


@dataclass
class PartitionState:
    committed: int | None = None  # last offset this instance committed (next to read)
    position: int | None = None  # consumer position (committed + what is fetched)
    highwater: int | None = None

    @property
    def lag(self) -> int | None:
        """Messages not yet committed; None until both ends are known."""
        done = self.committed if self.committed is not None else self.position
        if self.highwater is None or done is None:
            return None
        return max(0, self.highwater - done)


class _RebalanceListener(ConsumerRebalanceListener):
    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    async def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        # Taking the batch lock waits for the batch in flight: it publishes, confirms and
        # commits before the partitions go to another member.
        async with self.runner.batch_lock:
            try:
                await self.runner.drain()  # earlier batches: acknowledged, confirmed, committed
            except Exception as exc:  # noqa: BLE001 - the runner reports it on its next await
                log.warning("draining before a revoke failed: %s", type(exc).__name__)
            self.runner.generation += 1  # batches fetched before this point are stale
            for tp in revoked:
                self.runner.forget_partition(tp)
        log.info("partitions revoked: %d", len(list(revoked)))

    async def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        self.runner.generation += 1
        for tp in assigned:
            self.runner.partitions.setdefault(tp, PartitionState())
        log.info("partitions assigned: %s", sorted(f"{t.topic}/{t.partition}" for t in assigned))


class Runner:
    """Consumer group member + producer + processor, with readiness and status."""

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        processor_factory: ProcessorFactory,
        *,
        on_fatal: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics
        self.processor_factory = processor_factory
        self.on_fatal = on_fatal
        self.batch_lock = asyncio.Lock()
        self.partitions: dict[TopicPartition, PartitionState] = {}
        self.generation = 0  # bumped on every revoke/assign
        self.counts: Tally[str] = Tally()
        self.broker_ok = False
        self.keystore_ok = False
        self.keystore_fault: str | None = None  # reason class while the store is unusable
        self._integrity_streak: list[str] = []  # patients whose records failed in a row
        self.started = False
        self._stop = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="deidstream-proc")
        self._processor: Processor | None = None
        self._producer: AIOKafkaProducer | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._task: asyncio.Task[None] | None = None
        self._last_probe = 0.0
        # batches processed and not yet committed: (finisher task, research keys, records)
        self._finishing: list[tuple[asyncio.Task[None], set[str], int]] = []
        self._processing = 0  # records of the batch being processed now

    # ---------------------------------------------------------------- lifecycle

    @property
    def ready(self) -> bool:
        assigned = bool(self._consumer and self._consumer.assignment())
        return self.started and self.broker_ok and self.keystore_ok and assigned

    def start_background(self) -> asyncio.Task[None]:
        """Start consuming in a task of the running loop (used by the app lifespan)."""
        self._task = asyncio.get_running_loop().create_task(self._main(), name="deidstream-runner")
        return self._task

    async def _main(self) -> None:
        try:
            await self.start()
            await self.run()
        except Stopping:
            pass
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # surfaced to the process owner, not swallowed
            log.exception("runner stopped on an unexpected error")
            if self.on_fatal:
                self.on_fatal(exc)
            raise
        finally:
            await self._close()

    async def start(self) -> None:
        """Connect (retrying while the broker is unreachable), create topics, subscribe."""
        await self.prepare_processor()
        await self._retry("connect", self._connect_producer)
        if self.settings.create_topics:
            await self._retry("connect", self._ensure_topics)
        s = self.settings
        self._consumer = AIOKafkaConsumer(
            group_id=s.group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=s.session_timeout_ms,
            heartbeat_interval_ms=s.heartbeat_interval_ms,
            fetch_max_wait_ms=s.fetch_max_wait_ms,
            max_partition_fetch_bytes=s.max_message_bytes + 65536,
            fetch_max_bytes=max(16 * 1024 * 1024, 2 * s.max_message_bytes),
            **s.kafka_common(),
        )
        self._consumer.subscribe(list(s.input_topics), listener=_RebalanceListener(self))
        await self._retry("connect", self._consumer.start)
        self.broker_ok = True
        self.started = True
        self._update_ready()
        log.info("runner started: %d input topics, group %s", len(s.input_topics), s.group_id)

    async def prepare_processor(self) -> None:
        """Build the processor on the worker thread (it owns the key store connection)."""
        if self._processor is not None:
            return
        self._processor = await self._retry("keystore", self._open_processor)
        self.keystore_ok = True
        self._clear_store_fault()

    async def _open_processor(self) -> Processor:
        """Run the factory on the worker thread; a key store that cannot be opened for a
        reason other than an outage (wrong or missing key, unusable file) is a StoreFault."""
        loop = asyncio.get_running_loop()
        try:
            made: Processor = await loop.run_in_executor(self._executor, self.processor_factory)
        except KeystoreError as exc:
            if exc.retriable:
                raise
            self._set_store_fault(exc.reason_class)
            raise StoreFault(exc.reason_class) from exc
        return made

    async def _reopen_processor(self) -> None:
        """After a store fault: open the store again (a corrected key file is read anew);
        the old processor is closed (its store flushed) once the new one works."""
        old = self._processor
        new = await self._open_processor()
        if new is old:
            return
        self._processor = new
        closer = getattr(old, "close", None)
        if callable(closer):
            try:
                await asyncio.get_running_loop().run_in_executor(self._executor, closer)
            except Exception as exc:  # noqa: BLE001 - the old store is being replaced anyway
                log.warning("closing the faulty processor failed: %s", type(exc).__name__)

    def _set_store_fault(self, reason_class: str) -> None:
        if self.keystore_fault != reason_class:
            log.error("key store unusable (%s): not ready, retrying; nothing is committed or "
                      "dead-lettered until it is fixed", reason_class)
            if self.keystore_fault is not None:
                self.metrics.keystore_fault.labels(self.keystore_fault).set(0)
        self.keystore_fault = reason_class
        self.keystore_ok = False
        self.metrics.keystore_fault.labels(reason_class).set(1)
        self._update_ready()

    def _clear_store_fault(self) -> None:
        if self.keystore_fault is not None:
            log.warning("key store usable again (was %s)", self.keystore_fault)
            self.metrics.keystore_fault.labels(self.keystore_fault).set(0)
            self.keystore_fault = None
        if not self.keystore_ok:
            self.keystore_ok = True
        self._update_ready()

    def _store_wide(self, exc: DeidstreamError, subject: str | None) -> bool:
        """Is this refusal about the whole store rather than this one record?"""
        if isinstance(exc, MissingKeyError):
            return True  # no key, or a key id the keyring does not have: configuration
        if isinstance(exc, IntegrityError):
            tag = str(exc.coordinates.get("record") or subject or "")
            if tag not in self._integrity_streak:
                self._integrity_streak.append(tag)
            return len(self._integrity_streak) >= KEY_FAULT_STREAK
        return False

    async def _connect_producer(self) -> None:
        s = self.settings
        if self._producer is not None:
            with contextlib.suppress(Exception):
                await self._producer.stop()
        self._producer = AIOKafkaProducer(
            acks="all",
            enable_idempotence=False,  # Tansu refuses idempotent producers and transactions
            linger_ms=2,
            max_request_size=max(1024 * 1024, 2 * s.max_message_bytes),
            **s.kafka_common(),
        )
        try:
            await self._producer.start()
        except BaseException:
            with contextlib.suppress(Exception):
                await self._producer.stop()
            self._producer = None
            raise

    async def _ensure_topics(self) -> None:
        s = self.settings
        admin = AIOKafkaAdminClient(**s.kafka_common())
        await admin.start()
        try:
            existing = set(await admin.list_topics())
            wanted = [
                NewTopic(
                    name,
                    s.topic_partitions,
                    s.replication_factor,
                    topic_configs={"cleanup.policy": "compact"} if name == s.research_topic else {},
                )
                for name in (*s.input_topics, *s.output_topics())
                if name not in existing
            ]
            if wanted:
                with contextlib.suppress(TopicAlreadyExistsError):
                    await admin.create_topics(wanted)
                log.info("created %d topics", len(wanted))
        finally:
            await admin.close()

    def request_stop(self) -> None:
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    async def stop(self, grace: float = 30.0) -> None:
        """Drain: finish the batch in flight, commit, leave the group, close clients."""
        self.request_stop()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), grace)
            except TimeoutError:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            except BaseException:  # noqa: BLE001, S110 - already reported by _main
                pass
        elif task is None:
            await self._close()
        else:
            with contextlib.suppress(BaseException):
                task.exception()  # already reported by _main; mark it retrieved

    async def _close(self) -> None:
        self.started = False
        self._update_ready()
        for task, _keys, _n in self._finishing:
            if not task.done():
                task.cancel()
            with contextlib.suppress(BaseException):
                await task
        self._finishing.clear()
        consumer, self._consumer = self._consumer, None
        producer, self._producer = self._producer, None
        if consumer is not None:
            with contextlib.suppress(Exception):
                await consumer.stop()
        if producer is not None:
            with contextlib.suppress(Exception):
                await producer.stop()
        processor, self._processor = self._processor, None
        closer = getattr(processor, "close", None) or getattr(
            getattr(processor, "store", None), "close", None)
        if callable(closer):
            try:  # on the worker thread, which owns the store's connection
                await asyncio.get_running_loop().run_in_executor(self._executor, closer)
            except Exception as exc:  # noqa: BLE001 - closing must not hide the real exit
                log.warning("closing the processor failed: %s", type(exc).__name__)
        self._executor.shutdown(wait=True, cancel_futures=True)

    # ---------------------------------------------------------------- the loop

    async def run(self) -> None:
        consumer = self._need(self._consumer)
        while not self._stop.is_set():
            self._reap()
            room = self.settings.max_in_flight - self.in_flight
            if room <= 0:
                await self._wait_oldest()  # bounded memory: the oldest batch first
                continue
            generation = self.generation
            try:
                batch = await consumer.getmany(
                    timeout_ms=50 if self._finishing else 300, max_records=room
                )
            except KafkaError as exc:
                self.broker_ok = False
                self._update_ready()
                log.warning("fetch failed: %s", type(exc).__name__)
                self.metrics.retries.labels("fetch").inc()
                await self._sleep(self.settings.retry_initial_seconds)
                continue
            if batch:
                await self.handle_batch(batch, generation)
            else:
                await self._probe_broker()
            try:
                await self._refresh_lag()
            except Exception as exc:  # noqa: BLE001 - bookkeeping must never stop the stream
                log.warning("lag refresh failed: %s", type(exc).__name__)
        await self.drain()  # a stop: finish and commit everything in flight

    @property
    def in_flight(self) -> int:
        """Records fetched and not committed (batches finishing + the one processed)."""
        return sum(n for _task, _keys, n in self._finishing) + self._processing

    def _set_in_flight_gauge(self) -> None:
        self.metrics.in_flight.set(self.in_flight)

    def _reap(self) -> None:
        """Forget finished finishers; a failed one raises here (Stopping, a fatal error)."""
        while self._finishing and self._finishing[0][0].done():
            task = self._finishing.pop(0)[0]
            self._set_in_flight_gauge()
            task.result()

    async def _wait_oldest(self) -> None:
        if self._finishing:
            await asyncio.shield(self._finishing[0][0])
        self._reap()

    async def drain(self) -> None:
        """Wait until every batch handed to a finisher is acknowledged and committed."""
        while self._finishing:
            await self._wait_oldest()

    def _finishing_keys(self) -> set[str]:
        return {k for task, keys, _n in self._finishing if not task.done() for k in keys}

    async def handle_batch(self, batch: Mapping[TopicPartition, Sequence[Any]],
                           generation: int | None = None) -> None:
        async with self.batch_lock:
            consumer = self._need(self._consumer)
            assigned = consumer.assignment()
            if generation is not None and generation != self.generation:
                # fetched before a rebalance: the records belong to whoever owns the partition
                # now, from its committed offset; if we still own it, read them again
                for tp, recs in batch.items():
                    if tp in assigned and recs:
                        consumer.seek(tp, recs[0].offset)
                return
            work = {tp: recs for tp, recs in batch.items() if tp in assigned and recs}
            count = sum(len(r) for r in work.values())
            if not count:
                return
            self._processing = count
            self._set_in_flight_gauge()
            try:
                records = [rec for recs in work.values() for rec in recs]
                pending, pending_keys = await self._decide_batch(records)
                offsets = {tp: recs[-1].offset + 1 for tp, recs in work.items()}
                previous = self._finishing[-1][0] if self._finishing else None
                finisher = asyncio.get_running_loop().create_task(
                    self._finish(previous, pending, offsets), name="deidstream-finish")
                self._finishing.append((finisher, pending_keys, count))
            finally:
                self._processing = 0
                self._set_in_flight_gauge()

    async def _finish(self, previous: asyncio.Task[None] | None, handled: list[Handled],
                      offsets: dict[TopicPartition, int]) -> None:
        """After the previous batch's finisher: publish, await the acks, confirm, commit."""
        if previous is not None:
            await asyncio.shield(previous)  # its failure is this batch's failure too
        await self._flush(handled)
        await self._commit(offsets)

    async def _flush(self, handled: list[Handled]) -> None:
        """Publish every output, wait for the acks, then confirm to the processor."""
        await self._publish([o for h in handled for o in h.outputs])
        await self._confirm(handled)

    # ---------------------------------------------------------------- records of a batch

    async def _decide_batch(self, records: Sequence[Any]) -> tuple[list[Handled], set[str]]:
        """Process a batch's records in input order with one worker-thread hop for a run of
        them (``process_many`` when the processor has it), then route each result on the
        event loop. The run ends early, and the next hop starts after it, when

        * a record decided a research key that is not confirmed yet (earlier in this batch,
          or in a batch still finishing): the earlier outputs are made durable first, in
          order, and the record is decided again, so a repeat is dropped, not published
          twice (``process`` alone stops the run right after such a record, so the later
          records are decided after it, exactly as one by one; ``process_many`` has decided
          them already: they are decided again, with ``process`` one by one for the rest of
          the batch, so a batch of repeats costs no more than one run per record — see
          docs/operations.md);
        * a record needed a retry (broker or key store outage, a fault of the whole store):
          it is retried alone with backoff, and the records after it are processed again
          (their first results were taken during the outage)."""
        for rec in records:
            self.metrics.consumed.labels(rec.topic, content_hint(rec.topic, rec.headers)).inc()
        self.counts["consumed"] += len(records)
        pending: list[Handled] = []
        pending_keys: set[str] = set()
        finishing = self._finishing_keys()
        start = 0
        many = True  # process_many if the processor has it, until a key repeats
        while start < len(records):
            items = [self._item(rec) for rec in records[start:]]
            results = await self._process_batch([i for i in items if not i.oversize],
                                                pending_keys | finishing, many=many)
            done = 0
            for item in items:
                if item.oversize:
                    h = self._oversize(item)
                elif done < len(results):
                    h = await self._decide(item, results[done])
                    done += 1
                else:
                    break  # the processor stopped after a repeated key: a new run from here
                start += 1
                keys = h.research_keys()
                again = False
                if keys and not keys.isdisjoint(finishing):
                    finishing = self._finishing_keys()  # some may have finished meanwhile
                if keys and not (keys.isdisjoint(pending_keys) and keys.isdisjoint(finishing)):
                    # decided against a version that is not confirmed yet
                    await self.drain()
                    finishing = set()
                    if not keys.isdisjoint(pending_keys):
                        await self._flush(pending)
                        pending, pending_keys = [], set()
                    h = await self._handle_record(item.rec)
                    keys = h.research_keys()
                    again, many = True, False
                h.apply()
                pending.append(h)
                pending_keys |= keys
                if again or item.retried:
                    break  # later records were decided before this one settled: again
        return pending, pending_keys

    def _item(self, rec: Any) -> Item:
        raw: bytes = rec.value if rec.value is not None else b""
        return Item(rec, raw, content_hint(rec.topic, rec.headers), datetime.now(UTC),
                    len(raw) > self.settings.max_message_bytes)

    def _oversize(self, item: Item) -> Handled:
        rec, size = item.rec, len(item.raw)
        return self._dead_letter(rec, "oversize", f"message of {size} bytes exceeds the limit",
                                 item.first_seen)

    async def _process_batch(self, items: Sequence[Item], unconfirmed: set[str], *,
                             many: bool = True) -> Sequence[Sequence[Any] | BaseException]:
        """One hop to the worker thread for a run of items: each item's outcomes, or the
        exception its processing raised (returned, not raised). ``process_many`` answers for
        every item; without it ``process`` is called for each in turn, stopping after a
        retriable failure or after an item deciding a research key that is ``unconfirmed``
        or was decided earlier in the run."""
        if not items:
            return []
        if self.keystore_fault is not None:  # the processor is unusable: each item retries
            return [StoreFault(self.keystore_fault)] * len(items)
        processor = self._need(self._processor)
        args = [(i.raw, i.hint, i.first_seen) for i in items]
        batch_call = getattr(processor, "process_many", None) if many else None
        call = (partial(batch_call, args) if callable(batch_call)
                else partial(process_each, processor, args, unconfirmed))
        try:
            results = await asyncio.get_running_loop().run_in_executor(self._executor, call)
        except Exception as exc:  # noqa: BLE001 - the call itself failed: as if every item did
            return [exc] * len(items)
        if not results or len(results) > len(items):
            error = RuntimeError("process_many must answer for every item")
            return [error] * len(items)
        return results

    async def _handle_record(self, rec: Any) -> Handled:
        """One record alone (its own worker-thread hop)."""
        item = self._item(rec)
        if item.oversize:
            return self._oversize(item)
        return await self._decide(item, None)

    async def _decide(self, item: Item, first: Sequence[Any] | BaseException | None) -> Handled:
        """Route one record's result (``first``, or processed now when None): outcomes to
        outputs, input errors to the dead-letter topic, retriable errors retried."""
        rec, raw, hint, first_seen = item.rec, item.raw, item.hint, item.first_seen
        try:
            outcomes = await self._process_item(item, first)
        except Stopping:
            raise
        except LeakHeldBack as exc:
            return self._held(rec, None, exc.reason_class, str(exc), first_seen)
        except PartialInput as exc:
            # the good documents go out; the whole input goes to the dead-letter topic too,
            # with the reason naming the failed entries (coordinates only)
            good = self._route(rec, hint, getattr(exc, "outcomes", ()) or (), first_seen)
            dead = self._dead_letter(rec, exc.reason_class, str(exc), first_seen,
                                     await self._diagnose(exc, raw))
            good.outputs.extend(dead.outputs)
            good.effects.extend(dead.effects)
            good.kind = (good.kind + ",deadletter").lstrip(",")
            return good
        except Exception as exc:  # noqa: BLE001 - the input (or the code) is at fault: never block
            reason_class, reason = _safe_reason(exc)
            if reason_class == "internal_error":
                log.error("processing failed at %s/%d@%d: %s", rec.topic, rec.partition,
                          rec.offset, type(exc).__name__)
                extra: list[tuple[str, bytes]] = []
            else:
                extra = await self._diagnose(exc, raw)
            return self._dead_letter(rec, reason_class, reason, first_seen, extra)
        return self._route(rec, hint, outcomes, first_seen)

    async def _diagnose(self, exc: BaseException, raw: bytes) -> list[tuple[str, bytes]]:
        """Extra dead-letter headers from the processor's optional ``diagnose(error, raw)``
        (e.g. hl7apy's precise findings on a malformed HL7 message; coordinates, no PHI).
        Slow and optional: run on the worker thread, and never fail the dead-lettering."""
        diagnose = getattr(self._processor, "diagnose", None)
        if not callable(diagnose):
            return []
        loop = asyncio.get_running_loop()
        try:
            found = await loop.run_in_executor(self._executor, partial(diagnose, exc, raw))
        except Exception as err:  # noqa: BLE001 - diagnosis is best effort
            log.warning("dead-letter diagnosis failed: %s", type(err).__name__)
            return []
        return [
            (str(k).replace("_", "-"), str(v)[:MAX_REASON_CHARS * 2].encode())
            for k, v in (found or {}).items()
            if k not in ("reason_class", "reason") and v
        ]

    async def process(self, raw: bytes, hint: str, now: datetime, *,
                      subject: str | None = None) -> Sequence[Any]:
        """Run the processor on the worker thread, retrying transient failures and faults of
        the whole key store (``subject`` tells patients apart for the integrity streak)."""
        return await self._process_item(Item(None, raw, hint, now, subject=subject), None)

    async def _process_item(self, item: Item, first: Sequence[Any] | BaseException | None
                            ) -> Sequence[Any]:
        """The item's outcomes: ``first`` (a result already computed in a batch) unless it
        calls for a retry, else processed now; retriable errors and store faults are retried
        with backoff (``item.retried`` is set then). Input errors are raised."""
        loop = asyncio.get_running_loop()
        given = [first] if first is not None else []

        async def attempt() -> Sequence[Any]:
            if self.keystore_fault is not None:
                given.clear()  # computed by the faulty processor
                await self._reopen_processor()  # raises StoreFault while still unusable
            try:
                if given:
                    got = given.pop()
                    if isinstance(got, BaseException):
                        raise got
                    result: Sequence[Any] = got
                else:
                    if first is not None:
                        item.retried = True
                    call = partial(self._need(self._processor).process, item.raw,
                                   content_hint=item.hint, now=item.first_seen)
                    result = await loop.run_in_executor(self._executor, call)
            except DeidstreamError as exc:
                if exc.retriable:
                    self.keystore_ok = False
                    self._update_ready()
                elif self._store_wide(exc, item.subject_of()):
                    self._set_store_fault(exc.reason_class)
                    raise StoreFault(exc.reason_class) from exc
                raise
            if self._integrity_streak:
                self._integrity_streak.clear()
            if not self.keystore_ok or self.keystore_fault is not None:
                self._clear_store_fault()
            return result

        return cast(Sequence[Any], await self._retry("process", attempt))

    def _route(self, rec: Any, hint: str, outcomes: Sequence[Any], first_seen: datetime) -> Handled:
        handled = Handled(rec, outcomes=outcomes)
        kinds = []
        for out in outcomes:
            kind = str(getattr(out, "kind", ""))
            kinds.append(kind)
            for stage, seconds in (getattr(out, "stage_seconds", None) or {}).items():
                handled.effects.append(
                    partial(self.metrics.stage_seconds.labels(str(stage)).observe, float(seconds))
                )
            if kind in ("publish", "tombstone"):
                handled.outputs.append(self._research_record(rec, hint, out, kind))
            elif kind in ("duplicate", "superseded"):
                handled.effects.append(partial(self._count_drop, kind))
            elif kind == "held":
                reason_class = str(getattr(out, "reason_class", None) or "leak_guard")
                reason = str(getattr(out, "reason", None) or "held back by the leak guard")
                held = self._held(rec, getattr(out, "research_key", None), reason_class,
                                  reason, first_seen)
                handled.outputs.extend(held.outputs)
            elif kind == "context":
                handled.effects.append(partial(self._count_drop, kind))
            else:
                log.error("unknown outcome kind %r at %s/%d@%d", kind, rec.topic,
                          rec.partition, rec.offset)
        handled.kind = ",".join(sorted(set(kinds)))
        for output in handled.outputs:
            if output.on_reject is None:
                output.on_reject = partial(self._output_rejected, handled, rec, first_seen)
        return handled

    def _output_rejected(self, handled: Handled, rec: Any, first_seen: datetime,
                         exc: BaseException) -> OutRecord | None:
        """A research/held record the broker refuses: dead-letter the input instead, and do
        not confirm the version (a later replay from the dead-letter topic decides again)."""
        handled.rejected = True
        reason = f"output refused by the broker ({type(exc).__name__})"
        return self._dead_letter(rec, "output_rejected", reason, first_seen).outputs[0]

    def _count_drop(self, kind: str) -> None:
        if kind == "context":
            self.metrics.context.inc()
        else:
            self.metrics.dropped.labels(kind).inc()
        self.counts[kind] += 1

    def _research_record(self, rec: Any, hint: str, out: Any, kind: str) -> OutRecord:
        key = getattr(out, "research_key", None)
        headers = dict(_headers_list(getattr(out, "headers", None)))
        headers.setdefault("source", hint.encode())
        headers.setdefault("content-type", RESEARCH_CONTENT_TYPE.encode())
        headers.setdefault("deidstream-version", package_version().encode())
        value = None if kind == "tombstone" else getattr(out, "value", None)
        spans = dict(getattr(out, "span_counts", None) or {})
        timestamp = getattr(rec, "timestamp", None)

        def on_ack() -> None:
            self.metrics.published.labels("tombstone" if value is None else "document").inc()
            self.counts["published" if value is not None else "tombstoned"] += 1
            for category, n in spans.items():
                self.metrics.phi_spans.labels(str(category)).inc(int(n))
            if timestamp:
                self.metrics.end_to_end_seconds.observe(max(0.0, time.time() - timestamp / 1000))

        return OutRecord(
            self.settings.research_topic,
            key.encode() if isinstance(key, str) else key,
            value,
            list(headers.items()),
            on_ack,
        )

    def _coordinates(self, rec: Any, reason_class: str, reason: str, first_seen: datetime
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

    def _dead_letter(self, rec: Any, reason_class: str, reason: str, first_seen: datetime,
                     extra: Sequence[tuple[str, bytes]] = ()) -> Handled:
        original = [(k, v) for k, v in (rec.headers or ()) if not k.startswith("reason")]
        headers = self._coordinates(rec, reason_class, reason, first_seen) + list(extra)
        headers += original

        def on_ack() -> None:
            self.metrics.deadlettered.labels(reason_class).inc()
            self.counts["deadlettered"] += 1

        def without_value(exc: BaseException) -> OutRecord:
            # the original is too big for the dead-letter topic: keep the coordinates
            note = [("value-dropped", type(exc).__name__.encode())]
            return OutRecord(self.settings.deadletter_topic, rec.key, b"", headers + note,
                             on_ack, on_reject=lambda _exc: None)

        out = OutRecord(self.settings.deadletter_topic, rec.key, rec.value or b"", headers, on_ack,
                        on_reject=without_value)
        return Handled(rec, [out], kind="deadletter")

    def _held(self, rec: Any, research_key: str | None, reason_class: str, reason: str,
              first_seen: datetime) -> Handled:
        headers = self._coordinates(rec, reason_class, reason, first_seen)
        if self.settings.held_topic_secure:
            value = rec.value or b""  # the original input only; never the half-cleaned text
        else:
            value = orjson.dumps({
                "source_topic": rec.topic,
                "source_partition": rec.partition,
                "source_offset": rec.offset,
                "reason_class": reason_class,
                "reason": reason[:MAX_REASON_CHARS],
                "research_key": research_key,
                "first_seen": first_seen.isoformat(),
            })

        def on_ack() -> None:
            self.metrics.held.labels(reason_class).inc()
            self.counts["held"] += 1

        key = research_key.encode() if research_key else None
        return Handled(rec, [OutRecord(self.settings.held_topic, key, value, headers, on_ack)],
                       kind="held")

    # ---------------------------------------------------------------- publish / confirm / commit

    async def _publish(self, outputs: list[OutRecord]) -> None:
        """Send all, await every ack; resend failures (and later records of the same key, to
        keep per-key order) with backoff until acknowledged or a stop is requested."""
        remaining = outputs
        attempt = 0
        sent_any = bool(outputs)
        if outputs and not self.broker_ok:
            await self._after_outage()
        while remaining:
            if self._producer is None:
                await self._retry("connect", self._connect_producer)
            producer = self._need(self._producer)
            futures: list[asyncio.Future[Any]] = []
            for out in remaining:
                try:
                    fut = await producer.send(
                        out.topic, out.value, key=out.key, headers=out.headers
                    )
                except Exception as exc:  # noqa: BLE001 - becomes a failed send below
                    fut = asyncio.get_running_loop().create_future()
                    fut.set_exception(exc)
                futures.append(fut)
            results = await asyncio.gather(*futures, return_exceptions=True)
            failed_keys = {
                (o.topic, o.key) for o, r in zip(remaining, results, strict=True)
                if isinstance(r, BaseException) and not isinstance(r, RECORD_REJECTED)
            }
            retry: list[OutRecord] = []
            for out, res in zip(remaining, results, strict=True):
                if isinstance(res, RECORD_REJECTED):
                    log.error("broker refused a record for %s: %s", out.topic,
                              type(res).__name__)
                    replacement = out.on_reject(res) if out.on_reject else None
                    if replacement is not None:
                        retry.append(replacement)
                elif (out.topic, out.key) in failed_keys:
                    retry.append(out)
                elif not isinstance(res, BaseException):
                    out.on_ack()
            if not failed_keys:
                remaining = retry  # only replacements of refused records (or nothing) left
                continue
            errors = {type(r).__name__ for r in results if isinstance(r, BaseException)}
            log.warning("publish failed for %d records (%s); retrying", len(retry),
                        ",".join(sorted(errors)))
            self.broker_ok = False
            self._update_ready()
            self.metrics.retries.labels("publish").inc()
            await self._sleep(self._backoff(attempt))
            attempt += 1
            remaining = retry
        if sent_any and not self.broker_ok:
            self.broker_ok = True
            self._update_ready()

    async def _confirm(self, handled: list[Handled]) -> None:
        """Outputs are durable: the processor marks those versions acknowledged
        (``Processor.commit``; ``confirm`` is accepted too) before offsets are committed.
        One call per flush, in input order, so the key store flushes once per batch."""
        processor = self._need(self._processor)
        confirm = getattr(processor, "commit", None) or getattr(processor, "confirm", None)
        if confirm is None:
            return
        outcomes = [o for h in handled if not h.rejected for o in h.outcomes]
        if not outcomes:
            return
        loop = asyncio.get_running_loop()
        call = partial(confirm, outcomes)
        await self._retry("confirm", lambda: loop.run_in_executor(self._executor, call))

    async def _commit(self, offsets: dict[TopicPartition, int]) -> None:
        consumer = self._need(self._consumer)

        async def attempt() -> None:
            # aiokafka waits for a coordinator without limit; bound it so an unreachable
            # broker becomes a retry (and readiness false) instead of a silent hang
            await asyncio.wait_for(consumer.commit(offsets),
                                   self.settings.request_timeout_ms / 1000)

        try:
            await self._retry("commit", attempt)
        except (CommitFailedError, IllegalStateError) as exc:
            # the group rebalanced: the new owner replays from its last commit; dedup drops it
            log.warning("commit refused after rebalance: %s", type(exc).__name__)
            return
        self.metrics.commits.inc()
        for tp, offset in offsets.items():
            if tp in self.partitions:
                self.partitions[tp].committed = offset

    # ---------------------------------------------------------------- retries and health

    @staticmethod
    def _need(thing: Any) -> Any:
        if thing is None:
            raise RuntimeError("the runner is not started")
        return thing

    def _backoff(self, attempt: int) -> float:
        s = self.settings
        return float(min(s.retry_max_seconds, s.retry_initial_seconds * (2 ** min(attempt, 16))))

    async def _sleep(self, seconds: float) -> None:
        """Sleep unless a stop is requested; raise Stopping then."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)
        if self._stop.is_set():
            raise Stopping()

    async def _retry(self, operation: str, fn: Callable[[], Any]) -> Any:
        """Call ``fn`` (an awaitable factory) until it succeeds or a non-retriable error."""
        s = self.settings

        def before_sleep(state: Any) -> None:
            self.metrics.retries.labels(operation).inc()
            exc = state.outcome.exception() if state.outcome else None
            log.warning("%s failed (%s), retry %d", operation, type(exc).__name__,
                        state.attempt_number)
            if operation in ("connect", "commit", "fetch"):
                self.broker_ok = False
            self._update_ready()

        async for attempt in AsyncRetrying(
            retry=retry_if_exception(_is_retriable),
            wait=wait_exponential(multiplier=s.retry_initial_seconds, max=s.retry_max_seconds)
            + wait_random(0, s.retry_initial_seconds),
            before_sleep=before_sleep,
            sleep=self._sleep,
            reraise=True,
        ):
            with attempt:
                return await fn()
        raise AssertionError("unreachable")  # pragma: no cover

    async def _probe_broker(self) -> None:
        """While idle, check every few seconds that the broker and the key store still
        answer (the processor's optional ``ping``), so readiness is true when it says so."""
        now = time.monotonic()
        if now - self._last_probe < 3.0 or self._producer is None:
            return
        self._last_probe = now
        timeout = self.settings.request_timeout_ms / 1000
        try:
            await asyncio.wait_for(self._producer.client.fetch_all_metadata(), timeout)
            ok = True
        except Exception:  # noqa: BLE001 - any failure means not reachable
            ok = False
        if ok != self.broker_ok:
            log.warning("broker reachable: %s", ok)
        if ok and not self.broker_ok:
            await self._after_outage()
        self.broker_ok = ok
        ping = getattr(self._processor, "ping", None)
        if callable(ping):
            loop = asyncio.get_running_loop()
            try:
                await asyncio.wait_for(loop.run_in_executor(self._executor, ping), timeout)
                store_ok = True
            except Exception:  # noqa: BLE001 - any failure means not reachable
                store_ok = False
            if store_ok != self.keystore_ok:
                log.warning("key store reachable: %s", store_ok)
            self.keystore_ok = store_ok and self.keystore_fault is None
        self._update_ready()

    async def _after_outage(self) -> None:
        """The broker answers again: it may be a new one that lost its topics (a broker with
        memory storage, a re-created cluster). Create them again before publishing — Tansu
        acknowledges records for a topic it no longer has and drops them."""
        if not self.settings.create_topics:
            return
        try:
            await asyncio.wait_for(self._ensure_topics(), self.settings.request_timeout_ms / 1000)
        except Exception as exc:  # noqa: BLE001 - retried on the next outage/probe
            log.warning("re-creating topics after an outage failed: %s", type(exc).__name__)

    def _update_ready(self) -> None:
        self.metrics.ready.set(1 if self.ready else 0)

    def forget_partition(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)
        with contextlib.suppress(KeyError):
            self.metrics.lag.remove(tp.topic, str(tp.partition))

    async def _refresh_lag(self) -> None:
        consumer = self._consumer
        if consumer is None:
            return
        assigned = consumer.assignment()
        for tp in [t for t in self.partitions if t not in assigned]:
            self.forget_partition(tp)
        for tp in assigned:
            if tp not in consumer.assignment():
                continue  # a rebalance happened while we awaited a position below
            state = self.partitions.setdefault(tp, PartitionState())
            high = consumer.highwater(tp)
            if high is not None:
                state.highwater = high
            with contextlib.suppress(Exception):  # position is unknown during a rebalance
                state.position = await asyncio.wait_for(consumer.position(tp), 1.0)
            if state.lag is not None:
                self.metrics.lag.labels(tp.topic, str(tp.partition)).set(state.lag)

    # ---------------------------------------------------------------- HTTP helpers

    async def deidentify(self, raw: bytes, hint: str) -> Sequence[Any]:
        """Synchronous de-identification for /v1/deidentify: the processor's ``preview`` (real
        patient state, private dedup marks) when it has one; never confirmed either way."""
        processor = self._processor
        if processor is None:
            raise RuntimeError("the processor is not started")
        preview = getattr(processor, "preview", None)
        if preview is None:
            return await self.process(raw, hint, datetime.now(UTC))
        loop = asyncio.get_running_loop()
        call = partial(preview, raw, content_hint=hint, now=datetime.now(UTC))
        return await loop.run_in_executor(self._executor, call)

    def status(self) -> dict[str, Any]:
        """Assignments, lag and counts: coordinates and numbers only, no message content."""
        parts = []
        for tp in sorted(self.partitions, key=lambda t: (t.topic, t.partition)):
            st = self.partitions[tp]
            parts.append({
                "topic": tp.topic,
                "partition": tp.partition,
                "committed": st.committed,
                "position": st.position,
                "highwater": st.highwater,
                "lag": st.lag,
            })
        return {
            "ready": self.ready,
            "started": self.started,
            "broker_reachable": self.broker_ok,
            "keystore_reachable": self.keystore_ok,
            "keystore_fault": self.keystore_fault,
            "group_id": self.settings.group_id,
            "input_topics": list(self.settings.input_topics),
            "assignments": parts,
            # None while any assigned partition's lag is still unknown
            "total_lag": (
                sum(p["lag"] for p in parts)
                if parts and all(p["lag"] is not None for p in parts) else None
            ),
            "counts": dict(sorted(self.counts.items())),
        }
