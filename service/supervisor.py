"""``deidstream run --workers N``: N worker processes under one supervisor.

One Python process uses one core (the GIL). The supervisor starts N workers (``python -m
service.worker``), each a whole single-process service — a member of the consumer group with
its own producer, key store connection and processing thread — and serving its HTTP app on a
Unix socket in a private directory instead of a TCP port. The supervisor serves the one
public port:

* ``/metrics``: every worker's metrics merged by prometheus-client's multiprocess mode
  (``PROMETHEUS_MULTIPROC_DIR``, a private temporary directory made at start and removed at
  exit) plus the supervisor's own (``deidstream_workers*``);
* ``/readyz``: ready when every worker is running and ready; otherwise the reasons, per
  worker (``worker 1: no_partitions``, ``worker 0: not running (restart in 2.0 s)``);
* ``/healthz``: the supervisor answers;
* ``/v1/status``: the workers' statuses summed (counts, lag) and listed;
* ``POST /v1/deidentify``: handed to a ready worker (it checks the token itself).

A worker that exits without being asked is restarted with exponential backoff (0.5 s
doubling to 30 s; back to 0.5 s once a worker has run a minute), logged at WARNING and
counted in ``deidstream_worker_restarts_total``. Its metric files are folded into one
archive file per kind (counters and histograms keep their totals, so sums never go
backwards) and its live gauges removed. The group rebalances its partitions to the other
workers meanwhile; what it had fetched and not committed is read again by the new owner.

SIGTERM or SIGINT: every worker gets SIGTERM and drains (finishes its batches, commits,
leaves the group); the supervisor waits for them (``DRAIN_SECONDS``, then SIGKILL) and
exits 0 when all exited 0. Workers die with the supervisor (``PR_SET_PDEATHSIG``): a
``kill -9`` of the supervisor is a ``kill -9`` of the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import httpx
from prometheus_client import CollectorRegistry, Counter, Gauge
from pydantic import SecretStr

from service.cpus import cgroup_cpu_limit, usable_cpus
from service.runner.group import unassigned
from service.settings import Settings

log = logging.getLogger("deidstream.supervisor")

RESTART_INITIAL_SECONDS = 0.5
RESTART_MAX_SECONDS = 30.0
STABLE_SECONDS = 60.0  # a worker up this long resets its restart backoff
DRAIN_SECONDS = 45.0  # the runner drains within 30 s; then SIGKILL
PROBE_TIMEOUT_SECONDS = 2.0
GROUP_EVERY_SECONDS = 2.0  # the workers' group view is gathered this often
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


# --------------------------------------------------------------------------- sizing


def worker_count(settings: Settings) -> int:
    """``settings.workers``, else one per CPU of ``cpu_affinity``, else :func:`usable_cpus`."""
    if settings.workers is not None:
        return settings.workers
    if settings.cpu_affinity:
        return len(settings.cpu_affinity)
    return usable_cpus()


def worker_cpus(settings: Settings, index: int) -> tuple[int, ...]:
    """With ``cpu_affinity`` set, worker ``index`` is pinned to one of its CPUs (round robin),
    so each worker's two threads share a core; unset, the kernel places the workers."""
    cpus = settings.cpu_affinity
    return (cpus[index % len(cpus)],) if cpus else ()


# --------------------------------------------------------------------------- settings


def settings_payload(settings: Settings) -> bytes:
    """The settings as JSON for a worker's stdin (secrets included: a pipe, never argv or a
    file), so every worker runs with exactly the supervisor's settings."""
    values = settings.model_dump(mode="json")
    for name in Settings.model_fields:
        value = getattr(settings, name)
        if isinstance(value, SecretStr):
            values[name] = value.get_secret_value()
    values["workers"] = 1
    return json.dumps(values).encode()


def settings_from_payload(data: bytes) -> Settings:
    return Settings(**json.loads(data))


# --------------------------------------------------------------------------- metrics files


class _ArchiveFile(Protocol):
    """The part of prometheus_client's ``MmapedDict`` (a private module, bounded in
    pyproject.toml and checked by tests/test_third_party_internals.py) used here."""

    def read_value(self, key: str) -> tuple[float, float]: ...
    def write_value(self, key: str, value: float, timestamp: float) -> None: ...
    def close(self) -> None: ...


