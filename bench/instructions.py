"""Instructions per document, counted by valgrind's callgrind: a speed figure that a loaded
machine does not skew (the same count, give or take a few per mille, whatever else runs).

    .venv/bin/python bench/instructions.py [--workload detect|again|process|process-again]
                                   [--count 200]

It runs this script twice under ``valgrind --tool=callgrind`` (``PYTHONHASHSEED=0``): once
doing the set-up only (imports, word tables, one warm-up document) and once doing the set-up
and ``--count`` documents, and prints the difference per document. Workloads:

- ``detect``: ``Detector.detect`` over the first ``--count`` dev notes, each seen for the
  first time (as the service sees new documents);
- ``again``: the same notes a second time (what the detector's memos save on repeats);
- ``--warm N`` (``detect``, ``again``): the detector first reads ``N`` other dev notes (those
  after the counted ones) in both runs, so the counted notes meet a worker's warm caches (the
  regex set's DFA states, the common words' memos) rather than a fresh process's; a fresh
  process pays most of a first sight building those (bench/README.md, "Session 18");
- ``--frozen`` (``detect``, ``again``): the heap frozen after the set-up by the service's own
  ``freeze_after_warmup``, so a full collection of what the set-up built does not fall in the
  counted window by chance (it moved totals by ~0.4 M a document; bench/README.md,
  "Session 23");
- ``process``: ``Processor.process`` (parse, detect, surrogates, leak guard, render, the
  encrypted SQLite key store) over the first ``--count`` documents ``bench/stream.py``
  sends (half HL7 v2, half FHIR), after a warm-up on other documents;
- ``process-again``: the same ``--count`` texts processed a second time by the same
  processor, each document with its own visit: what ``bench/stream.py`` measures once it has
  cycled through the dev notes (it sends them over and over), where ``process`` is what a
  stream of new documents costs.

``--stages`` (with ``--workload process``): one callgrind run whose counts are cut at every
stage boundary (``pipelines.stopwatch`` and the de-identifier's laps dump callgrind's counters
through a client request, from a three-line C helper built with ``cc`` against
``valgrind/callgrind.h``), printed as instructions per document for each stage and for the
work outside the stages (commit, the store's patient reads, outcome building): where the
processor's instructions go, beside the whole figure (the timings ``bench/process.py``
prints move with the machine's load; these do not). Warm-up: 4 documents, so the counted
documents meet colder memos than in the default run: compare stage figures between two
checkouts, not with the default run's total.

Instructions are not seconds (cache misses and branch mispredictions cost time, not
instructions), so confirm a gain in seconds on a quiet machine; but a change that adds or
removes work shows here first, and two checkouts compare in one run each. Under callgrind
Python runs ~50x slower: 200 notes take about 40 s. Skips (exit 0) without the corpus or
without valgrind.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# bench/keystore.py would shadow the keystore package: take bench/ off the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "physionet" / "dev"
WARMUP_TEXT = "Seen by Dr. Smith on 3/4/2001 at Oakdale General, MRN 402913, age 93."


def notes(corpus: Path, count: int) -> list[str]:
    from pipelines.corpus import Note, read_notes

    read = read_notes(corpus / "id.text", "physionet")
    return [n.text for n in read if isinstance(n, Note) and n.text.strip()][:count]


def bench_module(name: str) -> Any:
    """``bench/<name>.py`` as a module (bench/ is off the path: bench/keystore.py would shadow
    the keystore package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"bench_{name}"] = module
    spec.loader.exec_module(module)
    return module


def _detect(
    corpus: Path, count: int, first: int, warm: int = 0, total: int = 0, frozen: bool = False
) -> None:
    """``warm`` other notes (after the first ``total``) and ``first`` notes seen once as
    set-up (both runs of ``again``), then ``count`` counted; ``frozen``: the heap frozen after
    the set-up, as the service does after its warm-up."""
    from pipelines.document import Identifiers
    from pipelines.phi.base import Doc
    from pipelines.phi.detector import Detector
    from pipelines.policy import Policy

    texts = notes(corpus, max(count, first, 1, total + warm))
    detector = Detector(Policy.load(None))
    detector.detect(Doc(WARMUP_TEXT, Identifiers()))
    for text in texts[total : total + warm] + texts[:first]:  # set-up: the same in both runs
        detector.detect(Doc(text, Identifiers()))
    if frozen:
        _freeze()
    for text in texts[:count]:
        detector.detect(Doc(text, Identifiers()))


def _freeze() -> None:
    """The service's own freeze after its warm-up (``service.wiring.freeze_after_warmup``):
    what was built so far leaves the collector's reach, and its threshold is the service's."""
    from service.wiring import freeze_after_warmup

    freeze_after_warmup()


