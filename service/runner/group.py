"""The consumer group as a whole: which partitions the subscribed topics have, who the
group's members are, and so which partitions no live member holds (issue 24, item 4).

An instance only knows its own assignment. A partition that is nobody's — during a
rebalance, after a worker was killed and before the group noticed, when a member left — has
no lag anyone measures: summing the assigned partitions' lag then reads 0 and a stall there
is invisible. So the lag of such a partition is *unknown*, never 0:

* every worker exports ``deidstream_topic_partitions{topic}`` (from the consumer's
  metadata) and ``deidstream_partitions_assigned{topic}`` (its own): across every instance
  of the group, Prometheus sees ``topic partitions - sum(assigned)`` partitions with no
  owner, whatever the number of replicas;
* an instance that is the whole group (its members are its own workers: DescribeGroups
  names them) knows the partitions nobody holds (:func:`unassigned`): the supervisor's
  ``deidstream_partitions_unassigned{topic}``, ``/readyz`` after a bound, and
  ``total_lag`` None (unknown) while any is.

Reads two aiokafka consumer internals (the coordinator's member id and node), guarded: a
version without them gives "unknown", never an error.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from aiokafka.protocol.admin import DescribeGroupsRequest

STABLE = "Stable"


def topic_partitions(consumer: Any, topics: Iterable[str]) -> dict[str, int]:
    """Partition count per subscribed topic, from the consumer's metadata (topics the
    metadata does not know yet are left out)."""
    counts: dict[str, int] = {}
    for topic in topics:
        parts = consumer.partitions_for_topic(topic)
        if parts:
            counts[topic] = len(parts)
    return counts


def member_id(consumer: Any) -> str | None:
    """This consumer's member id in its group (None before it joined)."""
    coordinator = getattr(consumer, "_coordinator", None)
    member = getattr(coordinator, "member_id", None)
    return member if isinstance(member, str) and member else None


async def group_members(consumer: Any, group_id: str) -> list[str] | None:
    """The group's members (DescribeGroups to its coordinator); None when not known: no
    coordinator yet, the request failed, or the group is not stable (rebalancing: its
    members' assignments are being decided)."""
    coordinator = getattr(consumer, "_coordinator", None)
    node = getattr(coordinator, "coordinator_id", None)
    client = getattr(consumer, "_client", None)
    if node is None or client is None:
        return None
    response = await client.send(node, DescribeGroupsRequest([group_id]))
    for group in response.groups:
        error, name, state = group[0], group[1], group[2]
        if name != group_id or error != 0:
            continue
        if state != STABLE:
            return []  # rebalancing: nobody holds a partition for sure
        return sorted(str(member[0]) for member in group[5])
    return None


def unassigned(
    partitions: Mapping[str, int],
    held: Iterable[tuple[str, int]],
    members: Iterable[str] | None,
    ours: Collection[str],
) -> list[str] | None:
    """``topic/partition`` of every partition of ``partitions`` (topic → count) that is not
    in ``held`` (the live members' assignments), when ``ours`` (the member ids of this
    instance's consumers, past and present) are the whole group. None when that cannot be
    known: no partition count yet, the members unknown, or a member that is not ours (another
    replica holds some partitions)."""
    if not partitions or members is None or any(m not in ours for m in members):
        return None
    taken = set(held)
    return [
        f"{topic}/{p}"
        for topic, count in sorted(partitions.items())
        for p in range(count)
        if (topic, p) not in taken
    ]


__all__ = ["group_members", "member_id", "topic_partitions", "unassigned"]
