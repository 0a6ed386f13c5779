"""A key store outage longer than max.poll.interval.ms, against a real broker: the batch in
hand keeps retrying (nothing committed, not ready), the consumer leaves the group by itself
once no fetch happened for max.poll.interval.ms, and when the store answers again the batch
is finished, the member joins again, gets its partitions back, and every input comes out
once — nothing lost, nothing published twice."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from kafka_helpers import produce, read_all, toy
from test_runner_kafka import settings_for, start_runner, wait_for
from toy_processor import ToyProcessor

from service.broker import EmbeddedBroker

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def test_outage_longer_than_max_poll_interval_leaves_and_rejoins(
    tansu: EmbeddedBroker, tmp_path: Path
) -> None:
    down = tmp_path / "store-down"
    s = settings_for(tansu, max_poll_interval_ms=2_000, retry_max_seconds=0.3, max_in_flight=20)
    proc = ToyProcessor(str(tmp_path / "marks.db"), fail_file=str(down))
    runner = await start_runner(s, proc)
    topic = s.input_topics[0]
    try:
        await produce(
            s.bootstrap_servers,
            topic,
            [(b"k%d" % (i % 5), toy(f"p{i}", "d", 1)) for i in range(10)],
        )
        await wait_for(
            lambda: (
                runner.counts["published"] == 10
                and all(st.lag == 0 for st in runner.partitions.values())
            )
        )
        coordinator = runner.clients.consumer._coordinator  # type: ignore[union-attr]
        member = coordinator.member_id
        assert coordinator.generation >= 0 and member and runner.ready

        down.touch()  # the key store is unreachable from here on
        await produce(
            s.bootstrap_servers,
            topic,
            [(b"k%d" % (i % 5), toy(f"p{i}", "d", 1)) for i in range(10, 30)],
        )
        await wait_for(
            lambda: (
                not runner.ready
                and runner.metrics.value("deidstream_retries_total", operation="process") >= 1
            )
        )
        commits = runner.metrics.value("deidstream_offset_commits_total")
        # no fetch for longer than max.poll.interval.ms: the member left the group
        await wait_for(lambda: coordinator.generation < 0 and not coordinator.member_id, within=15)
        assert runner.metrics.value("deidstream_offset_commits_total") == commits
        assert runner.counts["published"] == 10  # nothing of the stuck batch went out

        down.unlink()  # the store answers again
        await wait_for(
            lambda: (
                runner.counts["consumed"] >= 30
                and runner.ready
                and coordinator.generation >= 0
                and coordinator.member_id
                and runner.status()["total_lag"] == 0
            ),
            within=60,
        )
        assert runner.clients.consumer.assignment()  # type: ignore[union-attr]
        assert coordinator.member_id != member  # a new member: it joined again
    finally:
        await runner.stop()

    research = await read_all(s.bootstrap_servers, s.research_topic, expect=30, settle=1.0)
    versions = Counter(r.key for r in research)
    assert len(versions) == 30  # every input came out
    assert max(versions.values()) == 1  # and once: the replayed batch was dropped by dedup
