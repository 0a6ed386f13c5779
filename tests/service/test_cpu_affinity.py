"""DEIDSTREAM_CPU_AFFINITY: the cpuset list format, validation, and that every thread of the
process (and the threads it starts later) ends up on the CPUs given."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from service.affinity import parse_cpu_list, pin_process
from service.settings import Settings, load_settings

needs_affinity = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform"
)


def _format(cpus: set[int]) -> str:
    """The cpuset list format with ranges, as ``taskset -c`` would print it."""
    out, run = [], []
    for cpu in sorted(cpus):
        if run and cpu != run[-1] + 1:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
            run = []
        run.append(cpu)
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


@given(st.sets(st.integers(min_value=0, max_value=255), max_size=20))
def test_cpu_list_round_trip(cpus: set[int]) -> None:
    assert parse_cpu_list(_format(cpus)) == tuple(sorted(cpus))
    assert parse_cpu_list(" , ".join(map(str, sorted(cpus, reverse=True)))) == tuple(sorted(cpus))


@pytest.mark.parametrize("bad", ["a", "1-", "-1", "3-1", "1.5", "0;1", "1--2"])
def test_bad_cpu_lists_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="CPU"):
        parse_cpu_list(bad)


def test_setting_from_environment_and_file(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    assert Settings().cpu_affinity == ()
    monkeypatch.setenv("DEIDSTREAM_CPU_AFFINITY", "2-3,0")
    assert load_settings().cpu_affinity == (0, 2, 3)
    monkeypatch.setenv("DEIDSTREAM_CPU_AFFINITY", "[1, 1]")
    assert load_settings().cpu_affinity == (1,)
    monkeypatch.delenv("DEIDSTREAM_CPU_AFFINITY")
    conf = tmp_path / "d.toml"
    conf.write_text("cpu_affinity = [5, 4]\n", encoding="utf-8")
    assert load_settings(conf).cpu_affinity == (4, 5)
    with pytest.raises(ValidationError):
        Settings(cpu_affinity=(-1,))
    with pytest.raises(ValidationError):
        Settings(cpu_affinity="0-x")


@needs_affinity
def test_pin_process_moves_every_thread_and_later_ones() -> None:
    """Run in a child process: the test runner's own affinity is left alone."""
    code = """
import os, threading
from service.affinity import pin_process
allowed = sorted(os.sched_getaffinity(0))
target = {allowed[-1]}
ready, done = threading.Event(), threading.Event()
seen = {}
def early():
    seen["early_id"] = threading.get_native_id()
    ready.set()
    done.wait()
t = threading.Thread(target=early); t.start(); ready.wait()
assert os.sched_getaffinity(seen["early_id"]) == set(allowed)
assert pin_process(target) == target
assert os.sched_getaffinity(0) == target
assert os.sched_getaffinity(seen["early_id"]) == target  # started before the call
late = {}
t2 = threading.Thread(target=lambda: late.update(mask=os.sched_getaffinity(0)))
t2.start(); t2.join(); done.set(); t.join()
assert late["mask"] == target  # started after: inherits
print("ok", sorted(target))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")


@needs_affinity
def test_cpus_outside_the_allowed_set_are_a_clear_error() -> None:
    beyond = max(os.sched_getaffinity(0)) + 1
    before = os.sched_getaffinity(0)
    with pytest.raises(ValueError, match=rf"\[{beyond}\] outside"):
        pin_process({beyond})
    with pytest.raises(ValueError, match="no CPUs"):
        pin_process(set())
    assert os.sched_getaffinity(0) == before  # nothing changed


@needs_affinity
def test_run_refuses_a_cpu_it_may_not_use() -> None:
    beyond = max(os.sched_getaffinity(0)) + 1
    env = {
        **os.environ,
        "DEIDSTREAM_CPU_AFFINITY": str(beyond),
        "DEIDSTREAM_BOOTSTRAP_SERVERS": "127.0.0.1:1",
    }
    out = subprocess.run(
        [sys.executable, "-m", "service.cli", "run"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert out.returncode == 2
    assert "cpu_affinity" in out.stderr and "outside" in out.stderr
