"""Processing a fetched batch: one worker-thread hop for a run of records, each result
routed to outputs, retriable failures retried alone, repeated research keys decided again
after the earlier outputs are durable; then the batch goes to its finisher."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter as Tally
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from aiokafka import TopicPartition

from keystore import classify_database_error
from pipelines.errors import DeadlineExceeded, DeidstreamError, LeakHeldBack, PartialInput
from pipelines.outcome import Outcome
from service.runner.clients import Clients
from service.runner.contract import Item, ProcessItem, content_hint
from service.runner.delivery import Delivery
from service.runner.finishing import Finishing
from service.runner.health import Health
from service.runner.outputs import MAX_REASON_CHARS, Handled, Outputs, safe_reason
from service.runner.partitions import Assignment
from service.runner.retry import Retrier, Stopping, StoreFault, is_stream_fault
from service.runner.state import RunnerContext
from service.runner.worker import Worker

log = logging.getLogger("deidstream.runner")


@dataclass
class _Undecided:
    """What a batch being decided has decided so far (outputs not flushed yet) and the
    research keys of the batches still finishing when its current run was decided."""

    decides_repeats: bool  # the processor decides a repeat of an unconfirmed key itself
    finishing: list[set[str]]
    unconfirmed: set[str]  # the union of ``finishing``
    pending: list[Handled] = field(default_factory=list)
    pending_keys: set[str] = field(default_factory=set)  # keys decided in this batch

    def repeats(self, keys: set[str], run_keys: set[str]) -> bool:
        """Some of ``keys`` were decided and are not confirmed yet: earlier in this run or
        batch, or in a batch still finishing."""
        return bool(keys) and not (
            keys.isdisjoint(run_keys)
            and keys.isdisjoint(self.pending_keys)
            and keys.isdisjoint(self.unconfirmed)
        )


class Batches:
    """From a fetched batch to a finisher task: process, route, hand over. ``lock`` is held
    while a batch is processed (a revoke takes it too)."""

    def __init__(
        self,
        context: RunnerContext,
        outputs: Outputs,
        clients: Clients,
        worker: Worker,
        retrier: Retrier,
        health: Health,
        assignment: Assignment,
        finishing: Finishing,
        delivery: Delivery,
    ) -> None:
        self._settings = context.settings
        self._metrics = context.metrics
        self._counts = context.counts
        self._outputs = outputs
        self._clients = clients
        self._worker = worker
        self._retrier = retrier
        self._health = health
        self._assignment = assignment
        self._finishing = finishing
        self._delivery = delivery
        self.lock = asyncio.Lock()
        self._topic_hints: dict[str, str] = {}  # content hint of a record without headers

    async def handle_batch(
        self, batch: Mapping[TopicPartition, Sequence[Any]], generation: int | None = None
    ) -> None:
        async with self.lock:
            consumer = self._clients.need_consumer()
            assigned = consumer.assignment()
            if generation is not None and generation != self._assignment.generation:
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
            finishing = self._finishing
            finishing.set_processing(count)
            try:
                records = [rec for recs in work.values() for rec in recs]
                pending, pending_keys = await self._decide_batch(records)
                offsets = {tp: recs[-1].offset + 1 for tp, recs in work.items()}
                previous, previous_acked = finishing.last()
                loop = asyncio.get_running_loop()
                acked: asyncio.Future[None] = loop.create_future()
                finisher = loop.create_task(
                    self._delivery.finish(previous, previous_acked, pending, offsets, acked),
                    name="deidstream-finish",
                )
                finishing.add(finisher, pending_keys, count, acked)
            finally:
                finishing.set_processing(0)

    async def _decide_batch(self, records: Sequence[Any]) -> tuple[list[Handled], set[str]]:
        """Process a batch's records in input order with one worker-thread hop for a run of
        them (``process_many``), then route each result on the event loop.

        A processor that ``decides_repeats`` (the real one) is given the research keys whose
        outputs are in flight (this batch's so far, the batches still finishing) and decides
        a repeat of them as if they were confirmed: its results stand, so batch cuts and
        acknowledgement timing never change what is published. With any other processor,
        a record that decided a research key not confirmed yet — decided earlier in this run
        or batch, or in a batch still finishing when the run was decided — is decided again
        after the earlier outputs are made durable (earlier batches finished, this batch's
        outputs so far flushed), so a repeat is dropped, not published twice. ``process``
        alone stops the run right after
        such a record, and the next run starts after its new decision: exactly one by one.
        ``process_many`` has decided the later records already; their results stand unless
        they repeat a key too (then they are decided again in turn). The one difference from
        one by one: a record decided again after a newer version of its report later in the
        same run sees that version (it is dropped as superseded; the newest version is
        published either way — docs/operations.md).

        A record needing a retry (broker or key store outage, a fault of the whole store) is
        retried alone with backoff, and the records after it are processed again (their first
        results were taken during the outage)."""
        first_items = [self._item(rec) for rec in records]
        consumed = Tally((item.rec.topic, item.hint) for item in first_items)
        for (topic, hint), n in consumed.items():
            self._metrics.consumed.labels(topic, hint).inc(n)
        self._counts["consumed"] += len(records)
        finishing = self._finishing.unconfirmed_keys()
        state = _Undecided(
            decides_repeats=self._worker.processor.decides_repeats,
            finishing=finishing,
            unconfirmed=set().union(*finishing),  # the keys of the batches still finishing
        )
        start = 0
        while start < len(records):
            items = first_items if start == 0 else [self._item(rec) for rec in records[start:]]
            start += await self._decide_run(items, state)
        return state.pending, state.pending_keys

    async def _decide_run(self, items: list[Item], state: _Undecided) -> int:
        """Decide ``items`` from one ``process_many`` hop, in order, until the processor
        stopped (after a repeated key) or a record was retried; how many were decided."""
        results = await self._process_batch(
            [i for i in items if not i.oversize], [state.pending_keys, *state.finishing]
        )
        run_keys: set[str] = set()  # keys of this run's first decisions so far
        done = taken = 0
        for item in items:
            if item.oversize:
                h = self._oversize(item)
            elif done < len(results):
                item.in_flight = [state.pending_keys, *self._finishing.unconfirmed_keys()]
                h = await self._decide(item, results[done])
                done += 1
            else:
                break  # the processor stopped after a repeated key: a new run from here
            taken += 1
            h, keys = await self._unless_repeated(item, h, run_keys, state)
            h.apply()
            state.pending.append(h)
            state.pending_keys |= keys
            if item.retried:
                break  # the later records' results predate the retry: process them again
        return taken

    async def _unless_repeated(
        self, item: Item, h: Handled, run_keys: set[str], state: _Undecided
    ) -> tuple[Handled, set[str]]:
        """``h`` and its research keys, or — when it was decided against a version that is
        not confirmed yet — the record decided again once the earlier outputs are durable.
        The keys join ``run_keys``."""
        keys = h.research_keys()
        # (a batch finished since the run was decided still counts: it was decided
        # before that batch's confirmation)
        repeated = not state.decides_repeats and state.repeats(keys, run_keys)
        run_keys |= keys
        if not repeated:
            return h, keys
        await self._finishing.drain()
        state.finishing, state.unconfirmed = [], set()
        if not keys.isdisjoint(state.pending_keys):
            await self._delivery.flush(state.pending)
            state.pending, state.pending_keys = [], set()
        h = await self.handle_record(item.rec)
        return h, h.research_keys()

    def _item(self, rec: Any) -> Item:
        raw: bytes = rec.value if rec.value is not None else b""
        headers = rec.headers
        if headers:
            hint = content_hint(rec.topic, headers)
        else:  # by the topic name alone: once per topic
            hint = self._topic_hints.get(rec.topic) or self._topic_hints.setdefault(
                rec.topic, content_hint(rec.topic, None)
            )
        oversize = len(raw) > self._settings.max_message_bytes
        return Item(rec, raw, hint, datetime.now(UTC), oversize)

    def _oversize(self, item: Item) -> Handled:
        rec, size = item.rec, len(item.raw)
        reason = f"message of {size} bytes exceeds the limit"
        return self._outputs.dead_letter(rec, "oversize", reason, item.first_seen)

    async def _process_batch(
        self, items: Sequence[Item], unconfirmed: Sequence[set[str]]
    ) -> Sequence[Sequence[Outcome] | BaseException]:
        """One hop to the worker thread for a run of items: each item's outcomes, or the
        exception its processing raised (returned, not raised). ``process_many`` answers for
        a prefix of the items: the real processor for all of them, :func:`process_each` (a
        processor with ``process`` alone) stopping after a retriable failure or after an item
        deciding a research key that is ``unconfirmed`` or was decided earlier in the run."""
        if not items:
            return []
        fault = self._health.keystore_fault
        if fault is not None:  # the processor is unusable: each item retries
            return [StoreFault(fault)] * len(items)
        processor = self._worker.processor
        args: list[ProcessItem] = [(i.raw, i.hint, i.first_seen) for i in items]
        call = partial(processor.process_many, args, unconfirmed)
        try:
            results = await self._worker.run(call)
        except Exception as exc:  # noqa: BLE001 - the call itself failed: as if every item did
            return [exc] * len(items)
        if not results or len(results) > len(items):
            error = RuntimeError("process_many must answer for every item")
            return [error] * len(items)
        return results

    async def handle_record(self, rec: Any) -> Handled:
        """One record alone (its own worker-thread hop)."""
        item = self._item(rec)
        if item.oversize:
            return self._oversize(item)
        return await self._decide(item, None)

    async def _decide(self, item: Item, first: Sequence[Outcome] | BaseException | None) -> Handled:
        """Route one record's result (``first``, or processed now when None): outcomes to
        outputs, input errors to the dead-letter topic, retriable errors retried."""
        rec, raw, hint, first_seen = item.rec, item.raw, item.hint, item.first_seen
        try:
            outcomes = await self._process_item(item, first)
        except Stopping:
            raise
        except LeakHeldBack as exc:
            return self._outputs.held(rec, None, exc.reason_class, str(exc), first_seen)
        except PartialInput as exc:
            # the good documents go out; the whole input goes to the dead-letter topic too,
            # with the reason naming the failed entries (coordinates only)
            good = self._outputs.route(rec, hint, exc.outcomes, first_seen)
            found = await self._diagnose(exc, raw)
            dead = self._outputs.dead_letter(rec, exc.reason_class, str(exc), first_seen, found)
            good.outputs.extend(dead.outputs)
            good.effects.extend(dead.effects)
            good.kind = (good.kind + ",deadletter").lstrip(",")
            return good
        except Exception as exc:  # noqa: BLE001 - the input (or the code) is at fault: never block
            reason_class, reason = safe_reason(exc)
            if reason_class == "internal_error":
                log.error(
                    "processing failed at %s/%d@%d: %s",
                    rec.topic,
                    rec.partition,
                    rec.offset,
                    type(exc).__name__,
                )
                extra: list[tuple[str, bytes]] = []
            elif isinstance(exc, DeadlineExceeded):
                extra = []  # too costly: diagnosing it (hl7apy) would cost as much again
                stage = str(exc.coordinates.get("stage") or "unknown")
                self._metrics.too_costly.labels(stage).inc()
                log.warning(
                    "too costly at %s/%d@%d (over its budget during %s): dead-lettered",
                    rec.topic,
                    rec.partition,
                    rec.offset,
                    stage,
                )
            else:
                extra = await self._diagnose(exc, raw)
            return self._outputs.dead_letter(rec, reason_class, reason, first_seen, extra)
        return self._outputs.route(rec, hint, outcomes, first_seen)

    async def _diagnose(self, exc: BaseException, raw: bytes) -> list[tuple[str, bytes]]:
        """Extra dead-letter headers from the processor's ``diagnose(error, raw)`` (e.g.
        hl7apy's precise findings on a malformed HL7 message; coordinates, no PHI). Slow:
        run on the worker thread, and never fail the dead-lettering."""
        processor = self._worker.current
        if processor is None:
            return []
        try:
            found = await self._worker.run(partial(processor.diagnose, exc, raw))
        except Exception as err:  # noqa: BLE001 - diagnosis is best effort
            log.warning("dead-letter diagnosis failed: %s", type(err).__name__)
            return []
        return [
            (str(k).replace("_", "-"), str(v)[: MAX_REASON_CHARS * 2].encode())
            for k, v in (found or {}).items()
            if k not in ("reason_class", "reason") and v
        ]

    async def process(
        self, raw: bytes, hint: str, now: datetime, *, subject: str | None = None
    ) -> Sequence[Outcome]:
        """Run the processor on the worker thread, retrying transient failures and faults of
        the whole key store (``subject`` tells patients apart for the integrity streak)."""
        return await self._process_item(Item(None, raw, hint, now, subject=subject), None)

    async def _process_item(
        self, item: Item, first: Sequence[Outcome] | BaseException | None
    ) -> Sequence[Outcome]:
        """The item's outcomes: ``first`` (a result already computed in a batch) unless it
        calls for a retry, else processed now; retriable errors and store faults are retried
        with backoff (``item.retried`` is set then). Input errors are raised."""
        if (
            first is not None
            and not isinstance(first, BaseException)
            and self._health.keystore_fault is None
        ):
            self._health.settled()  # the common case: no retry machinery per record
            return first
        given = [first] if first is not None else []

        async def attempt() -> Sequence[Outcome]:
            if self._health.keystore_fault is not None:
                given.clear()  # computed by the faulty processor
                await self._worker.reopen()  # raises StoreFault while still unusable
            try:
                if given:
                    got = given.pop()
                    if isinstance(got, BaseException):
                        raise got
                    result: Sequence[Outcome] = got
                else:
                    if first is not None:
                        item.retried = True
                    result = await self._worker.run(partial(_process_one, self._worker, item))
            except Exception as exc:
                classified = self._classified(exc, item)
                if classified is exc:
                    raise
                raise classified from exc
            self._health.settled()
            return result

        return await self._retrier.retry("process", attempt)

    def _classified(self, exc: Exception, item: Item) -> Exception:
        """What a processing failure is: a fault of the whole store (``StoreFault``: the
        processor is re-opened), a fault of the stream (a key store/database error that is
        not this record's: retried with backoff, not ready, nothing committed), or the
        record's own (an input error, one record failing authentication: dead-lettered)."""
        if not isinstance(exc, DeidstreamError):
            exc = classify_database_error(exc) or exc
        if (
            isinstance(exc, DeidstreamError)
            and not exc.retriable
            and self._health.store_wide(exc, item.subject_of())
        ):
            self._health.set_store_fault(exc.reason_class, exc)
            return StoreFault(exc.reason_class)
        if is_stream_fault(exc) or isinstance(exc, DeidstreamError) and exc.retriable:
            self._health.enter_stream_fault(exc, "process")
        return exc

    async def deidentify(self, raw: bytes, hint: str) -> Sequence[Outcome]:
        """Synchronous de-identification for /v1/deidentify: the processor's ``preview`` (real
        patient state, private dedup marks); never confirmed."""
        processor = self._worker.current
        if processor is None:
            raise RuntimeError("the processor is not started")
        call = partial(processor.preview, raw, content_hint=hint, now=datetime.now(UTC))
        return await self._worker.run(call)


def _process_one(worker: Worker, item: Item) -> Sequence[Outcome]:
    """One item on the worker thread; a processor that ``decides_repeats`` is told the keys
    in flight (as in the batch), so a retried item is decided like any other."""
    processor = worker.processor
    if not processor.decides_repeats:
        return processor.process(item.raw, content_hint=item.hint, now=item.first_seen)
    keys: set[str] = set().union(*item.in_flight)
    result = processor.process_many([(item.raw, item.hint, item.first_seen)], [keys])[0]
    if isinstance(result, BaseException):
        raise result
    return result
