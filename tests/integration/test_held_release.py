"""Issue 15 item 2 end to end (real Tansu, real PostgreSQL key store, the service as a
process): a document held by the leak guard, the policy fixed, the input released with
``deidstream held release`` — published exactly once; released again — still once."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from aiokafka import AIOKafkaProducer
from hl7_gen import report
from kafka_helpers import produce, read_all, unique
from service_process import ServiceProcess

from keystore.keyring import Keyring
from service.broker import EmbeddedBroker, free_port
from service.commands.held import Coordinates, read_held

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


STATUS_TOKEN = "status-token-for-tests"


@pytest.fixture
def pg_schema_url(pg_url: str) -> Iterator[str]:
    schema = f"deid_held_{uuid.uuid4().hex[:10]}"
    try:
        yield f"{pg_url}?schema={schema}"
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _env(broker: EmbeddedBroker, base: str, store_url: str, policy: Path | None) -> dict[str, str]:
    env = {
        **os.environ,
        "DEIDSTREAM_BOOTSTRAP_SERVERS": broker.bootstrap_servers,
        "DEIDSTREAM_API_TOKEN": STATUS_TOKEN,  # /v1/status is behind the API token
        "DEIDSTREAM_INPUT_TOPICS": f"{base}.hl7v2",
        "DEIDSTREAM_RESEARCH_TOPIC": f"{base}.research",
        "DEIDSTREAM_DEADLETTER_TOPIC": f"{base}.dlq",
        "DEIDSTREAM_HELD_TOPIC": f"{base}.held",
        "DEIDSTREAM_GROUP_ID": f"{base}.g",
        "DEIDSTREAM_KEYSTORE_URL": store_url,
        "DEIDSTREAM_SESSION_TIMEOUT_MS": "6000",
        "DEIDSTREAM_HEARTBEAT_INTERVAL_MS": "500",
        "DEIDSTREAM_LOG_LEVEL": "warning",
    }
    env.pop("DEIDSTREAM_POLICY_FILE", None)
    if policy is not None:
        env["DEIDSTREAM_POLICY_FILE"] = str(policy)
    return env


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_held_then_fixed_then_released_is_published_once(
    tansu: EmbeddedBroker, pg_schema_url: str, tmp_path: Path
) -> None:
    base = unique("held")
    key = Keyring.generate().to_text()
    blind = tmp_path / "blind.toml"  # a detector with no recognizers: the guard must hold
    blind.write_text("[recognizers]\n", encoding="utf-8")
    env_blind = {**_env(tansu, base, pg_schema_url, blind), "DEIDSTREAM_MASTER_KEY": key}
    env_fixed = {**_env(tansu, base, pg_schema_url, None), "DEIDSTREAM_MASTER_KEY": key}
    log = tmp_path / "service.log"

    svc = ServiceProcess(env_blind, log, port=free_port())
    try:
        await svc.status(lambda st: st["ready"], within=180)  # a loaded 2-CPU machine
        await produce(tansu.bootstrap_servers, f"{base}.hl7v2", [(b"700003", report(3))])
        await svc.status(lambda st: st["counts"].get("held", 0) == 1 and st["total_lag"] == 0)
        held = await read_held(tansu.bootstrap_servers, f"{base}.held")
        assert [e.reason_class for e in held] == ["leak_guard"]
        coords = held[0].coordinates
        assert coords == Coordinates(f"{base}.hl7v2", coords.partition, 0)
        # released while the cause stands: held again (the version was not consumed)
        assert _cli(env_blind, "held", "release", str(coords)).returncode == 0
        await svc.status(lambda st: st["counts"].get("held", 0) == 2 and st["total_lag"] == 0)
    finally:
        svc.stop()
    again = Coordinates(coords.topic, coords.partition, 1)
    # issue 28 item 4: each hold is a WARNING line (coordinates, pseudonym), nothing more
    logged = log.read_text(encoding="utf-8")
    holds = [line for line in logged.splitlines() if "document held [" in line]
    assert len(holds) == 2, logged
    assert f"document held [leak_guard] input {coords} patient Patient/" in holds[0]
    assert f"input {again} patient Patient/" in holds[1]
    assert holds[0].split("patient ")[1] == holds[1].split("patient ")[1]  # one patient
    assert "Maple" not in logged and "700003" not in logged

    listed = _cli(env_fixed, "held", "list")
    assert listed.returncode == 0, listed.stderr
    (first, first_fate), (second, second_fate) = (
        line.rsplit("\t", 1) for line in listed.stdout.splitlines()
    )
    assert first.split("\t")[:2] == [str(coords), "leak_guard"]
    assert first.endswith(f"(released, held again as {again})")
    assert second.endswith(f"(released from {coords})")
    # what became of each (issue 23.7): the first was superseded by the second, still held
    assert (first_fate, second_fate) == (f"superseded by {again}", "held")
    assert "Maple" not in listed.stdout + listed.stderr  # coordinates and reasons only

    # not a held input: refused, nothing sent
    refused = _cli(env_fixed, "held", "release", f"{base}.hl7v2:{coords.partition}:99")
    assert refused.returncode == 1 and "not on the held topic" in refused.stderr

    svc = ServiceProcess(env_fixed, log, port=free_port())  # the policy is fixed
    try:
        await svc.status(lambda st: st["ready"])
        released = _cli(env_fixed, "held", "release", str(coords))
        assert released.returncode == 0, released.stderr
        assert released.stdout.strip() == f"released {coords}"
        await svc.status(lambda st: st["counts"].get("published", 0) == 1 and st["total_lag"] == 0)
        # released again (or re-sent): the version is out now, so a duplicate
        assert _cli(env_fixed, "held", "release", str(coords)).returncode == 0
        await svc.status(lambda st: st["counts"].get("duplicate", 0) == 1 and st["total_lag"] == 0)
    finally:
        svc.stop()
    research = await read_all(tansu.bootstrap_servers, f"{base}.research", expect=1, settle=1.0)
    assert len(research) == 1 and research[0].value
    assert b"Maple" not in research[0].value
    assert len(await read_held(tansu.bootstrap_servers, f"{base}.held")) == 2


async def test_release_from_a_secure_held_topic_when_the_input_is_gone(
    tansu: EmbeddedBroker,
) -> None:
    """The input topic no longer has the record (retention): on a secure held topic the held
    record's own bytes are released; on a non-secure one it is refused, nothing sent."""
    from service.commands.held import HeldError, release

    base = unique("heldsec")
    body = report(5)
    gone = Coordinates(f"{base}.hl7v2", 0, 41)  # past the end of the input topic
    headers = [
        ("reason-class", b"leak_guard"),
        ("reason", b"known identifier left"),
        ("source-topic", gone.topic.encode()),
        ("source-partition", b"0"),
        ("source-offset", b"41"),
        ("first-seen", b"2026-01-01T00:00:00+00:00"),
    ]
    producer = AIOKafkaProducer(bootstrap_servers=tansu.bootstrap_servers, acks="all")
    await producer.start()
    try:
        await producer.send_and_wait(gone.topic, b"placeholder", partition=0)
        await producer.send_and_wait(f"{base}.held", body, key=b"rk", headers=headers)
    finally:
        await producer.stop()
    with pytest.raises(HeldError, match="no longer on its topic"):
        await release(tansu.bootstrap_servers, f"{base}.held", [gone])
    done = await release(tansu.bootstrap_servers, f"{base}.held", [gone], secure=True)
    assert done == [gone]
    records = await read_all(tansu.bootstrap_servers, gone.topic, expect=2)
    assert [r.value for r in sorted(records, key=lambda r: r.offset)] == [b"placeholder", body]
    assert dict(records[-1].headers or ())["released-from"] == str(gone).encode()