def _process(corpus: Path, count: int, first: int) -> None:
    """``first`` documents processed as set-up (both runs of ``process-again``), then
    ``count`` counted: with ``first``, the same texts again, each with its own visit."""
    bench_process = bench_module("process")

    import surrogates
    from keystore import Keyring, open_store
    from keystore.memory import InMemoryStore
    from pipelines.policy import Policy
    from pipelines.process import Processor

    warmup = 20
    inputs = bench_process.corpus_inputs(corpus, max(count, first) + warmup)
    assert inputs is not None
    surrogates.warm()
    warm = Processor(policy=Policy.load(None), store=InMemoryStore())
    bench_process.run_pass(warm, inputs[max(count, first) :], 64, many=True)
    if first:  # the first ``first`` notes' texts twice over, each document its own visit
        inputs = bench_process.corpus_inputs(corpus, 2 * first, cycle=first)
        assert inputs is not None
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{tmp}/keys.db", Keyring.generate())
        proc = Processor(policy=Policy.load(None), store=store)
        # as the service: one process_many and one commit per batch of 64
        if first:
            bench_process.run_pass(proc, inputs[:first], 64, many=True)
        bench_process.run_pass(proc, inputs[first : first + count], 64, many=True)
        store.close()


_MARK_C = """#include <valgrind/callgrind.h>
void mark(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""


def _stage_marks() -> tuple[Any, Any]:
    """(timer, dump) for a ``--stages`` child: ``dump(label)`` closes a callgrind interval
    named ``label``; the stopwatch and the de-identifier's laps are patched to close one at
    each stage boundary (the intervals between stages are "outside")."""
    import ctypes

    import pipelines.deidentify as deidentify
    import pipelines.stopwatch as stopwatch

    lib = ctypes.CDLL(os.environ["BENCH_CALLGRIND_MARK"])
    stack = ["outside"]

    def dump(label: str) -> None:
        lib.mark(label.encode("ascii"))

    def enter(self: Any) -> None:
        dump(stack[-1])
        stack.append(self._stage)

    def leave(self: Any, *exc: object) -> None:
        dump(stack.pop())
        self._times[self._stage] = self._times.get(self._stage, 0.0)

    def lap(self: Any, times: dict[str, float], stage: str, since: float) -> float:
        dump(stage)
        times[stage] = times.get(stage, 0.0)
        return 0.0

    def timer() -> float:  # the de-identifier's first tick: what came before it
        dump(stack[-1])
        return 0.0

    stopwatch.stopwatch.__enter__ = enter  # type: ignore[method-assign]
    stopwatch.stopwatch.__exit__ = leave  # type: ignore[method-assign]
    deidentify.Deidentifier._lap = lap  # type: ignore[method-assign]
    return timer, dump


def _process_stages(corpus: Path, count: int) -> None:
    """``_process`` with a callgrind interval per stage (4 warm-up documents)."""
    timer, dump = _stage_marks()
    bench_process = bench_module("process")

    import surrogates
    from keystore import Keyring, open_store
    from keystore.memory import InMemoryStore
    from pipelines.policy import Policy
    from pipelines.process import Processor

    inputs = bench_process.corpus_inputs(corpus, count + 4)
    assert inputs is not None
    surrogates.warm()
    warm = Processor(policy=Policy.load(None), store=InMemoryStore(), timer=timer)
    bench_process.run_pass(warm, inputs[count:], 64, many=True)
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{tmp}/keys.db", Keyring.generate())
        proc = Processor(policy=Policy.load(None), store=store, timer=timer)
        dump("BEGIN")
        bench_process.run_pass(proc, inputs[:count], 64, many=True)
        dump("END")
        store.close()


def _stages(args: argparse.Namespace) -> int:
    """Build the marking helper, run the workload once under callgrind with a dump at each
    stage boundary, and print the instructions per document of each stage."""
    with tempfile.TemporaryDirectory() as tmp:
        helper = build_marker(Path(tmp))
        if helper is None:
            return 0
        out = Path(tmp) / "cg"
        env = dict(
            os.environ,
            PYTHONHASHSEED="0",
            PYTHONDONTWRITEBYTECODE="1",
            BENCH_CALLGRIND_MARK=str(helper),
        )
        cmd = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            "--dump-instr=no",
            "--dump-line=no",
            sys.executable,
            __file__,
            "--child",
            "--stages",
            "--workload",
            "process",
            "--count",
            str(args.count),
            "--corpus",
            str(args.corpus),
        ]
        per_stage = interval_totals(run_marked(cmd, env, Path(tmp)), outside="outside")
    total = sum(per_stage.values())
    print(f"process: {args.count} documents, M instructions per document by stage")
    for stage, n in sorted(per_stage.items(), key=lambda kv: -kv[1]):
        print(f"  {stage:16s} {n / args.count / 1e6:8.3f}")
    print(f"  {'all':16s} {total / args.count / 1e6:8.3f}")
    print(
        f"  {'all but detect':16s} {(total - per_stage.get('detect', 0)) / args.count / 1e6:8.3f}"
    )
    return 0


def dump_number(path: Path) -> int:
    return int(path.suffix[1:]) if path.suffix[1:].isdigit() else -1


def interval_totals(dumps: list[Path], outside: str | None = None) -> dict[str, int]:
    """Instructions per label over the callgrind dumps between BEGIN and END (a dump closes
    the interval since the previous one and names it); with ``outside``, the interval that
    END closes is counted under that name."""
    totals: dict[str, int] = {}
    counting = False
    for path in dumps:
        text = path.read_text(errors="replace")
        label = re.search(r"Client Request: (\S+)", text)
        summary = re.search(r"^summary: (\d+)", text, re.M)
        if label is None or summary is None:
            continue
        name = label.group(1)
        if name == "END" and counting and outside is not None:
            totals[outside] = totals.get(outside, 0) + int(summary.group(1))
        if name in ("BEGIN", "END"):
            counting = name == "BEGIN"
        elif counting:
            totals[name] = totals.get(name, 0) + int(summary.group(1))
    return totals


def build_marker(tmp: Path) -> Path | None:
    """The marking helper (``mark(label)``: a callgrind dump named ``label``) built in ``tmp``
    with ``cc``; None, said on stdout, when it does not build."""
    helper = tmp / "cgmark.so"
    (tmp / "cgmark.c").write_text(_MARK_C)
    built = subprocess.run(
        ["cc", "-O2", "-shared", "-fPIC", "-o", str(helper), str(tmp / "cgmark.c")],
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        print(f"skipped: the marking helper did not build (valgrind headers?)\n{built.stderr}")
        return None
    return helper


def run_marked(cmd: list[str], env: dict[str, str], tmp: Path) -> list[Path]:
    """Run ``cmd`` (a valgrind command writing ``tmp/cg``) and return its dumps in order."""
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        sys.exit(f"callgrind run failed ({run.returncode}):\n{run.stderr[-2000:]}")
    return sorted(tmp.glob("cg.*"), key=dump_number)


def _child(args: argparse.Namespace) -> None:
    if args.workload == "process" and args.stages:
        _process_stages(args.corpus, args.count)
    elif args.workload in ("process", "process-again"):
        _process(args.corpus, args.count, args.first)
    else:
        _detect(args.corpus, args.count, args.first, args.warm, args.total, args.frozen)


def _instructions(args: argparse.Namespace, count: int) -> int:
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--child",
        "--workload",
        args.workload,
        "--count",
        str(count),
        "--corpus",
        str(args.corpus),
        "--first",
        str(args.count if args.workload in ("again", "process-again") else 0),
        "--warm",
        str(args.warm),
        "--total",
        str(args.count),
        *(["--frozen"] if args.frozen else []),
    ]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", run.stderr)
    if run.returncode != 0 or found is None:
        sys.exit(f"callgrind run failed ({run.returncode}):\n{run.stderr[-2000:]}")
    return int(found.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--workload", choices=("detect", "again", "process", "process-again"), default="detect"
    )
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--total", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument(
        "--warm", type=int, default=0, help="detect/again: read N other notes first (warm caches)"
    )
    ap.add_argument(
        "--stages", action="store_true", help="process: instructions per document by stage"
    )
    ap.add_argument(
        "--frozen",
        action="store_true",
        help="detect/again: freeze the heap after the set-up, as the service does after its "
        "warm-up (a full collection then falls in the counted window only if the counted "
        "notes cause one)",
    )
    args = ap.parse_args()
    if not (args.corpus / "id.text").is_file():
        print(f"skipped: no corpus at {args.corpus}")
        return 0
    if args.child:
        _child(args)
        return 0
    if shutil.which("valgrind") is None:
        print("skipped: valgrind is not installed")
        return 0
    if args.stages:
        if args.workload != "process":
            sys.exit("--stages needs --workload process")
        return _stages(args)
    setup = _instructions(args, 0)
    total = _instructions(args, args.count)
    per_doc = (total - setup) / args.count
    print(
        f"{args.workload}: {args.count} documents, set-up {setup / 1e9:.3f} G instructions, "
        f"{per_doc / 1e6:.3f} M instructions per document"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
