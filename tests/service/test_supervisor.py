"""The supervisor of ``deidstream run --workers N`` without a broker: how many workers, the
settings a worker gets, restarts with backoff, readiness reasons, merged status, and the
metric files of a dead worker folded so no count is lost (real processes and real
prometheus-client files; the broker end is tests/integration/test_workers.py)."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from typer.testing import CliRunner

from service.settings import Settings
from service.supervisor import (
    Supervisor,
    Worker,
    cgroup_cpu_limit,
    fold_dead_process,
    merge_statuses,
    settings_from_payload,
    settings_payload,
    usable_cpus,
    worker_count,
    worker_cpus,
)

ROOT = Path(__file__).resolve().parents[2]


def test_cgroup_quota_in_whole_cpus(tmp_path: Path) -> None:
    assert cgroup_cpu_limit(tmp_path) is None  # no cgroup file: no quota
    for text, want in (
        ("max 100000\n", None),
        ("150000 100000\n", 2),
        ("50000 100000\n", 1),
        ("400000 100000\n", 4),
        ("junk\n", None),
    ):
        (tmp_path / "cpu.max").write_text(text)
        assert cgroup_cpu_limit(tmp_path) == want, text


def test_worker_count_defaults_to_the_usable_cpus() -> None:
    assert worker_count(Settings(workers=3)) == 3
    assert worker_count(Settings(cpu_affinity="0")) == 1
    assert worker_count(Settings()) == usable_cpus()
    assert 1 <= usable_cpus() <= len(os.sched_getaffinity(0))


def test_pinned_workers_take_the_affinity_cpus_in_turn() -> None:
    s = Settings(cpu_affinity="0,2", workers=3)
    assert [worker_cpus(s, i) for i in range(3)] == [(0,), (2,), (0,)]
    assert worker_cpus(Settings(workers=2), 1) == ()


def test_cli_refuses_zero_workers() -> None:
    from service.cli import _register_commands, app

    _register_commands()
    result = CliRunner().invoke(app, ["run", "--workers", "0"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_a_worker_gets_exactly_the_supervisors_settings() -> None:
    s = Settings(
        master_key="k1:" + "A" * 44,
        api_token="secret-token",
        workers=4,
        input_topics="a,b",
        cpu_affinity="0",
        policy_file=Path("/tmp/p.toml"),
        http_port=0,
    )
    got = settings_from_payload(settings_payload(s))
    assert got.workers == 1  # a worker never supervises
    assert got.master_key is not None and got.api_token is not None
    assert got.master_key.get_secret_value() == "k1:" + "A" * 44
    assert got.api_token.get_secret_value() == "secret-token"
    assert got.model_dump(exclude={"workers"}) == s.model_dump(exclude={"workers"})


# --------------------------------------------------------------------------- metric files

WRITER = textwrap.dedent("""
    import sys
    from service.metrics import Metrics
    m = Metrics()
    n = int(sys.argv[1])
    m.consumed.labels("t", "hl7v2").inc(n)
    m.end_to_end_seconds.observe(0.02)
    m.stage_seconds.labels("detect").observe(0.001)
    m.ready.set(1)
    m.lag.labels("t", "0").set(n)
    m.lag.remove("t", "0")  # handed to another worker: unknown (-1) from now on
    print(__import__("os").getpid())
