"""A partition no live worker holds has an unknown lag, not 0 (issue 24, item 4), without a
broker: the group judgement (service/runner/group.py), the supervisor's merged status,
readiness, gauge and log, the lag left out of the merged /metrics, and a single runner's
status. The broker end is tests/integration/test_unassigned_partitions.py."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from aiokafka import TopicPartition
from prometheus_client import generate_latest

from service.metrics import Metrics
from service.runner.group import unassigned
from service.runner.partitions import Assignment
from service.settings import Settings
from service.supervisor import GroupView, Supervisor, Worker, merge_statuses
from service.supervisor_app import merged_registry

ROOT = Path(__file__).resolve().parents[2]


def test_unassigned_names_the_partitions_nobody_holds_when_the_group_is_ours() -> None:
    parts = {"t": 4}
    assert unassigned(parts, [("t", 0), ("t", 1), ("t", 2), ("t", 3)], ["a", "b"], {"a", "b"}) == []
    # a dead worker's member is still in the group, its partitions held by no live worker
    assert unassigned(parts, [("t", 1), ("t", 3)], ["a", "b"], {"a", "b", "c"}) == ["t/0", "t/2"]
    # rebalancing (no stable member list): nothing held for sure but what is reported
    assert unassigned(parts, [], [], {"a"}) == ["t/0", "t/1", "t/2", "t/3"]


def test_unassigned_is_unknown_with_another_replica_or_no_metadata() -> None:
    assert unassigned({"t": 2}, [("t", 0)], ["a", "other"], {"a"}) is None  # another replica
    assert unassigned({"t": 2}, [("t", 0)], None, {"a"}) is None  # members unknown
    assert unassigned({}, [], ["a"], {"a"}) is None  # partition counts not known yet


def _body(member: str, partitions: list[int], lag: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "ready": True,
        "counts": {},
        "assignments": [{"topic": "t", "partition": p, "lag": lag} for p in partitions],
        "worker_busy_seconds": 0.0,
        "keystore_fault": None,
        "member_id": member,
        "group_members": extra.get("members", ["m0", "m1"]),
        "topic_partitions": {"t": 4},
    }


WORKERS = [Worker(0, Path("a")), Worker(1, Path("b"))]


def test_total_lag_is_unknown_while_a_dead_workers_partitions_are_nobodys() -> None:
    """The flaky wait of tests/integration/test_workers.py: worker 0 killed and restarted,
    its new process not yet given partitions, worker 1 still on its own two — the sum of the
    held partitions' lag is 0, the lag of the two others unknown. It read 0 before."""
    group = GroupView(set(), {})
    both = [(200, _body("m0", [0, 1])), (200, _body("m1", [2, 3]))]
    merged = merge_statuses(WORKERS, both, Settings(), group)
    assert merged["total_lag"] == 0 and merged["unassigned_partitions"] == []

    restarted = _body("m2", [], members=["m0", "m1", "m2"])  # m0: the dead one's member
    after = merge_statuses(
        WORKERS, [(200, restarted), (200, _body("m1", [2, 3]))], Settings(), group
    )
    assert after["unassigned_partitions"] == ["t/0", "t/1"]
    assert after["total_lag"] is None
    down = merge_statuses(WORKERS, [None, (200, _body("m1", [2, 3]))], Settings(), group)
    assert down["total_lag"] is None and down["unassigned_partitions"] == ["t/0", "t/1"]


def test_with_every_worker_dead_every_partition_is_nobodys() -> None:
    group = GroupView(set(), {})
    group.update([_body("m0", [0, 1]), _body("m1", [2, 3])], now=1.0)
    assert group.update([None, None], now=2.0) == ["t/0", "t/1", "t/2", "t/3"]
    assert group.update([None, None], now=3.0) == ["t/0", "t/1", "t/2", "t/3"]
    assert GroupView(set(), {}).update([None, None], now=1.0) is None  # never knew the group


def test_with_another_replica_in_the_group_the_lag_is_this_instances() -> None:
    group = GroupView(set(), {})
    others = ["m0", "m1", "replica-b"]
    answers = [
        (200, _body("m0", [0], 2, members=others)),
        (200, _body("m1", [1], 3, members=others)),
    ]
    merged = merge_statuses(WORKERS, answers, Settings(), group)
    assert merged["unassigned_partitions"] is None  # t/2 and t/3 are the other replica's
    assert merged["total_lag"] == 5