class _ArchiveFiles(Protocol):
    def __call__(self, filename: str) -> _ArchiveFile: ...
    def read_all_values_from_file(
        self, filename: str
    ) -> Iterable[tuple[str, float, float, int]]: ...


def fold_dead_process(directory: Path, pid: int) -> None:
    """A dead worker's metric files: counters and histograms added into ``*_archive.db`` (so
    the merged totals never go backwards and files do not pile up across restarts), its
    live gauges removed (``mark_process_dead``), any other file of that pid deleted."""
    from prometheus_client import multiprocess
    from prometheus_client.mmap_dict import MmapedDict

    files = cast(_ArchiveFiles, MmapedDict)
    mark_dead = cast(Callable[[int, str], None], multiprocess.mark_process_dead)
    for kind in ("counter", "histogram"):
        path = directory / f"{kind}_{pid}.db"
        if not path.exists():
            continue
        archive = files(str(directory / f"{kind}_archive.db"))
        try:
            for key, value, timestamp, _pos in files.read_all_values_from_file(str(path)):
                old, _ = archive.read_value(key)
                archive.write_value(key, old + value, timestamp)
        finally:
            archive.close()
        path.unlink()
    mark_dead(pid, str(directory))
    for path in directory.glob(f"*_{pid}.db"):
        path.unlink(missing_ok=True)


# --------------------------------------------------------------------------- workers


@dataclass
class Worker:
    """One worker slot: its current process (if any), its socket, its restart history."""

    index: int
    socket: Path
    process: asyncio.subprocess.Process | None = None
    started_at: float = 0.0
    restarts: int = 0
    backoff: float = RESTART_INITIAL_SECONDS
    restart_at: float | None = None  # monotonic time of the planned restart
    last_exit: str | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None


def describe_exit(status: int) -> str:
    """``status 1`` or ``signal SIGKILL`` (asyncio reports a signal as ``-signum``)."""
    if status < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-status).name}"
        return f"signal {-status}"
    return f"status {status}"


