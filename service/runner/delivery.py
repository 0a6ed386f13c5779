"""Delivery of a batch's outputs: send every record and await every acknowledgement
(``acks=all``, failed sends retried with backoff in key order, refused records replaced),
confirm the outcomes to the processor, then commit the offsets — in batch order."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from functools import partial
from typing import Any

from aiokafka import TopicPartition
from aiokafka.errors import CommitFailedError, IllegalStateError

from pipelines.errors import KeystoreError
from service.metrics import Metrics
from service.runner.clients import Clients
from service.runner.health import Health
from service.runner.outputs import Handled, OutRecord
from service.runner.partitions import Assignment
from service.runner.retry import RECORD_REJECTED, Retrier, is_retriable
from service.runner.worker import Worker
from service.settings import Settings

log = logging.getLogger("deidstream.runner")


def confirm_retriable(exc: BaseException) -> bool:
    """Confirming a batch concerns no single record: every key store error is a fault of
    the stream there (retried; the batch's offsets wait), never a reason to stop the runner."""
    return is_retriable(exc) or isinstance(exc, KeystoreError)


def _settle(
    sent: list[OutRecord], results: list[object], failed_keys: set[tuple[str, bytes | None]]
) -> list[OutRecord]:
    """Act on one round's results: acknowledged records are told so, a refused record is
    replaced (when it has a replacement), and a failed send and every record of the same key
    are sent again. The records of the next round, in order."""
    retry: list[OutRecord] = []
    for out, res in zip(sent, results, strict=True):
        if isinstance(res, RECORD_REJECTED):
            log.error("broker refused a record for %s: %s", out.topic, type(res).__name__)
            replacement = out.on_reject(res) if out.on_reject else None
            if replacement is not None:
                retry.append(replacement)
        elif (out.topic, out.key) in failed_keys:
            retry.append(out)
        elif not isinstance(res, BaseException):
            out.on_ack()
    return retry


class Delivery:
    """Publish → confirm → commit for the batches handed to finishers."""

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        clients: Clients,
        worker: Worker,
        retrier: Retrier,
        health: Health,
        assignment: Assignment,
    ) -> None:
        self._settings = settings
        self._metrics = metrics
        self._clients = clients
        self._worker = worker
        self._retrier = retrier
        self._health = health
        self._assignment = assignment

    async def finish(
        self,
        previous: asyncio.Task[None] | None,
        previous_acked: asyncio.Future[None] | None,
        handled: list[Handled],
        offsets: dict[TopicPartition, int],
        acked: asyncio.Future[None],
    ) -> None:
        """Publish once the previous batch's outputs are acknowledged (order per partition),
        await the acks (``acked`` then resolves, so the next batch may send), then — once
        the previous batch is confirmed and committed — confirm and commit. A failure of
        the previous batch is this batch's failure too."""
        try:
            if previous_acked is not None:
                await asyncio.shield(previous_acked)
            sent = await self._send(handled)
        except BaseException as exc:
            if not acked.done():
                if isinstance(exc, asyncio.CancelledError):
                    acked.cancel()
                else:
                    acked.set_exception(exc)
                    acked.exception()  # retrieved: the next finisher re-raises it
            raise
        acked.set_result(None)
        if previous is not None:
            await asyncio.shield(previous)
        await self.confirm(handled, sent)
        await self._commit(offsets)

    async def flush(self, handled: list[Handled]) -> None:
        """Publish every output, wait for the acks, then confirm to the processor."""
        await self.confirm(handled, await self._send(handled))

    async def _send(self, handled: list[Handled]) -> list[str]:
        """Publish every output and wait for the acks; the dead-letter marks to remember.

        Dead letters are sent once per input: with a processor that keeps marks
        (``sent_marks`` / ``mark_sent`` do something), a dead letter whose input was dead-lettered and
        acknowledged before (a batch replayed after a crash, before its offsets were
        committed) is not sent again — it is counted, as the replayed input was consumed.
        The marks are written with the confirmation, after the acks."""
        outputs = [o for h in handled for o in h.outputs]
        once = [o.once for o in outputs if o.once]
        if once:
            sent = await self._sent_marks(once)
            if sent:
                for out in outputs:
                    if out.once in sent:
                        out.on_ack()
                outputs = [o for o in outputs if o.once not in sent]
                once = [k for k in once if k not in sent]
        await self._publish(outputs)
        return once

    async def _sent_marks(self, marks: list[str]) -> set[str]:
        """Which of these dead letters were sent and acknowledged before (one worker hop)."""
        processor = self._worker.processor
        call = partial(processor.sent_marks, marks)
        found = await self._retrier.retry(
            "confirm", lambda: self._worker.run(call), confirm_retriable
        )
        return set(found or ())

    async def _publish(self, outputs: list[OutRecord]) -> None:
        """Send all, await every ack; resend failures (and later records of the same key, to
        keep per-key order) with backoff until acknowledged or a stop is requested."""
        remaining = outputs
        attempt = 0
        sent_any = bool(outputs)
        health = self._health
        if outputs and not health.broker_ok:
            await self._clients.after_outage()
        while remaining:
            results = await self._send_round(remaining)
            failed_keys = {
                (o.topic, o.key)
                for o, r in zip(remaining, results, strict=True)
                if isinstance(r, BaseException) and not isinstance(r, RECORD_REJECTED)
            }
            retry = _settle(remaining, results, failed_keys)
            if failed_keys:
                await self._after_failed_round(retry, results, attempt)
                attempt += 1
            # else only replacements of refused records (or nothing) are left
            remaining = retry
        if sent_any and not health.broker_ok:
            health.set_broker(True)

    async def _send_round(self, outputs: list[OutRecord]) -> list[object]:
        """Send every record (connecting the producer first if needed); each one's ack or
        error, in order."""
        clients = self._clients
        if clients.producer is None:
            await self._retrier.retry("connect", clients.connect_producer)
        producer = clients.need_producer()
        futures: list[asyncio.Future[Any]] = []
        for out in outputs:
            try:
                fut = await producer.send(out.topic, out.value, key=out.key, headers=out.headers)
            except Exception as exc:  # noqa: BLE001 - becomes a failed send below
                fut = asyncio.get_running_loop().create_future()
                fut.set_exception(exc)
            futures.append(fut)
        return list(await asyncio.gather(*futures, return_exceptions=True))

    async def _after_failed_round(
        self, retry: list[OutRecord], results: list[object], attempt: int
    ) -> None:
        """A round with failed sends: the broker is down; back off before the next."""
        errors = {type(r).__name__ for r in results if isinstance(r, BaseException)}
        log.warning(
            "publish failed for %d records (%s); retrying", len(retry), ",".join(sorted(errors))
        )
        self._health.set_broker(False)
        self._metrics.retries.labels("publish").inc()
        await self._retrier.sleep(self._retrier.backoff(attempt))

    async def confirm(self, handled: list[Handled], sent: Sequence[str] = ()) -> None:
        """Outputs are durable: the processor marks those versions acknowledged
        (``Processor.commit``) and remembers the dead letters sent (``mark_sent``) before
        offsets are committed. One call per flush, in input order, so the key store flushes
        once per batch — also a batch without outputs: every state change it made (an ADT's
        context, a visit) is durable before its offsets are committed."""
        processor = self._worker.processor
        outcomes = [o for h in handled if not h.rejected for o in h.outcomes]
        marks = list(sent)
        if not handled and not marks:
            return

        def call() -> None:  # one worker hop for both
            processor.commit(outcomes)
            if marks:
                processor.mark_sent(marks)

        await self._retrier.retry("confirm", lambda: self._worker.run(call), confirm_retriable)

    async def _commit(self, offsets: dict[TopicPartition, int]) -> None:
        consumer = self._clients.need_consumer()
        timeout = self._settings.request_timeout_ms / 1000

        async def attempt() -> None:
            # aiokafka waits for a coordinator without limit; bound it so an unreachable
            # broker becomes a retry (and readiness false) instead of a silent hang
            await asyncio.wait_for(consumer.commit(offsets), timeout)

        try:
            await self._retrier.retry("commit", attempt)
        except (CommitFailedError, IllegalStateError) as exc:
            # the group rebalanced: the new owner replays from its last commit; dedup drops it
            log.warning("commit refused after rebalance: %s", type(exc).__name__)
            return
        self._metrics.commits.inc()
        self._assignment.committed(offsets)
