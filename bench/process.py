"""Processor benchmark: ``Processor.process`` + ``commit`` rate on one core, no broker.

    .venv/bin/python bench/process.py [--count 2000] [--batch 64] [--corpus DIR] [--many]

Inputs: PhysioNet dev notes wrapped as HL7 v2 ORU^R01 and FHIR DocumentReference (the same
builders as bench/stream.py, half each, every document its own (patient, visit, type)), or,
without the corpus, our version fixtures with the visit number varied. For each store —
the in-memory one and the encrypted SQLite store (temporary file, generated key) — it runs
three passes: first sight (publish / held), a replay of the same inputs after ``commit``
(must all be duplicate: nothing published), and the mean time per stage from
``Outcome.stage_seconds``. ``commit`` runs once per ``--batch`` inputs, as the service does.
Per pass it prints the CPU time per input (``time.process_time``: what one core pays) and,
for first sight, the mean µs per stage and the part of the CPU no stage accounts for.
``--store memory|sqlite|postgres|both`` picks the stores (postgres: a throw-away schema in
``--pg``), ``--profile FILE`` writes a cProfile of the SQLite (or PostgreSQL) first-sight
pass. ``--many``: one ``Processor.process_many`` call per ``--batch`` inputs (as the service
calls it per Kafka batch) instead of ``process`` per input; ``stage_seconds`` then share the
batch's mark read and compare-and-set out over its documents (in ``dedup``). ``--clock cpu``
(default) times the stages with ``time.process_time`` and "outside the stages" is the CPU
no stage accounts for (stable on a loaded machine); ``--clock wall``: ``perf_counter`` and
wall time, as before.

After the first-sight stages it prints the CPU the garbage collector took (it lands in
whichever stage allocates) and the stage timer calls' own cost (``process_time`` is a
system call here: ~0.5-1 µs a call; the service times with ``perf_counter``, ~50 ns).
``--gc-freeze``: ``gc.freeze()`` after the warm-up, as the service does (without it, full
collections walk the lexicons too). ``--policy FILE``: another policy file.

``--dump FILE``: instead of timing, write one JSON line per input — outcome kinds, research
keys, SHA-256 of the values, headers, reasons, or the error class — for the inputs followed
by the version fixtures (twice, in one batch), a replay, and every ingest fixture and public
sample (``MORE_INPUTS``, twice), through a fresh SQLite store with
a fixed pseudonym key and deterministic patient identities; prints the file's SHA-256. Run
it on two checkouts (``git archive``) to prove a change leaves the published outputs equal.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib.util
import json
import statistics
import sys
import tempfile
import time
import timeit
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# bench/keystore.py would shadow the keystore package: take bench/ off the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

import surrogates  # noqa: E402
from keystore import Keyring, open_store  # noqa: E402
from keystore.api import PatientState  # noqa: E402
from keystore.memory import InMemoryStore  # noqa: E402
from pipelines.corpus import Note, load_patient_names, read_notes  # noqa: E402
from pipelines.outcome import Outcome  # noqa: E402
from pipelines.policy import Policy  # noqa: E402
from pipelines.process import Processor  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "physionet" / "dev"
FIXTURES = ROOT / "tests" / "fixtures" / "versions"
# --dump also feeds these, once each: every ingest fixture and the public samples
MORE_INPUTS = (
    ROOT / "tests" / "fixtures" / "hl7v2",
    ROOT / "tests" / "fixtures" / "fhir",
    ROOT.parent / "shared" / "data" / "samples" / "hl7v2",
    ROOT.parent / "shared" / "data" / "samples" / "fhir",
)
POLICY: Path | None = None  # --policy (None: the packaged default)
GC_FREEZE = False  # --gc-freeze
NOW = datetime(2026, 1, 1, tzinfo=UTC)
WARMUP = 100
CLOCK: Callable[[], float] = time.process_time  # stage timer (--clock)


def corpus_inputs(
    corpus: Path, count: int, cycle: int | None = None
) -> list[tuple[bytes, str]] | None:
    """``count`` inputs as ``bench/stream.py`` sends them, cycling through the dev notes (the
    first ``cycle`` of them when given: a second round repeats their texts, each document with
    its own visit)."""
    text = corpus / "id.text"
    if not text.is_file():
        return None
    # bench/stream.py: the same message builders as the stream benchmark
    spec = importlib.util.spec_from_file_location("bench_stream", ROOT / "bench" / "stream.py")
    assert spec is not None and spec.loader is not None
    stream = importlib.util.module_from_spec(spec)
    sys.modules["bench_stream"] = stream
    spec.loader.exec_module(stream)

    notes = [n for n in read_notes(text, "physionet") if isinstance(n, Note) and n.text.strip()]
    notes = notes[:cycle] if cycle else notes
    names_path = corpus / "pid_patientname.txt"
    names = load_patient_names(names_path) if names_path.is_file() else {}
    messages = stream.build_messages(notes, names, 0, count)
    return [(m.value, "fhir" if m.topic == stream.FHIR_TOPIC else "hl7v2") for m in messages]


def fixture_inputs(count: int) -> list[tuple[bytes, str]]:
    template = next(FIXTURES.glob("03_*.hl7")).read_bytes()
    return [(template.replace(b"VIS7788", f"VIS{i:07d}".encode()), "hl7v2") for i in range(count)]


def _one_by_one(proc: Processor, chunk: Sequence[tuple[bytes, str]]) -> list[Any]:
    results: list[Any] = []
    for raw, hint in chunk:
        try:
            results.append(proc.process(raw, content_hint=hint, now=NOW))
        except Exception as exc:  # noqa: BLE001 - counted, like the service's dead-letter path
            results.append(exc)
    return results


def _results(proc: Processor, chunk: Sequence[tuple[bytes, str]], many: bool) -> list[Any]:
    """One chunk's results: one ``process_many`` call, or ``process`` per input."""
    if many:
        return list(proc.process_many([(raw, hint, NOW) for raw, hint in chunk]))
    return _one_by_one(proc, chunk)