async def test_readiness_gauge_and_log_once_partitions_stay_nobodys(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "deidstream.supervisor")
    sup = Supervisor(Settings(unassigned_seconds=5), 2, tmp_path)
    gauge = sup.metrics.unassigned
    sup.group_changed([_body("m0", [0, 1]), _body("m1", [2, 3])], now=100.0)
    assert gauge.labels("t")._value.get() == 0
    assert sup.unassigned_overdue(200.0) is None

    sup.group_changed([None, _body("m1", [2, 3])], now=110.0)
    assert gauge.labels("t")._value.get() == 2
    assert sup.unassigned_overdue(112.0) is None  # a rebalance: within the bound
    sup.group_changed([None, _body("m1", [2, 3])], now=116.0)
    assert sup.unassigned_overdue(116.0) == 6.0
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "2 partition(s) held by no worker for 6 s" in lines[0]
    sup.group_changed([None, _body("m1", [2, 3])], now=118.0)
    assert len(caplog.records) == 1  # one line per episode, not one per look

    sup.group_changed([_body("m2", [0, 1], members=["m1", "m2"]), _body("m1", [2, 3])], 120.0)
    assert gauge.labels("t")._value.get() == 0 and sup.unassigned_overdue(130.0) is None
    assert caplog.records[-1].getMessage() == "every partition is held by a worker again"


async def test_readyz_names_the_partitions_nobody_holds_past_the_bound(tmp_path: Path) -> None:
    sup = Supervisor(Settings(unassigned_seconds=0.01), 2, tmp_path)  # never started
    sup.group_changed([_body("m0", [0, 1]), _body("m1", [2, 3])], now=0.0)
    sup.group_changed([None, _body("m1", [2, 3])], now=1.0)  # long ago
    got = await sup.readiness()
    assert "partitions_unassigned:2" in got["reasons"]
    assert got["unassigned_partitions"] == ["t/0", "t/1"]


WRITER = textwrap.dedent("""
    import sys
    from service.metrics import Metrics
    m = Metrics()
    for p in sys.argv[1].split(","):
        m.lag.labels("t", p).set(5)
    for p in filter(None, sys.argv[2].split(",")):
        m.lag.remove("t", p)  # revoked
""")


def test_the_merged_metrics_leave_out_the_lag_nobody_measures(tmp_path: Path) -> None:
    """Worker A held partitions 0 and 1 and lost both; worker B got partition 1: the merged
    /metrics show partition 1's lag (B's) and no line for partition 0 (it read 0 before)."""
    sup = Supervisor(Settings(), 2, tmp_path)
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(sup.metrics_dir)}
    for held, lost in (("0,1", "0,1"), ("1", "")):
        subprocess.run([sys.executable, "-c", WRITER, held, lost], cwd=ROOT, env=env, check=True)
    text = generate_latest(merged_registry(sup)).decode()
    lags = [line for line in text.splitlines() if line.startswith("deidstream_consumer_lag")]
    assert lags == ['deidstream_consumer_lag_messages{partition="1",topic="t"} 5.0']


class FakeConsumer:
    """The consumer calls ``Assignment.refresh_group`` makes, and the two internals."""

    def __init__(self, members: list[str]) -> None:
        self._coordinator = type("C", (), {"member_id": "m-self", "coordinator_id": None})()
        self.members = members

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return {0, 1, 2} if topic == "t" else None


async def test_a_single_runner_sees_its_topics_and_exports_what_it_holds() -> None:
    metrics = Metrics()
    assignment = Assignment(metrics)
    assignment.assigned([TopicPartition("t", 0), TopicPartition("t", 2)])
    await assignment.refresh_group(FakeConsumer([]), "g", ["t", "unknown"])
    assert assignment.topic_partitions == {"t": 3} and assignment.member_id == "m-self"
    assert assignment.members is None  # no coordinator yet: unknown
    assert assignment.unassigned() is None
    assert metrics.value("deidstream_topic_partitions", topic="t") == 3
    assert metrics.value("deidstream_partitions_assigned", topic="t") == 2
    assignment.members = ["m-self"]  # the whole group
    assert assignment.unassigned() == ["t/1"]
