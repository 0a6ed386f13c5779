"""Partition bookkeeping: committed offset, position and lag per assigned partition, the
rebalance listener (a revoke waits for every batch in flight), and the lag gauge."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

from service.metrics import Metrics
from service.runner import group

log = logging.getLogger("deidstream.runner")
LAG_REFRESH_SECONDS = 0.5


@dataclass
class PartitionState:
    committed: int | None = None  # last offset this instance committed (next to read)
    position: int | None = None  # consumer position (committed + what is fetched)
    highwater: int | None = None
    asked_group: bool = False  # the group's committed offset was read (refresh_ends)

    @property
    def lag(self) -> int | None:
        """Messages not yet committed; None until both ends are known."""
        done = self.committed if self.committed is not None else self.position
        if self.highwater is None or done is None:
            return None
        return max(0, self.highwater - done)


class RebalanceListener(ConsumerRebalanceListener):  # type: ignore[misc,unused-ignore]
    """A revoke takes the batch ``lock`` (the batch being processed finishes first), then
    ``drain`` (earlier batches: acknowledged, confirmed, committed), then forgets the
    partitions; every revoke and assign makes earlier fetches stale (``generation``)."""

    def __init__(
        self, lock: asyncio.Lock, drain: Callable[[], Awaitable[None]], assignment: Assignment
    ) -> None:
        self._lock = lock
        self._drain = drain
        self._assignment = assignment

    async def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        # Taking the batch lock waits for the batch in flight: it publishes, confirms and
        # commits before the partitions go to another member.
        async with self._lock:
            try:
                await self._drain()  # earlier batches: acknowledged, confirmed, committed
            except Exception as exc:  # noqa: BLE001 - the runner reports it on its next await
                log.warning("draining before a revoke failed: %s", type(exc).__name__)
            self._assignment.revoked(revoked)
        log.info("partitions revoked: %d", len(list(revoked)))

    async def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        self._assignment.assigned(assigned)
        log.info("partitions assigned: %s", sorted(f"{t.topic}/{t.partition}" for t in assigned))


class Assignment:
    """The runner's view of its assignment: committed offset, position and lag per
    partition (forgotten on revoke), and the ``generation`` bumped on every revoke/assign."""

    def __init__(self, metrics: Metrics) -> None:
        self._lag_gauge = metrics.lag
        self.states: dict[TopicPartition, PartitionState] = {}
        self.generation = 0  # bumped on every revoke/assign
        self._last_lag = 0.0  # when the lag was last refreshed (monotonic)
        self._topic_gauge = metrics.topic_partitions
        self._assigned_gauge = metrics.partitions_assigned
        # the group as a whole (service/runner/group.py), refreshed beside the lag
        self.topic_partitions: dict[str, int] = {}
        self.member_id: str | None = None
        self.members: list[str] | None = None
        self.own_members: set[str] = set()  # every member id this consumer has had

    def assigned(self, tps: Iterable[TopicPartition]) -> None:
        self.generation += 1
        for tp in tps:
            self.states.setdefault(tp, PartitionState())

    def revoked(self, tps: Iterable[TopicPartition]) -> None:
        self.generation += 1  # batches fetched before this point are stale
        for tp in tps:
            self.forget(tp)

    def forget(self, tp: TopicPartition) -> None:
        self.states.pop(tp, None)
        with contextlib.suppress(KeyError):
            self._lag_gauge.remove(tp.topic, str(tp.partition))

    def committed(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Offsets committed: the next to read, for the partitions still assigned."""
        for tp, offset in offsets.items():
            if tp in self.states:
                self.states[tp].committed = offset

    async def refresh_lag(self, consumer: AIOKafkaConsumer | None) -> None:
        """Positions and high watermarks → lag, at most every ``LAG_REFRESH_SECONDS`` (it
        awaits a position per partition: cheap, but not after every small batch)."""
        now = time.monotonic()
        if consumer is None or now - self._last_lag < LAG_REFRESH_SECONDS:
            return
        self._last_lag = now
        assigned = consumer.assignment()
        for tp in [t for t in self.states if t not in assigned]:
            self.forget(tp)
        for tp in assigned:
            if tp not in consumer.assignment():
                continue  # a rebalance happened while we awaited a position below
            state = self.states.setdefault(tp, PartitionState())
            high = consumer.highwater(tp)
            if high is not None:  # never back below what refresh_ends read
                state.highwater = max(high, state.highwater or 0)
            with contextlib.suppress(Exception):  # position is unknown during a rebalance
                state.position = await asyncio.wait_for(consumer.position(tp), 1.0)
            if state.lag is not None:
                self._lag_gauge.labels(tp.topic, str(tp.partition)).set(state.lag)

    async def refresh_ends(self, consumer: AIOKafkaConsumer) -> None:
        """The lag from the broker's end offsets (one ListOffsets request), not from the
        fetches: called by the stall watchdog, so the lag keeps growing while the fetch loop
        waits on a stalled batch (issue 24, item 4). A partition this instance has not
        committed yet counts from the group's committed offset."""
        tps = [tp for tp in consumer.assignment() if tp in self.states]
        if not tps:
            return
        ends = await consumer.end_offsets(tps)
        for tp, end in ends.items():
            state = self.states.get(tp)
            if state is None:
                continue  # revoked meanwhile
            if state.committed is None and not state.asked_group:
                # once: the fetched position would hide the records stuck in a batch
                state.asked_group = True
                with contextlib.suppress(Exception):
                    state.committed = await consumer.committed(tp)
            state.highwater = max(int(end), state.highwater or 0)
            if state.lag is not None and tp in self.states:
                self._lag_gauge.labels(tp.topic, str(tp.partition)).set(state.lag)

    async def refresh_group(
        self, consumer: AIOKafkaConsumer, group_id: str, topics: Iterable[str]
    ) -> None:
        """The subscribed topics' partition counts, this consumer's member id and the
        group's members (None while unknown); the gauges of partitions per topic and of
        those assigned here."""
        topics = list(topics)
        self.topic_partitions = group.topic_partitions(consumer, topics)
        self.member_id = group.member_id(consumer)
        if self.member_id is not None:
            self.own_members.add(self.member_id)
        for topic in topics:
            if topic in self.topic_partitions:
                self._topic_gauge.labels(topic).set(self.topic_partitions[topic])
            self._assigned_gauge.labels(topic).set(sum(tp.topic == topic for tp in self.states))
        self.members = None  # unknown if the request below fails
        self.members = await group.group_members(consumer, group_id)

    def unassigned(self) -> list[str] | None:
        """The partitions nobody holds when this instance is the whole group, else None."""
        return group.unassigned(
            self.topic_partitions,
            ((tp.topic, tp.partition) for tp in self.states),
            self.members,
            self.own_members,
        )
