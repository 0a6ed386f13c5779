"""The integration engineer's first hour against real brokers (issue 15 items 3 and 4):
`deidstream broker` (memory and durable), `replay`/`tail` failing in one line, and the
producer's size limit equal to the service's input limit."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka_helpers import read_all, unique

from service.broker import EmbeddedBroker, find_tansu, free_port
from service.commands.replay import publish

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEIDSTREAM_")}
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
        check=False,
    )


def _one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # no traceback, no "Unclosed AIOKafkaProducer"
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_replay_and_tail_to_an_unreachable_broker_say_one_line(tmp_path: Path) -> None:
    note = tmp_path / "r.hl7"
    note.write_bytes(b"MSH|^~\\&|A|B|C|D|20240101||ORU^R01|1|P|2.5\rPID|1||X1\r")
    dead = f"127.0.0.1:{free_port()}"
    _one_line_error(
        _cli("replay", str(note), "--topic", "clinical.hl7v2", "--bootstrap-servers", dead),
        "cannot reach the Kafka broker",
        dead,
    )
    _one_line_error(
        _cli("tail", "t", "--bootstrap-servers", dead), "cannot reach the Kafka broker", dead
    )


def test_replay_over_the_input_limit_says_one_line(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * (4 * 1024 * 1024 + 1))
    dead = f"127.0.0.1:{free_port()}"  # refused before any connection is tried
    _one_line_error(
        _cli("replay", str(big), "--topic", "clinical.hl7v2", "--bootstrap-servers", dead),
        "over the 4194304-byte limit",
    )


async def test_a_2_mib_message_is_replayed(tansu: EmbeddedBroker) -> None:
    topic = unique("big")
    value = b"MSH|^~\\&|A|B|C|D|20240101||ORU^R01|1|P|2.5\r" + b"y" * (2 * 1024 * 1024)
    assert await publish(tansu.bootstrap_servers, topic, [(b"p1", value)]) == 1
    records = await read_all(tansu.bootstrap_servers, topic, expect=1)
    assert [len(r.value) for r in records] == [len(value)]


def _start_broker(*args: str) -> tuple[subprocess.Popen[str], str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEIDSTREAM_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "broker", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith("bootstrap servers: "), (
        first,
        proc.stderr.read() if proc.poll() is not None else "",
    )
    banner = first
    while "Ctrl-C" not in banner.splitlines()[-1]:
        banner += proc.stdout.readline()
    return proc, first.split(": ", 1)[1].strip(), banner


def _stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM) -> str:
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, proc.returncode
    assert "broker stopped" in out
    return out


@pytest.mark.skipif(find_tansu() is None, reason="no tansu binary")
def test_broker_in_memory_on_a_given_port_stops_on_ctrl_c() -> None:
    port = free_port()
    proc, bootstrap, banner = _start_broker("--port", str(port))
    try:
        assert bootstrap == f"127.0.0.1:{port}"
        topic = unique("mem")
        assert asyncio.run(publish(bootstrap, topic, [(b"k", b"v")])) == 1
        assert len(asyncio.run(read_all(bootstrap, topic, expect=1))) == 1
    finally:
        _stop(proc, signal.SIGINT)
    assert "storage: in memory" in banner
    assert f"export DEIDSTREAM_BOOTSTRAP_SERVERS=127.0.0.1:{port}" in banner
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # Tansu is gone with it
        try:
            import socket

            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            time.sleep(0.1)
        except OSError:
            break
    else:
        pytest.fail("the port still answers after the broker stopped")


@pytest.mark.skipif(find_tansu() is None, reason="no tansu binary")
def test_durable_broker_keeps_records_across_a_restart(tmp_path: Path) -> None:
    pytest.importorskip("moto")
    data = tmp_path / "broker-data"
    topic = unique("durable")
    proc, bootstrap, banner = _start_broker("--durable", str(data))
    try:
        records = [(f"p{i}".encode(), f"record {i}".encode()) for i in range(5)]
        assert asyncio.run(publish(bootstrap, topic, records)) == 5
    finally:
        _stop(proc)
    assert f"durable in {data}" in banner and "0 objects restored" in banner
    assert any((data / "s3").rglob("*.batch"))

    proc, bootstrap, banner = _start_broker("--durable", str(data), "--port", str(free_port()))
    assert "0 objects restored" not in banner
    try:
        again = asyncio.run(read_all(bootstrap, topic, expect=5, within=20))
        assert sorted(r.value for r in again) == [f"record {i}".encode() for i in range(5)]
    finally:
        _stop(proc)