class SupervisorMetrics:
    """The supervisor's own instruments (its process is not in multiprocess mode)."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.restarts = Counter(
            "deidstream_worker_restarts_total",
            "Worker processes restarted after they exited unasked, by worker index.",
            ["worker"],
            registry=self.registry,
        )
        self.configured = Gauge(
            "deidstream_workers", "Worker processes configured.", registry=self.registry
        )
        self.configured.set(len(supervisor.workers))
        self.running = Gauge(
            "deidstream_workers_running", "Worker processes running now.", registry=self.registry
        )
        self.running.set_function(lambda: sum(w.running for w in supervisor.workers))
        for w in supervisor.workers:
            self.restarts.labels(str(w.index))
        self.unassigned = Gauge(
            "deidstream_partitions_unassigned",
            "Partitions of a subscribed topic that no live worker holds (a rebalance, a worker "
            "restarting, a member gone): their lag is unknown, and absent from "
            "deidstream_consumer_lag_messages. Absent when this instance is not the whole "
            "group (other replicas hold partitions: see deidstream_partitions_assigned).",
            ["topic"],
            registry=self.registry,
        )


@dataclass
class GroupView:
    """What the supervisor knows of the consumer group from its workers: every member id
    its workers have had, the subscribed topics' partition counts (kept when the workers
    die), and the partitions no live worker holds (None: unknown) since when."""

    own_members: set[str]
    partitions: dict[str, int]
    unassigned: list[str] | None = None
    since: float | None = None  # monotonic: when partitions were first seen unassigned

    def judge(self, bodies: Sequence[dict[str, Any] | None]) -> list[str] | None:
        """The partitions no live worker holds, given the workers' statuses (None: a worker
        not answering, whose partitions count as held by nobody)."""
        known = [b for b in bodies if b is not None]
        lists = [b["group_members"] for b in known if b.get("group_members") is not None]
        for b in known:
            if b.get("member_id"):
                self.own_members.add(str(b["member_id"]))
            self.partitions.update(b.get("topic_partitions") or {})
        members = sorted({m for ms in lists for m in ms}) if lists else None
        if not known and self.unassigned is not None:
            members = []  # the whole group a moment ago, and no worker alive: nobody holds any
        held = [(a["topic"], a["partition"]) for b in known for a in b.get("assignments", [])]
        return unassigned(self.partitions, held, members, self.own_members)

    def update(self, bodies: Sequence[dict[str, Any] | None], now: float) -> list[str] | None:
        self.unassigned = self.judge(bodies)
        if not self.unassigned:
            self.since = None
        elif self.since is None:
            self.since = now
        return self.unassigned


class Supervisor:
    """Starts, watches, restarts and stops the workers; answers for them over HTTP."""

    def __init__(self, settings: Settings, count: int, workdir: Path) -> None:
        self.settings = settings
        self.workdir = workdir
        self.metrics_dir = workdir / "metrics"
        self.metrics_dir.mkdir(mode=0o700, exist_ok=True)
        self.workers = [Worker(i, workdir / f"worker-{i}.sock") for i in range(count)]
        self.stopping = False
        self.metrics = SupervisorMetrics(self)
        self._payload = settings_payload(settings)
        self._watchers: list[asyncio.Task[None]] = []
        self._next = itertools.count()
        self.group = GroupView(set(), {})
        self._unassigned_logged = False

    # ---------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        for w in self.workers:
            await self._spawn(w)
            self._watchers.append(asyncio.create_task(self._watch(w), name=f"watch-{w.index}"))
        self._watchers.append(asyncio.create_task(self._watch_group(), name="watch-group"))

    async def _watch_group(self) -> None:
        """Every ``GROUP_EVERY_SECONDS``: the partitions no live worker holds, to the gauge,
        readiness and the log (one line when they stay past the bound, one when it ends)."""
        while not self.stopping:
            try:
                bodies = await asyncio.gather(*(self._worker_status(w) for w in self.workers))
                self.group_changed(bodies, time.monotonic())
            except Exception as exc:  # noqa: BLE001 - the watch must outlive any bug
                log.warning("group watch: %s", type(exc).__name__)
            await asyncio.sleep(GROUP_EVERY_SECONDS)

    async def _worker_status(self, w: Worker) -> dict[str, Any] | None:
        got = await self._get(w, "/worker/status")
        return got[1] if got is not None and got[0] == 200 else None

    def group_changed(self, bodies: Sequence[dict[str, Any] | None], now: float) -> None:
        found = self.group.update(bodies, now)
        gauge = self.metrics.unassigned
        for topic in self.group.partitions:
            if found is None:
                with contextlib.suppress(KeyError):
                    gauge.remove(topic)
            else:
                gauge.labels(topic).set(sum(p.rsplit("/", 1)[0] == topic for p in found))
        overdue = self.unassigned_overdue(now)
        if overdue and not self._unassigned_logged:
            log.warning(
                "%d partition(s) held by no worker for %.0f s: their lag is unknown (%s)",
                len(found or ()),
                overdue,
                ", ".join((found or [])[:8]),
            )
        elif not overdue and self._unassigned_logged and not found:
            log.warning("every partition is held by a worker again")
        self._unassigned_logged = bool(overdue) or (self._unassigned_logged and bool(found))

    def unassigned_overdue(self, now: float) -> float | None:
        """Seconds partitions have been held by no worker, once past the bound."""
        since = self.group.since
        if since is None or now - since <= self.settings.unassigned_seconds:
            return None
        return now - since

    def _command(self, w: Worker) -> list[str]:
        cpus = ",".join(map(str, worker_cpus(self.settings, w.index)))
        return [
            sys.executable,
            "-m",
            "service.worker",
            "--index",
            str(w.index),
            "--socket",
            str(w.socket),
            "--parent",
            str(os.getpid()),
            "--cpus",
            cpus,
        ]

    async def _spawn(self, w: Worker) -> None:
        env = {**os.environ, MULTIPROC_ENV: str(self.metrics_dir)}
        w.socket.unlink(missing_ok=True)
        proc = await asyncio.create_subprocess_exec(
            *self._command(w), stdin=asyncio.subprocess.PIPE, env=env
        )
        if proc.stdin is not None:
            proc.stdin.write(self._payload)
            with contextlib.suppress(OSError):
                await proc.stdin.drain()
            proc.stdin.close()
        w.process, w.started_at, w.restart_at = proc, time.monotonic(), None
        log.info("worker %d started (pid %d)", w.index, proc.pid)

    async def _watch(self, w: Worker) -> None:
        """Wait for the worker to exit; unless stopping, restart it after its backoff."""
        while (proc := w.process) is not None:
            status = await proc.wait()
            w.last_exit = describe_exit(status)
            fold_dead_process(self.metrics_dir, proc.pid)
            if self.stopping:
                log.info("worker %d (pid %d) exited: %s", w.index, proc.pid, w.last_exit)
                return
            if time.monotonic() - w.started_at >= STABLE_SECONDS:
                w.backoff = RESTART_INITIAL_SECONDS
            delay = w.backoff
            w.backoff = min(RESTART_MAX_SECONDS, w.backoff * 2)
            w.restart_at = time.monotonic() + delay
            w.restarts += 1
            self.metrics.restarts.labels(str(w.index)).inc()
            log.warning(
                "worker %d (pid %d) exited unasked (%s): restarting in %.1f s "
                "(restart %d); its partitions go to the other workers meanwhile",
                w.index,
                proc.pid,
                w.last_exit,
                delay,
                w.restarts,
            )
            await asyncio.sleep(delay)
            if self.stopping:
                return
            try:
                await self._spawn(w)
            except OSError as exc:  # e.g. out of memory or processes: tried again, backoff
                log.error("worker %d could not be started: %s", w.index, type(exc).__name__)

    async def stop(self, grace: float = DRAIN_SECONDS) -> int:
        """SIGTERM to every worker (each drains), wait, SIGKILL what is left. 0 when every
        worker exited 0."""
        self.stopping = True
        self._signal_running(signal.SIGTERM)
        running = [
            w.process.wait()
            for w in self.workers
            if w.process is not None and w.process.returncode is None
        ]
        if running:
            _done, pending = await asyncio.wait(
                [asyncio.ensure_future(c) for c in running], timeout=grace
            )
            if pending:
                log.error("%d worker(s) did not drain within %.0f s: killed", len(pending), grace)
                self._signal_running(signal.SIGKILL)
                await asyncio.gather(*pending, return_exceptions=True)
        for task in self._watchers:
            task.cancel()
        await asyncio.gather(*self._watchers, return_exceptions=True)
        codes = [w.process.returncode for w in self.workers if w.process is not None]
        return 0 if all(code == 0 for code in codes) else 1

    def _signal_running(self, signum: signal.Signals) -> None:
        """Send ``signum`` to every worker still running (one that just exited is skipped)."""
        for w in self.workers:
            if w.running and w.process is not None:
                with contextlib.suppress(ProcessLookupError):
                    w.process.send_signal(signum)

    # ---------------------------------------------------------------- talking to workers

    @contextlib.asynccontextmanager
    async def client(self, w: Worker) -> Any:
        transport = httpx.AsyncHTTPTransport(uds=str(w.socket))
        async with httpx.AsyncClient(
            transport=transport, base_url="http://worker", timeout=PROBE_TIMEOUT_SECONDS
        ) as http:
            yield http

    async def _get(
        self, w: Worker, path: str, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, Any]] | None:
        if not w.running:
            return None
        try:
            async with self.client(w) as http:
                got = await http.get(path, headers=headers or {})
            return got.status_code, got.json()
        except (httpx.HTTPError, ValueError, OSError):
            return None

    def _not_running(self, w: Worker) -> str:
        if w.restart_at is not None:
            wait = max(0.0, w.restart_at - time.monotonic())
            return f"worker {w.index}: not running ({w.last_exit}; restart in {wait:.1f} s)"
        return f"worker {w.index}: not running"

    async def readiness(self) -> dict[str, Any]:
        answers = await asyncio.gather(*(self._get(w, "/readyz") for w in self.workers))
        reasons: list[str] = ["stopping"] if self.stopping else []
        per_worker = []
        for w, got in zip(self.workers, answers, strict=True):
            if got is None:
                reasons.append(
                    self._not_running(w) if not w.running else f"worker {w.index}: starting"
                )
                per_worker.append({"worker": w.index, "pid": w.pid, "ready": False})
                continue
            _code, body = got
            reasons += [f"worker {w.index}: {r}" for r in body.get("reasons", [])]
            per_worker.append(
                {
                    "worker": w.index,
                    "pid": w.pid,
                    "ready": bool(body.get("ready")),
                    "assigned_partitions": body.get("assigned_partitions", 0),
                }
            )
        overdue = self.unassigned_overdue(time.monotonic())
        if overdue is not None:
            reasons.append(f"partitions_unassigned:{len(self.group.unassigned or ())}")
        ready = not reasons and all(p["ready"] for p in per_worker)
        return {
            "ready": ready,
            "workers": per_worker,
            "reasons": reasons,
            "unassigned_partitions": self.group.unassigned,
        }

    async def status(self, headers: dict[str, str]) -> dict[str, Any]:
        answers = await asyncio.gather(*(self._get(w, "/v1/status", headers) for w in self.workers))
        return merge_statuses(self.workers, answers, self.settings, self.group)

    def pick(self) -> Worker | None:
        """A running worker for a request, round robin."""
        alive = [w for w in self.workers if w.running]
        return alive[next(self._next) % len(alive)] if alive else None


def merge_statuses(
    workers: Sequence[Worker],
    answers: Sequence[tuple[int, dict[str, Any]] | None],
    settings: Settings,
    group: GroupView | None = None,
) -> dict[str, Any]:
    """Every worker's ``/v1/status`` as one: counts and busy time summed, assignments listed
    with their worker, ready only when every worker is. ``total_lag`` is None (unknown)
    while any partition of the subscribed topics is held by no live worker (judged from
    these very answers by ``group``), not the sum of the others' lag."""
    counts: dict[str, int] = {}
    assignments: list[dict[str, Any]] = []
    per_worker: list[dict[str, Any]] = []
    busy, all_ready = 0.0, True
    for w, got in zip(workers, answers, strict=True):
        body = got[1] if got is not None and got[0] == 200 else None
        entry: dict[str, Any] = {
            "worker": w.index,
            "pid": w.pid,
            "restarts": w.restarts,
            "running": w.running,
            "ready": bool(body and body["ready"]),
        }
        per_worker.append(entry)
        if body is None:
            all_ready = False
            continue
        all_ready &= bool(body["ready"])
        for k, v in body.get("counts", {}).items():
            counts[k] = counts.get(k, 0) + int(v)
        for part in body.get("assignments", []):
            assignments.append({**part, "worker": w.index})
        busy += float(body.get("worker_busy_seconds") or 0.0)
        entry["keystore_fault"] = body.get("keystore_fault")
    bodies = [got[1] if got is not None and got[0] == 200 else None for got in answers]
    nobodys = (group or GroupView(set(), {})).judge(bodies)
    return {
        "ready": all_ready,
        "group_id": settings.group_id,
        "input_topics": list(settings.input_topics),
        "assignments": assignments,
        "total_lag": _total_lag(assignments, nobodys),
        "unassigned_partitions": nobodys,
        "counts": dict(sorted(counts.items())),
        "worker_busy_seconds": round(busy, 6),
        "workers": per_worker,
    }


def _total_lag(assignments: Sequence[dict[str, Any]], nobodys: list[str] | None) -> int | None:
    """The held partitions' lag summed; None (unknown) while any of theirs is unknown or a
    partition is held by no live worker."""
    if not assignments or nobodys or any(p.get("lag") is None for p in assignments):
        return None
    return sum(int(p["lag"]) for p in assignments)


@contextlib.contextmanager
def private_workdir() -> Iterator[Path]:
    """A directory only this user can read (sockets, metric files), removed at exit."""
    path = Path(tempfile.mkdtemp(prefix="deidstream-supervisor-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


__all__ = [
    "GroupView",
    "Supervisor",
    "Worker",
    "cgroup_cpu_limit",
    "describe_exit",
    "fold_dead_process",
    "merge_statuses",
    "private_workdir",
    "settings_from_payload",
    "settings_payload",
    "usable_cpus",
    "worker_count",
    "worker_cpus",
]
