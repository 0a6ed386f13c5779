"""Partition bookkeeping: committed offset, position and lag per assigned partition, the
rebalance listener (a revoke waits for every batch in flight), and the lag gauge."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiokafka import ConsumerRebalanceListener, TopicPartition

from service.runner.state import RunnerState

if TYPE_CHECKING:
    from service.runner.loop import Runner

log = logging.getLogger("deidstream.runner")
LAG_REFRESH_SECONDS = 0.5


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


class RebalanceListener(ConsumerRebalanceListener):
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


class Partitions(RunnerState):
    """The runner's view of its assignment: lag per partition, forgotten on revoke."""

    def forget_partition(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)
        with contextlib.suppress(KeyError):
            self.metrics.lag.remove(tp.topic, str(tp.partition))

    async def _refresh_lag(self) -> None:
        """Positions and high watermarks → lag, at most every ``LAG_REFRESH_SECONDS`` (it
        awaits a position per partition: cheap, but not after every small batch)."""
        consumer = self._consumer
        now = time.monotonic()
        if consumer is None or now - self._last_lag < LAG_REFRESH_SECONDS:
            return
        self._last_lag = now
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