def run_pass(
    proc: Processor, inputs: Sequence[tuple[bytes, str]], batch: int, many: bool = False
) -> tuple[float, float, Counter[str], dict[str, list[float]]]:
    kinds: Counter[str] = Counter()
    stages: dict[str, list[float]] = defaultdict(list)
    committing = 0.0
    cpu_started = time.process_time()
    started = time.perf_counter()
    for start in range(0, len(inputs), batch):
        results = _results(proc, inputs[start : start + batch], many)
        pending: list[Outcome] = []
        for outs in results:
            if isinstance(outs, BaseException):
                kinds[f"error:{getattr(outs, 'reason_class', type(outs).__name__)}"] += 1
                continue
            for out in outs:
                kinds[out.kind.value] += 1
                for stage, seconds in out.stage_seconds.items():
                    stages[stage].append(seconds)
            pending.extend(outs)
        t0 = CLOCK()
        proc.commit(pending)
        committing += CLOCK() - t0
    stages["commit (per input)"].append(committing / max(1, len(inputs)))
    return time.perf_counter() - started, time.process_time() - cpu_started, kinds, stages


class _GcClock:
    """CPU time spent in the garbage collector while the block runs (gc.callbacks)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = 0
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.seconds += time.process_time() - self._started
            self.collections += 1

    def __enter__(self) -> _GcClock:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


def _clock_cost() -> float:
    """Seconds per call of the stage timer (CLOCK)."""
    return timeit.timeit(CLOCK, number=20_000) / 20_000


def _clock_calls_per_input(
    proc: Processor, inputs: Sequence[tuple[bytes, str]], batch: int, many: bool
) -> float:
    """Stage timer calls per input, counted on a few inputs through a fresh processor."""
    calls = [0]

    def counting() -> float:
        calls[0] += 1
        return CLOCK()

    counted = Processor(policy=proc.policy, store=InMemoryStore(), timer=counting)
    run_pass(counted, inputs, batch, many)
    return calls[0] / max(1, len(inputs))


def bench_store(
    name: str,
    make_store: Callable[[], Any],
    inputs: Sequence[tuple[bytes, str]],
    batch: int,
    profile: Path | None = None,
    many: bool = False,
) -> None:
    # warm-up (lexicons, compiled patterns, first-use caches) on a throwaway store
    surrogates.warm()  # as the service does at start-up (area codes, zip codes, census)
    warm = Processor(policy=Policy.load(POLICY), store=InMemoryStore(), timer=CLOCK)
    run_pass(warm, inputs[:WARMUP], batch, many)
    if GC_FREEZE:  # as service/wiring.py does after its warm-up
        gc.collect()
        gc.freeze()
    store = make_store()
    proc = Processor(policy=Policy.load(POLICY), store=store, timer=CLOCK)
    for label in ("first sight", "replay"):
        profiler = None
        if profile is not None and label == "first sight":
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        with _GcClock() as gc_clock:
            seconds, cpu, kinds, stages = run_pass(proc, inputs, batch, many)
        if profiler is not None and profile is not None:
            profiler.disable()
            profiler.dump_stats(str(profile))
        rate = len(inputs) / seconds
        cpu_us = cpu / len(inputs) * 1e6
        print(
            f"  {name:<8} {label:<12} {len(inputs):>6} inputs  {seconds:7.2f} s  "
            f"{rate:8.0f} inputs/s  CPU {cpu_us:6.0f} µs/input   {dict(kinds)}"
        )
        if label == "first sight":
            # mean per document where a stage ran; commit is spread over all inputs
            means = {s: statistics.fmean(v) * 1e6 for s, v in sorted(stages.items())}
            accounted = sum(sum(v) for v in stages.values()) * 1e6 / len(inputs)
            accounted -= means.get("commit (per input)", 0.0) * (len(inputs) - 1) / len(inputs)
            total_us = (cpu if CLOCK is time.process_time else seconds) / len(inputs) * 1e6
            print(
                "           mean µs/doc by stage: "
                + ", ".join(f"{s}={us:.0f}" for s, us in means.items())
                + f"; outside the stages {total_us - accounted:.0f}"
            )
            # where the rest goes: garbage collection lands in whatever stage allocates,
            # and every stage timer call costs CPU (the service's perf_counter is ~10x cheaper)
            calls = _clock_calls_per_input(proc, inputs[:WARMUP], batch, many)
            print(
                f"           garbage collection {gc_clock.seconds / len(inputs) * 1e6:.0f} "
                f"µs/input ({gc_clock.collections} collections, all stages); stage timer "
                f"{calls:.0f} calls/input ≈ {calls * _clock_cost() * 1e6:.0f} µs/input"
            )
    close = getattr(store, "close", None)
    if close is not None:
        close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=64, help="inputs per commit() call")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--store", choices=("memory", "sqlite", "postgres", "both"), default="both")
    ap.add_argument(
        "--pg",
        default="postgresql://postgres@127.0.0.1:5432/test",
        help="PostgreSQL for --store postgres (a throw-away schema is used)",
    )
    ap.add_argument("--profile", type=Path, help="cProfile of the SQLite first-sight pass")
    ap.add_argument(
        "--many",
        action="store_true",
        help="process_many per --batch inputs instead of process per input",
    )
    ap.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="stage timer: CPU time (default) or wall time",
    )
    ap.add_argument("--dump", type=Path, help="write the published outputs (no timing)")
    ap.add_argument("--policy", type=Path, help="policy file (default: the packaged one)")
    ap.add_argument(
        "--gc-freeze",
        action="store_true",
        help="gc.freeze() after the warm-up, as the service does",
    )
    args = ap.parse_args()
    global CLOCK, POLICY, GC_FREEZE
    POLICY = args.policy
    GC_FREEZE = args.gc_freeze
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    inputs = corpus_inputs(args.corpus, args.count)
    source = "PhysioNet dev notes as ORU^R01 + DocumentReference"
    if inputs is None:
        inputs, source = fixture_inputs(args.count), "fixture 03_final.hl7, visit varied"
    sizes = [len(raw) for raw, _ in inputs]
    if args.dump is not None:
        surrogates.warm()
        digest = dump_outputs(args.dump, inputs, args.batch, args.many)
        print(
            f"bench/process.py --dump: {len(inputs)} inputs + version fixtures -> "
            f"{args.dump} sha256 {digest}"
        )
        return 0
    call = "process_many per batch" if args.many else "process per input"
    print(
        f"bench/process.py: {len(inputs)} inputs ({source}), "
        f"mean {statistics.fmean(sizes):.0f} bytes, commit every {args.batch}, {call}, "
        f"{args.clock} clock"
    )
    if args.store in ("memory", "both"):
        bench_store("memory", InMemoryStore, inputs, args.batch, many=args.many)
    if args.store in ("sqlite", "both"):
        with tempfile.TemporaryDirectory(prefix="deidstream-bench-") as tmp:
            url = f"sqlite:///{Path(tmp) / 'bench.sqlite3'}"
            keyring = Keyring.generate()
            bench_store(
                "sqlite",
                lambda: open_store(url, keyring),
                inputs,
                args.batch,
                args.profile,
                args.many,
            )
    if args.store == "postgres":
        bench_postgres(args.pg, inputs, args.batch, args.profile, args.many)
    return 0


def dump_outputs(path: Path, inputs: Sequence[tuple[bytes, str]], batch: int, many: bool) -> str:
    """Published outputs of a fixed stream (see the module docstring); returns the digest."""
    from keystore.pseudonyms import Pseudonyms

    fixtures = [
        (p.read_bytes(), "fhir" if p.suffix == ".json" else "hl7v2")
        for p in sorted(FIXTURES.glob("*.*"))
    ]
    hints = {".hl7": "hl7v2", ".json": "fhir", ".ndjson": "fhir"}
    more = [
        (p.read_bytes(), hints.get(p.suffix))
        for d in MORE_INPUTS
        if d.is_dir()
        for p in sorted(d.iterdir())
        if p.suffix in (".hl7", ".json", ".ndjson", ".txt")
    ]
    stream = [*inputs, *fixtures, *fixtures[::-1], *inputs[:300], *fixtures, *more, *more]
    pseudonyms = Pseudonyms(bytes(range(32)))
    made = [0]

    def identity() -> PatientState:
        made[0] += 1
        seed = hashlib.sha256(b"state%d" % made[0]).digest()
        return PatientState(-(1 + seed[0] * 3), pseudonyms("patient", seed), seed)

    def one(o: Outcome) -> list[Any]:
        digest = hashlib.sha256(o.value).hexdigest() if o.value else None
        return [
            o.kind,
            o.research_key,
            digest,
            [list(h) for h in o.headers],
            o.reason_class,
            o.reason,
        ]

    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="deidstream-dump-") as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'dump.sqlite3'}", Keyring.generate())
        proc = Processor(
            policy=Policy.load(POLICY), store=store, pseudonyms=pseudonyms, state_factory=identity
        )
        for start in range(0, len(stream), batch):
            results = _results(proc, stream[start : start + batch], many)
            done: list[Outcome] = []
            for res in results:
                if isinstance(res, BaseException):
                    outs = getattr(res, "outcomes", None)
                    lines.append(
                        json.dumps(
                            {
                                "error": type(res).__name__,
                                "class": getattr(res, "reason_class", None),
                                "outs": None if outs is None else [one(o) for o in outs],
                            }
                        )
                    )
                    done += outs or []
                else:
                    lines.append(json.dumps([one(o) for o in res]))
                    done += res
            proc.commit(done)
        store.close()
    text = "\n".join(lines) + "\n"
    path.write_text(text)
    return hashlib.sha256(text.encode()).hexdigest()


def bench_postgres(
    pg: str, inputs: Sequence[tuple[bytes, str]], batch: int, profile: Path | None, many: bool
) -> None:
    import psycopg
    from psycopg import sql

    try:
        admin = psycopg.connect(pg, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        print("  postgres: not reachable, skipped")
        return
    schema = f"process_bench_{uuid.uuid4().hex[:10]}"
    sep = "&" if "?" in pg else "?"
    url = f"{pg}{sep}schema={schema}"
    keyring = Keyring.generate()
    try:
        bench_store("postgres", lambda: open_store(url, keyring), inputs, batch, profile, many)
    finally:
        admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        admin.close()


if __name__ == "__main__":
    raise SystemExit(main())
