"""PostgreSQL faults injected mid-stream (issue 14, items 1 and 2): real Tansu broker, real
PostgreSQL, the real pipeline, the service running as a DML-only role of its own.

Each fault — a revoked privilege, revoked schema usage, revoked tables, a read-only role, a
missing table, a lock held past ``lock_timeout``, connections killed, a connection limit —
is held for a few seconds while documents arrive. The rule: a fault of the stream stops the
batch (not ready with the reason, one WARNING line, a metric), nothing is dead-lettered or
committed meanwhile, and once the fault clears every input is published: 0 dead letters,
0 lost. The measured matrix is printed (``pytest -s``)."""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from hl7_gen import report
from kafka_helpers import produce, read_all
from test_stream_pipeline import pipeline_settings

from keystore import Keyring, open_store
from keystore.postgres import service_grants
from service.broker import EmbeddedBroker
from service.metrics import Metrics
from service.runner import Runner
from service.wiring import real_processor_factory

pytestmark = pytest.mark.integration

ADMIN = "postgresql://postgres@127.0.0.1:5432/test"
PER_PHASE = 8  # documents before, during and after the fault


@dataclass
class Db:
    role: str
    schema: str
    url: str  # the service's: its own role, lock_timeout short
    key: str  # the master key text

    def sql(self, *statements: str) -> None:
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)

    def kill(self) -> int:
        """Terminate every session of the service role; how many."""
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (self.role,),
            ).fetchall()
        return len(rows)


@pytest.fixture
def db(pg_url: str) -> Iterator[Db]:
    """A schema owned by the admin (migrated as the owner) and a login role with the
    documented DML-only GRANTs; both dropped afterwards."""
    tag = uuid.uuid4().hex[:10]
    role, schema = f"deid_svc_{tag}", f"deid_flt_{tag}"
    key = Keyring.generate().to_text()
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        with open_store(f"{ADMIN}?schema={schema}", Keyring.parse(key), migrate=True) as store:
            store.admin.grant_service(role)
        url = (
            f"postgresql://{role}@127.0.0.1:5432/test?schema={schema}"
            "&options=-c%20lock_timeout%3D400"
        )
        yield Db(role, schema, url, key)
    finally:
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(f'ALTER ROLE "{role}" CONNECTION LIMIT -1')
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,)
            )
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            conn.execute(f'DROP OWNED BY "{role}"')
            conn.execute(f'DROP ROLE "{role}"')


class Locker:
    """An admin transaction holding ACCESS EXCLUSIVE on the records table (a thread)."""

    def __init__(self, db: Db) -> None:
        self._conn = psycopg.connect(ADMIN)
        self._conn.execute(f'LOCK TABLE "{db.schema}".patients IN ACCESS EXCLUSIVE MODE')

    def release(self) -> None:
        self._conn.rollback()
        self._conn.close()


class Killer:
    """Terminates the service role's sessions every 0.3 s until stopped."""

    def __init__(self, db: Db) -> None:
        self._stop = threading.Event()
        self.killed = db.kill()

        def loop() -> None:
            while not self._stop.wait(0.3):
                self.killed += db.kill()

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()

    def release(self) -> None:
        self._stop.set()
        self._thread.join()


def _grant_back(db: Db) -> None:
    db.sql(*service_grants(db.schema, db.role))


def _read_only(db: Db, on: bool) -> None:
    """New sessions of the role read-only (or not again); its current ones are ended."""
    change = (
        "SET default_transaction_read_only = on" if on else "RESET default_transaction_read_only"
    )
    db.sql(f'ALTER ROLE "{db.role}" {change}')
    db.kill()


# fault name → (start, stop, the reason class /readyz must show; None: not deterministic)
FAULTS: dict[str, tuple[Callable[[Db], Any], Callable[[Db, Any], None], str | None]] = {
    "revoke_insert": (
        lambda d: d.sql(f'REVOKE INSERT ON "{d.schema}".patients FROM "{d.role}"'),
        lambda d, _: d.sql(f'GRANT INSERT ON "{d.schema}".patients TO "{d.role}"'),
        "keystore_permission",
    ),
    "revoke_schema_usage": (  # a schema without USAGE is skipped in the search path:
        lambda d: d.sql(f'REVOKE USAGE ON SCHEMA "{d.schema}" FROM "{d.role}"'),
        lambda d, _: _grant_back(d),
        "keystore_schema",
    ),  # the tables are not found (42P01), not refused (42501)
    "revoke_tables": (
        lambda d: d.sql(f'REVOKE ALL ON ALL TABLES IN SCHEMA "{d.schema}" FROM "{d.role}"'),
        lambda d, _: _grant_back(d),
        "keystore_permission",
    ),
    "read_only_role": (
        lambda d: _read_only(d, True),
        lambda d, _: _read_only(d, False),
        "keystore_read_only",
    ),
    "missing_table": (
        lambda d: d.sql(f'ALTER TABLE "{d.schema}".marks RENAME TO marks_gone'),
        lambda d, _: d.sql(f'ALTER TABLE "{d.schema}".marks_gone RENAME TO marks'),
        "keystore_schema",
    ),
    "lock_timeout": (Locker, lambda d, locker: locker.release(), "keystore_contention"),
    "connection_limit": (
        lambda d: (d.sql(f'ALTER ROLE "{d.role}" CONNECTION LIMIT 0'), d.kill()),
        lambda d, _: d.sql(f'ALTER ROLE "{d.role}" CONNECTION LIMIT -1'),
        None,
    ),  # the reconnect fails (resources) or a statement on a dead one (connection)
    "connections_killed": (Killer, lambda d, killer: killer.release(), None),
}


