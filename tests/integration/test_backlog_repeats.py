"""Issue 23 item 8 end to end: with a backlog (the inputs are on the topic before the service
starts, so they arrive in full, overlapping batches), a re-send of a published report is
dropped as a duplicate — never published a second time — and every re-send of a held report
is decided again (held again), never dropped as a duplicate: as when the inputs arrive live.
Real Tansu broker, the service as a process (one and two workers), SQLite and PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from hl7_gen import report
from kafka_helpers import headers_of, produce, read_all, unique
from service_process import ServiceProcess

from keystore.keyring import Keyring
from service.broker import EmbeddedBroker, free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]
STATUS_TOKEN = "backlog-repeats-status"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'keystore.sqlite3'}"
        return
    pg_url = request.getfixturevalue("pg_url")
    schema = f"deid_backlog_{uuid.uuid4().hex[:10]}"
    try:
        yield f"{pg_url}?schema={schema}"
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _env(
    broker: EmbeddedBroker, base: str, store_url: str, workers: int, policy: Path | None = None
) -> dict[str, str]:
    env = {
        **os.environ,
        "DEIDSTREAM_BOOTSTRAP_SERVERS": broker.bootstrap_servers,
        "DEIDSTREAM_INPUT_TOPICS": f"{base}.hl7v2",
        "DEIDSTREAM_RESEARCH_TOPIC": f"{base}.research",
        "DEIDSTREAM_DEADLETTER_TOPIC": f"{base}.dlq",
        "DEIDSTREAM_HELD_TOPIC": f"{base}.held",
        "DEIDSTREAM_GROUP_ID": f"{base}.g",
        "DEIDSTREAM_KEYSTORE_URL": store_url,
        "DEIDSTREAM_MASTER_KEY": Keyring.generate().to_text(),
        "DEIDSTREAM_WORKERS": str(workers),
        "DEIDSTREAM_MAX_BATCH_RECORDS": "8",  # many batch cuts, several batches in flight
        "DEIDSTREAM_SESSION_TIMEOUT_MS": "6000",
        "DEIDSTREAM_HEARTBEAT_INTERVAL_MS": "500",
        "DEIDSTREAM_LOG_LEVEL": "warning",
        "DEIDSTREAM_API_TOKEN": STATUS_TOKEN,
    }
    env.pop("DEIDSTREAM_POLICY_FILE", None)
    if policy is not None:
        env["DEIDSTREAM_POLICY_FILE"] = str(policy)
    return env


def _resend(message: bytes, copy: int) -> bytes:
    """The interface engine's re-send: the same report under a new message control id."""
    head, rest = message.split(b"|P|2.5", 1)
    fields = head.split(b"|")
    fields[-1] = b"%s-resend%d" % (fields[-1], copy)
    return b"|".join(fields) + b"|P|2.5" + rest


async def _run_backlog(
    broker: EmbeddedBroker, env: dict[str, str], messages: list[tuple[bytes, bytes]], log: Path
) -> dict[str, int]:
    base_topic = env["DEIDSTREAM_INPUT_TOPICS"]
    await produce(broker.bootstrap_servers, base_topic, messages)  # the backlog, first
    service = ServiceProcess(env, log, port=free_port())
    try:
        done = await service.status(
            lambda st: (
                st["ready"]
                and st["total_lag"] == 0
                and st["counts"].get("consumed", 0) >= len(messages)
            ),
            within=240,
        )
        assert service.stop() == 0
    finally:
        service.kill()
    counts: dict[str, int] = done["counts"]
    return counts


@pytest.mark.parametrize("workers", [1, 2])
async def test_a_backlog_of_resends_is_published_once(
    tansu: EmbeddedBroker, tmp_path: Path, store_url: str, workers: int
) -> None:
    base = unique("backlog")
    env = _env(tansu, base, store_url, workers)
    reports = [(b"%d" % (700000 + n), report(n)) for n in range(30)]
    messages: list[tuple[bytes, bytes]] = []
    for i, (key, body) in enumerate(reports):  # each re-send 0-5 messages after its original
        messages.append((key, body))
        if i >= 5:
            earlier_key, earlier = reports[i - i % 6]
            messages.append((earlier_key, _resend(earlier, i)))
    resends = len(messages) - len(reports)
    counts = await _run_backlog(tansu, env, messages, tmp_path / "svc.log")

    research = await read_all(
        tansu.bootstrap_servers, f"{base}.research", expect=len(reports), settle=1.0
    )
    held = await read_all(tansu.bootstrap_servers, f"{base}.held")
    versions = Counter((r.key, headers_of(r)["version"]) for r in research)
    twice = sorted(n for n in versions.values() if n > 1)
    assert not twice, f"{len(twice)} versions published more than once"
    assert len(versions) + len(held) == len(reports)
    assert counts.get("duplicate", 0) == resends


async def test_every_resend_of_a_held_report_in_a_backlog_is_decided_again(
    tansu: EmbeddedBroker, tmp_path: Path
) -> None:
    base = unique("backheld")
    blind = tmp_path / "blind.toml"  # a detector with no recognizers: the guard must hold
    blind.write_text("[recognizers]\n", encoding="utf-8")
    store_url = f"sqlite:///{tmp_path / 'keystore.sqlite3'}"
    env = _env(tansu, base, store_url, 1, blind)
    original = report(11)
    copies = 20
    messages = [(b"700011", original)] + [(b"700011", _resend(original, n)) for n in range(copies)]
    counts = await _run_backlog(tansu, env, messages, tmp_path / "svc.log")

    held = await read_all(tansu.bootstrap_servers, f"{base}.held", expect=1 + copies, settle=1.0)
    assert counts.get("duplicate", 0) == 0, "a held report's re-send dropped as a duplicate"
    assert counts.get("held", 0) == 1 + copies
    assert len(held) == 1 + copies
    assert not await read_all(tansu.bootstrap_servers, f"{base}.research", within=3)
