"""The batches in flight: each processed batch's finisher task (publish, confirm, commit),
in batch order, with the records they hold against ``max_in_flight``."""

from __future__ import annotations

import asyncio
import contextlib

from service.metrics import Metrics


class Finishing:
    """Batches processed and not yet committed, oldest first, and the records of the batch
    being processed now (``processing``): together what is in flight."""

    def __init__(self, metrics: Metrics) -> None:
        self._gauge = metrics.in_flight
        # (finisher task, research keys, records) per batch
        self._batches: list[tuple[asyncio.Task[None], set[str], int]] = []
        self._records = 0  # the records of those batches
        self._last_acked: asyncio.Future[None] | None = None  # the last batch's acks are in
        self.processing = 0  # records of the batch being processed now

    @property
    def records(self) -> int:
        """Records fetched and not committed (batches finishing + the one processed)."""
        return self._records + self.processing

    @property
    def pending(self) -> bool:
        """Is any batch still finishing (or finished and not reaped)?"""
        return bool(self._batches)

    def all_done(self) -> bool:
        """Has every finisher ended (reaped or not)?"""
        return all(task.done() for task, _keys, _n in self._batches)

    def set_gauge(self) -> None:
        self._gauge.set(self.records)

    def set_processing(self, records: int) -> None:
        self.processing = records
        self.set_gauge()

    def last(self) -> tuple[asyncio.Task[None] | None, asyncio.Future[None] | None]:
        """The newest batch's finisher and the future of its acks (None, None if none)."""
        if not self._batches:
            return None, None
        return self._batches[-1][0], self._last_acked

    def add(
        self,
        finisher: asyncio.Task[None],
        keys: set[str],
        records: int,
        acked: asyncio.Future[None],
    ) -> None:
        self._last_acked = acked
        self._batches.append((finisher, keys, records))
        self._records += records

    def reap(self) -> None:
        """Forget finished finishers; a failed one raises here (Stopping, a fatal error)."""
        while self._batches and self._batches[0][0].done():
            task, _keys, n = self._batches.pop(0)
            self._records -= n
            self.set_gauge()
            task.result()

    async def wait_oldest(self) -> None:
        if self._batches:
            await asyncio.shield(self._batches[0][0])
        self.reap()

    async def drain(self) -> None:
        """Wait until every batch handed to a finisher is acknowledged and committed."""
        while self._batches:
            await self.wait_oldest()

    def unconfirmed_keys(self) -> list[set[str]]:
        """The research keys of the batches still finishing (not yet confirmed)."""
        return [keys for task, keys, _n in self._batches if not task.done()]

    async def cancel(self) -> None:
        """Closing: cancel the finishers still running and forget every batch."""
        for task, _keys, _n in self._batches:
            if not task.done():
                task.cancel()
            with contextlib.suppress(BaseException):
                await task
        self._batches.clear()
        self._records = 0
        self._last_acked = None