async def _committed(bootstrap: str, group: str, topics: tuple[str, ...]) -> int:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        total = 0
        for topic in topics:
            for p in consumer.partitions_for_topic(topic) or ():
                total += await consumer.committed(TopicPartition(topic, p)) or 0
        return total
    finally:
        await consumer.stop()


async def _until(pred: Callable[[], bool], what: str, within: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while not pred():
        assert loop.time() < end, f"not reached in {within} s: {what}"
        await asyncio.sleep(0.05)


def _faults(metrics: Metrics) -> float:
    return sum(
        s.value
        for m in metrics.registry.collect()
        if m.name == "deidstream_stream_faults"
        for s in m.samples
        if s.name.endswith("_total")
    )


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_postgres_fault_mid_stream_dead_letters_nothing_and_loses_nothing(
    tansu: EmbeddedBroker, tmp_path: Path, db: Db, fault: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="deidstream.runner")
    start, stop, reason = FAULTS[fault]
    s = pipeline_settings(
        tansu, tmp_path, keystore_url=db.url, master_key=db.key, keystore_migrate=False
    )
    topic = s.input_topics[0]
    docs = [(f"{700000 + n}".encode(), report(n, 1)) for n in range(3 * PER_PHASE)]
    metrics = Metrics()
    runner = Runner(s, metrics, real_processor_factory(s, metrics))
    runner.start_background()
    out = lambda: runner.counts["published"] + runner.counts["held"]  # noqa: E731
    seen_reason: str | None = None
    try:
        await _until(lambda: runner.ready, "ready")
        await produce(s.bootstrap_servers, topic, docs[:PER_PHASE])
        await _until(lambda: out() == PER_PHASE, "first phase published")
        await asyncio.sleep(0.5)  # its confirmation and commit

        handle = await asyncio.to_thread(start, db)
        try:
            await produce(s.bootstrap_servers, topic, docs[PER_PHASE : 2 * PER_PHASE])
            if reason is not None:
                await _until(
                    lambda: (
                        metrics.value("deidstream_stream_faults_total", reason_class=reason) >= 1
                    ),
                    "fault noticed",
                )
                seen_reason = runner.status()["keystore_fault"]
                assert not runner.ready and seen_reason == reason
                assert metrics.value("deidstream_keystore_fault", reason_class=reason) == 1
            await asyncio.sleep(3.0)  # the fault lasts: nothing may be dead-lettered
            assert runner.counts["deadlettered"] == 0
        finally:
            await asyncio.to_thread(stop, db, handle)

        await _until(lambda: out() == 2 * PER_PHASE, f"published after {fault} cleared")
        await produce(s.bootstrap_servers, topic, docs[2 * PER_PHASE :])
        await _until(lambda: out() == 3 * PER_PHASE and runner.in_flight == 0, "all published")
        await _until(lambda: runner.ready, "ready again")
    finally:
        await runner.stop()

    research = await read_all(s.bootstrap_servers, s.research_topic, expect=len(docs))
    held = await read_all(s.bootstrap_servers, s.held_topic, within=2)
    dead = await read_all(s.bootstrap_servers, s.deadletter_topic, within=2)
    committed = await _committed(s.bootstrap_servers, s.group_id, s.input_topics)
    keys = {r.key for r in research}
    lost = len(docs) - len(keys) - len(held)
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.getMessage().startswith("stream fault (")
    ]
    print(
        f"\nFAULT {fault}: reason={seen_reason} inputs={len(docs)} outputs={len(research)}"
        f" (distinct {len(keys)}) held={len(held)} dead_letters={len(dead)} lost={lost}"
        f" committed={committed} faults={_faults(metrics):.0f}"
        f" retries={metrics.value('deidstream_retries_total', operation='process'):.0f}"
        f"+{metrics.value('deidstream_retries_total', operation='confirm'):.0f}"
    )
    assert dead == [] and lost == 0 and committed == len(docs)
    assert len(research) == len(keys)  # each published once
    if reason is not None:
        assert any(f"stream fault ({reason}" in w for w in warnings), warnings