""")


def _write_metrics(directory: Path, n: int) -> int:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    out = subprocess.run(
        [sys.executable, "-c", WRITER, str(n)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip())


def _samples(directory: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in registry.collect()
        for s in family.samples
    }


def test_a_dead_workers_counts_survive_and_its_gauges_go(tmp_path: Path) -> None:
    first, second = _write_metrics(tmp_path, 5), _write_metrics(tmp_path, 7)
    before = _samples(tmp_path)
    consumed = ("deidstream_messages_consumed_total", (("source", "hl7v2"), ("topic", "t")))
    latency = ("deidstream_end_to_end_latency_seconds_count", ())
    assert before[consumed] == 12 and before[latency] == 2
    lag = ("deidstream_consumer_lag_messages", (("partition", "0"), ("topic", "t")))
    assert before[lag] == -1  # nobody's: unknown, left out of the supervisor's /metrics

    fold_dead_process(tmp_path, first)
    after = _samples(tmp_path)
    assert after[consumed] == 12 and after[latency] == 2  # counts kept
    assert not list(tmp_path.glob(f"*_{first}.db")), "the dead pid's files are gone"
    fold_dead_process(tmp_path, second)
    final = _samples(tmp_path)
    assert final[consumed] == 12 and final[latency] == 2
    assert final[("deidstream_processing_stage_seconds_count", (("stage", "detect"),))] == 2
    assert ("deidstream_ready", ()) not in final  # live gauges of dead workers: gone
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "counter_archive.db",
        "histogram_archive.db",
    ]


# --------------------------------------------------------------------------- lifecycle


class ScriptedSupervisor(Supervisor):
    """The real supervisor with a stand-in worker program (no broker needed)."""

    def __init__(self, script: str, *args: Any) -> None:
        super().__init__(*args)
        self.script = script

    def _command(self, w: Worker) -> list[str]:
        return [sys.executable, "-c", self.script]


async def test_a_dead_worker_is_restarted_with_growing_backoff(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sup = ScriptedSupervisor("import sys; sys.exit(3)", Settings(), 1, tmp_path)
    caplog.set_level(logging.WARNING, "deidstream.supervisor")
    await sup.start()
    w = sup.workers[0]
    for _ in range(200):  # 0.5 s + 1.0 s of backoff, and two short-lived processes
        if w.restarts >= 2:
            break
        await asyncio.sleep(0.05)
    assert w.last_exit == "status 3"
    assert w.backoff == 2.0  # 0.5, then 1.0, now 2.0 planned
    assert sup.metrics.restarts.labels("0")._value.get() >= 2
    assert "worker 0 (pid" in caplog.text and "exited unasked (status 3)" in caplog.text
    ready = await sup.readiness()
    assert not ready["ready"]
    assert any(
        r.startswith("worker 0: not running (status 3; restart in") or r == "worker 0: starting"
        for r in ready["reasons"]
    )
    assert await sup.stop(grace=5) == 1  # the last worker did not exit 0


async def test_stop_sends_sigterm_and_reports_clean_exits(tmp_path: Path) -> None:
    script = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
        "time.sleep(60)\n"
    )
    sup = ScriptedSupervisor(script, Settings(), 2, tmp_path)
    await sup.start()
    await asyncio.sleep(0.5)
    assert all(w.running for w in sup.workers)
    assert await sup.stop(grace=10) == 0
    assert all(w.restarts == 0 and w.process and w.process.returncode == 0 for w in sup.workers)


async def test_readiness_names_each_worker_that_is_not_ready(tmp_path: Path) -> None:
    sup = Supervisor(Settings(), 2, tmp_path)  # never started
    got = await sup.readiness()
    assert got["ready"] is False
    assert got["reasons"] == ["worker 0: not running", "worker 1: not running"]


def test_status_merges_counts_and_lag_and_is_ready_only_when_all_are() -> None:
    workers = [Worker(0, Path("a")), Worker(1, Path("b"))]

    def status(ready: bool, consumed: int, lag: int | None) -> tuple[int, dict[str, Any]]:
        return 200, {
            "ready": ready,
            "counts": {"consumed": consumed},
            "assignments": [{"topic": "t", "partition": consumed, "lag": lag}],
            "worker_busy_seconds": 1.5,
            "keystore_fault": None,
        }

    merged = merge_statuses(workers, [status(True, 3, 2), status(True, 4, 5)], Settings())
    assert merged["ready"] is True
    assert merged["counts"] == {"consumed": 7}
    assert merged["total_lag"] == 7 and merged["worker_busy_seconds"] == 3.0
    assert [a["worker"] for a in merged["assignments"]] == [0, 1]
    assert (
        merge_statuses(workers, [status(True, 3, None), status(True, 4, 5)], Settings())[
            "total_lag"
        ]
        is None
    )
    down = merge_statuses(workers, [status(True, 3, 2), None], Settings())
    assert down["ready"] is False and down["counts"] == {"consumed": 3}


async def test_a_port_in_use_stops_before_any_worker_starts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import socket

    from service.commands.run import supervise

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        caplog.set_level(logging.INFO, "deidstream")
        assert await supervise(Settings(http_port=port), 2) == 3
    assert f"cannot listen on 127.0.0.1:{port}" in caplog.text
    assert "starting 2 workers" not in caplog.text
