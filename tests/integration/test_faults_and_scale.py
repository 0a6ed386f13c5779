"""Broker outage mid-run (no loss) and two instances in one group on PostgreSQL."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hl7_gen import report
from kafka_helpers import produce, read_all, toy, unique
from test_runner_kafka import settings_for, start_runner, wait_for
from toy_processor import ToyProcessor

from keystore.keyring import Keyring
from service.broker import EmbeddedBroker
from service.metrics import Metrics
from service.runner import Runner
from service.settings import Settings
from service.wiring import real_processor_factory

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def test_broker_outage_mid_stream_loses_nothing(
    own_tansu: EmbeddedBroker, tmp_path: Path
) -> None:
    """Tansu keeps data in memory only, so the outage is a frozen broker (SIGSTOP): clients
    time out exactly as with a dead one, and the data is still there when it comes back."""
    s = settings_for(own_tansu, request_timeout_ms=7000, max_in_flight=10)
    runner = await start_runner(s, ToyProcessor(str(tmp_path / "marks.db")))
    topic = s.input_topics[0]
    try:
        await produce(
            s.bootstrap_servers,
            topic,
            [(b"k%d" % (i % 7), toy(f"p{i}", "d", 1)) for i in range(60)],
        )
        await wait_for(lambda: runner.counts["published"] >= 10)
        own_tansu.pause()
        # readiness falls at the first failed publish or commit: aiokafka gives up on a
        # frozen broker after its request timeout, later under a loaded CI machine
        await wait_for(lambda: not runner.ready, within=60)
        assert runner.metrics.value("deidstream_ready") == 0
        await asyncio.sleep(1.0)
        own_tansu.resume()
        await produce(
            s.bootstrap_servers,
            topic,
            [(b"k%d" % (i % 7), toy(f"p{i}", "d", 1)) for i in range(60, 100)],
        )
        await wait_for(
            lambda: (
                runner.ready
                and runner.status()["total_lag"] == 0
                and runner.counts["consumed"] >= 100
            ),
            within=90,
        )
        retries = sum(
            runner.metrics.value("deidstream_retries_total", operation=op)
            for op in ("publish", "commit", "fetch", "connect")
        )
    finally:
        await runner.stop()
    research = await read_all(s.bootstrap_servers, s.research_topic, expect=100)
    keys = {r.key for r in research}
    assert len(keys) == 100  # every input came out: nothing lost
    assert retries >= 0


@pytest.fixture
def pg_schema_url(pg_url: str) -> Any:
    import psycopg

    schema = "deid_" + uuid.uuid4().hex[:10]
    yield f"{pg_url}?schema={schema}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def test_two_instances_agree_on_surrogates(tansu: EmbeddedBroker, pg_schema_url: str) -> None:
    base = unique("pair")
    s = Settings(
        bootstrap_servers=tansu.bootstrap_servers,
        input_topics=(f"{base}.hl7v2", f"{base}.other"),
        research_topic=f"{base}.research",
        deadletter_topic=f"{base}.dlq",
        held_topic=f"{base}.held",
        group_id=f"{base}.g",
        keystore_url=pg_schema_url,
        master_key=Keyring.generate().to_text(),
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        max_in_flight=16,
    )
    runners = []
    for _ in range(2):
        metrics = Metrics()
        runner = Runner(s, metrics, real_processor_factory(s, metrics))
        runner.start_background()
        runners.append(runner)
    try:
        await wait_for(lambda: all(r.ready for r in runners), within=60)
        # wait for the group to settle: the two members split the partitions between them
        await wait_for(
            lambda: (
                len(runners[0].partitions) + len(runners[1].partitions) == 6
                and all(r.partitions for r in runners)
            ),
            within=60,
        )
        patients, visits = 12, 3
        # unkeyed (random partitions, both topics), so a patient's reports meet both members
        docs = [(None, report(n, v)) for n in range(patients) for v in range(1, visits + 1)]
        await produce(s.bootstrap_servers, s.input_topics[0], docs[::2])
        await produce(s.bootstrap_servers, s.input_topics[1], docs[1::2])
        total = patients * visits
        await wait_for(lambda: sum(r.counts["consumed"] for r in runners) >= total, within=90)
        await wait_for(
            lambda: sum(r.counts["published"] + r.counts["held"] for r in runners) >= total,
            within=30,
        )
        per_instance = [r.counts["published"] for r in runners]
    finally:
        await asyncio.gather(*(r.stop() for r in runners))

    assert all(n > 0 for n in per_instance), per_instance  # both did real work
    research = await read_all(
        s.bootstrap_servers, s.research_topic, expect=per_instance[0] + per_instance[1]
    )
    by_subject: dict[str, list[str]] = defaultdict(list)
    for r in research:
        resource = json.loads(r.value)
        text = base64.b64decode(resource["content"][0]["attachment"]["data"]).decode()
        by_subject[resource["subject"]["reference"]].append(text)
    # one pseudonym per patient, whichever instance handled the report ...
    assert len(by_subject) == patients
    # ... and the same surrogate name in every one of that patient's reports
    for texts in by_subject.values():
        assert len({" ".join(t.split()[:2]) for t in texts}) == 1


async def test_starts_while_the_broker_is_still_down(tmp_path: Path) -> None:
    """No broker yet: the runner retries with backoff and is not ready; once the broker
    listens it connects, creates its topics and works."""
    from service.broker import find_tansu, free_port

    if find_tansu() is None:
        pytest.skip("no tansu binary")
    broker = EmbeddedBroker(port=free_port(), log_path=tmp_path / "tansu.log")
    s = settings_for(broker, request_timeout_ms=7000)
    runner = Runner(s, Metrics(), lambda: ToyProcessor())
    runner.start_background()
    try:
        await wait_for(
            lambda: runner.metrics.value("deidstream_retries_total", operation="connect") >= 2,
            within=30,
        )
        assert not runner.ready
        broker.start()
        await wait_for(lambda: runner.ready, within=60)
        await produce(s.bootstrap_servers, s.input_topics[0], [(b"k", toy("p1", "d1"))])
        await wait_for(lambda: runner.counts["published"] == 1)
    finally:
        await runner.stop()
        broker.stop()


async def test_broker_restart_the_service_reconnects(tmp_path: Path) -> None:
    """A real stop and start of the broker (Tansu's memory storage forgets everything): the
    running service reconnects by itself and processes what is sent after the restart."""
    from service.broker import find_tansu

    if find_tansu() is None:
        pytest.skip("no tansu binary")
    broker = EmbeddedBroker(log_path=tmp_path / "tansu.log").start()
    s = settings_for(broker, request_timeout_ms=7000)
    runner = await start_runner(s, ToyProcessor())
    try:
        await produce(
            s.bootstrap_servers, s.input_topics[0], [(b"k", toy(f"p{i}", "d")) for i in range(10)]
        )
        await wait_for(lambda: runner.counts["published"] == 10)
        broker.stop()
        await wait_for(lambda: not runner.ready, within=30)
        broker.start()
        await produce(
            s.bootstrap_servers, s.input_topics[0], [(b"k", toy(f"q{i}", "d")) for i in range(10)]
        )
        await wait_for(lambda: runner.counts["published"] == 20 and runner.ready, within=90)
        research = await read_all(s.bootstrap_servers, s.research_topic, expect=10)
    finally:
        await runner.stop()
        broker.stop()
    assert len(research) == 10  # the new broker holds the documents sent after its start
