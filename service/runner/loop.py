"""The runner itself: lifecycle (start, stop, drain), the fetch loop, and its parts —
``batches`` (processing), ``delivery`` (publish, confirm, commit), ``finishing`` (batches in
flight), ``outputs`` (what is sent), ``health`` (readiness, store faults, probes),
``partitions`` (assignment, lag), ``clients`` (Kafka), ``worker`` (the processor on its
thread), ``retry`` (backoff) — each an object given what it uses."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter as Tally
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from time import monotonic
from typing import Any

from aiokafka import TopicPartition
from aiokafka.errors import KafkaError

from pipelines.outcome import Outcome
from service.metrics import Metrics
from service.runner import fetchwait
from service.runner.batches import Batches
from service.runner.clients import Clients
from service.runner.contract import ProcessorFactory
from service.runner.delivery import Delivery
from service.runner.fetchwait import FetchWait
from service.runner.finishing import Finishing
from service.runner.health import Health, Prober
from service.runner.outputs import Outputs
from service.runner.partitions import Assignment, PartitionState, RebalanceListener
from service.runner.retry import Retrier, Stopping
from service.runner.stalls import Stalls
from service.runner.state import RunnerContext
from service.runner.worker import Worker
from service.settings import Settings

log = logging.getLogger("deidstream.runner")


class Runner:
    """Consumer group member + producer + processor, with readiness and status.

    Composed of small parts, each constructed with what it uses (:mod:`service.runner`):
    ``clients`` (Kafka), ``health`` (readiness, faults), ``retrier`` (backoff), ``worker``
    (the processor on its thread), ``assignment`` (partitions, lag), ``finishing`` (batches
    in flight), ``delivery`` (publish, confirm, commit), ``batches`` (processing) and
    ``prober`` (idle probes). The runner owns the lifecycle and the fetch loop."""

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        processor_factory: ProcessorFactory,
        *,
        on_fatal: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.context = ctx = RunnerContext(settings, metrics, Tally(), asyncio.Event())
        self.on_fatal = on_fatal
        self.clients = Clients(settings)
        self.health = Health(metrics, self.clients.assigned)
        self.retrier = Retrier(ctx, self.health)
        self.worker = Worker(metrics, processor_factory, self.health, self.retrier)
        self.assignment = Assignment(metrics)
        self.finishing = Finishing(metrics)
        self.outputs = Outputs(settings, metrics, ctx.counts)
        self.delivery = Delivery(
            settings, metrics, self.clients, self.worker, self.retrier, self.health, self.assignment
        )
        self.batches = Batches(
            ctx,
            self.outputs,
            self.clients,
            self.worker,
            self.retrier,
            self.health,
            self.assignment,
            self.finishing,
            self.delivery,
        )
        self.prober = Prober(settings, self.health, self.clients, self.worker)
        self.fetch_wait = FetchWait(settings.fetch_max_wait_ms, settings.fetch_max_wait_ceiling_ms)
        self.stalls = Stalls(settings, metrics, self.health, self.clients, self.assignment)
        self._task: asyncio.Task[None] | None = None
        self._watchdog: asyncio.Task[None] | None = None

    # ---------------------------------------------------------------- the parts' state

    @property
    def settings(self) -> Settings:
        return self.context.settings

    @property
    def metrics(self) -> Metrics:
        return self.context.metrics

    @property
    def counts(self) -> Tally[str]:
        return self.context.counts

    @property
    def partitions(self) -> dict[TopicPartition, PartitionState]:
        return self.assignment.states

    @property
    def ready(self) -> bool:
        return self.health.ready

    @property
    def started(self) -> bool:
        return self.health.started

    @property
    def broker_ok(self) -> bool:
        return self.health.broker_ok

    @property
    def keystore_ok(self) -> bool:
        return self.health.keystore_ok

    @property
    def keystore_fault(self) -> str | None:
        return self.health.keystore_fault

    @property
    def stream_fault(self) -> str | None:
        return self.health.stream_fault

    @property
    def worker_busy_seconds(self) -> float:
        return self.worker.busy_seconds

    @property
    def in_flight(self) -> int:
        """Records fetched and not committed (batches finishing + the one processed)."""
        return self.finishing.records

    # ---------------------------------------------------------------- the parts' work

    async def handle_batch(
        self, batch: Mapping[TopicPartition, Sequence[Any]], generation: int | None = None
    ) -> None:
        await self.batches.handle_batch(batch, generation)

    async def process(
        self, raw: bytes, hint: str, now: datetime, *, subject: str | None = None
    ) -> Sequence[Outcome]:
        return await self.batches.process(raw, hint, now, subject=subject)

    async def deidentify(self, raw: bytes, hint: str) -> Sequence[Outcome]:
        return await self.batches.deidentify(raw, hint)

    async def drain(self) -> None:
        """Wait until every batch handed to a finisher is acknowledged and committed."""
        await self.finishing.drain()

    async def prepare_processor(self) -> None:
        """Build the processor on the worker thread (it owns the key store connection)."""
        await self.worker.prepare()

    # ---------------------------------------------------------------- lifecycle

    def start_background(self) -> asyncio.Task[None]:
        """Start consuming in a task of the running loop (used by the app lifespan)."""
        self._task = asyncio.get_running_loop().create_task(self._main(), name="deidstream-runner")
        return self._task

    async def _main(self) -> None:
        # the stall watchdog and the lag run beside the fetch loop, from the start (a store
        # or broker that hangs the start is a stall too)
        self._watchdog = asyncio.get_running_loop().create_task(
            self.stalls.run(), name="deidstream-stalls"
        )
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
        clients, retrier = self.clients, self.retrier
        await retrier.retry("connect", clients.connect_producer)
        if self.settings.create_topics:
            await retrier.retry("connect", clients.ensure_topics)
        s = self.settings
        consumer = clients.new_consumer()
        listener = RebalanceListener(self.batches.lock, self.finishing.drain, self.assignment)
        consumer.subscribe(list(s.input_topics), listener=listener)
        await retrier.retry("connect", consumer.start)
        self.health.broker_ok = True
        self.health.started = True
        self.health.update_ready()
        log.info("runner started: %d input topics, group %s", len(s.input_topics), s.group_id)

    def request_stop(self) -> None:
        self.context.stop.set()

    @property
    def stopping(self) -> bool:
        return self.context.stopping

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
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.cancel()
            with contextlib.suppress(BaseException):
                await watchdog
        self.stalls.clear()
        self.health.started = False
        self.health.update_ready()
        await self.finishing.cancel()
        await self.clients.close()
        await self.worker.close()

    # ---------------------------------------------------------------- the loop

    async def run(self) -> None:
        consumer = self.clients.need_consumer()
        finishing, health = self.finishing, self.health
        while not self.stopping:
            finishing.reap()
            room = self.settings.max_in_flight - finishing.records
            if room <= 0:
                await finishing.wait_oldest()  # bounded memory: the oldest batch first
                continue
            generation = self.assignment.generation
            try:
                batch = await consumer.getmany(
                    timeout_ms=50 if finishing.pending else 300,
                    max_records=min(room, self.settings.max_batch_records),
                )
            except KafkaError as exc:
                health.set_broker(False)
                log.warning("fetch failed: %s", type(exc).__name__)
                self.metrics.retries.labels("fetch").inc()
                await self.retrier.sleep(self.settings.retry_initial_seconds)
                continue
            await self._adapt_fetch_wait(consumer, batch)
            if batch:
                await self.batches.handle_batch(batch, generation)
            else:
                await self.prober.probe()
            try:
                await self.assignment.refresh_lag(self.clients.consumer)
            except Exception as exc:  # noqa: BLE001 - bookkeeping must never stop the stream
                log.warning("lag refresh failed: %s", type(exc).__name__)
        await self.drain()  # a stop: finish and commit everything in flight

    async def _adapt_fetch_wait(self, consumer: Any, batch: Mapping[Any, Sequence[Any]]) -> None:
        """Longer fetch waits while fetches come back empty with records waiting (slow
        broker storage), back to the floor when idle (service/runner/fetchwait.py)."""
        fw = self.fetch_wait
        if fw.ceiling_ms == fw.floor_ms:
            return
        records = sum(len(recs) for recs in batch.values())
        lagging = False if records else await fetchwait.behind(consumer)
        before = fw.current_ms
        after = fw.after_fetch(records=records, behind=lagging, now=monotonic())
        if after != before and fetchwait.apply(consumer, after):
            level = logging.INFO if after > before else logging.DEBUG
            log.log(
                level,
                "fetch wait %d ms -> %d ms (%s)",
                before,
                after,
                "records waiting, fetch empty" if after > before else "idle",
            )

    def status(self) -> dict[str, Any]:
        """Assignments, lag and counts: coordinates and numbers only, no message content."""
        parts = []
        for tp in sorted(self.partitions, key=lambda t: (t.topic, t.partition)):
            st = self.partitions[tp]
            parts.append(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "committed": st.committed,
                    "position": st.position,
                    "highwater": st.highwater,
                    "lag": st.lag,
                }
            )
        health = self.health
        unassigned = self.assignment.unassigned()
        return {
            "ready": health.ready,
            "started": health.started,
            "broker_reachable": health.broker_ok,
            "keystore_reachable": health.keystore_ok,
            # a fault of the whole store, else of the stream (e.g. keystore_permission)
            "keystore_fault": health.keystore_fault or health.stream_fault,
            # what holds the worker up, and for how long (service/runner/stalls.py)
            "stalls": {cause: round(s, 1) for cause, s in sorted(health.stalls.items())},
            "group_id": self.settings.group_id,
            "input_topics": list(self.settings.input_topics),
            "assignments": parts,
            # None while any assigned partition's lag is still unknown, or a partition of
            # the subscribed topics is nobody's (its lag is unknown, not 0)
            "total_lag": (
                sum(p["lag"] for p in parts)
                if parts and all(p["lag"] is not None for p in parts) and not unassigned
                else None
            ),
            # the group (service/runner/group.py): what the supervisor judges the workers by
            "member_id": self.assignment.member_id,
            "group_members": self.assignment.members,
            "topic_partitions": dict(sorted(self.assignment.topic_partitions.items())),
            # partitions nobody holds, when this instance is the whole group (else None)
            "unassigned_partitions": unassigned,
            "counts": dict(sorted(self.counts.items())),
            # wall time the processing thread spent working (processing, confirming, key
            # store calls): its growth per second near 1 means the instance is saturated
            "worker_busy_seconds": round(self.worker.busy_seconds, 6),
        }
