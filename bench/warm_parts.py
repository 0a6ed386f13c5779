"""Where a warm worker's instructions go, part by part: callgrind counts cut at the boundaries
of the detector's recognizers, the tokenizer, the tagger's steps, the processor's stages and
the near-duplicate sketch, per document (session 19).

    .venv/bin/python bench/warm_parts.py [--workload detect|process-again] [--count 100]
                                         [--warm 600]

It runs this script once under ``valgrind --tool=callgrind`` (``PYTHONHASHSEED=0``). The child
wraps each part's function so that entering and leaving it dumps callgrind's counters through a
client request (a three-line C helper built with ``cc`` against ``valgrind/callgrind.h``, as
``bench/instructions.py --stages`` does); an interval belongs to the innermost part open, so
each figure is that part's own instructions, not those of the parts inside it (``tagger.encode``
excludes ``tagger.rows`` and ``tagger.new_words``). Recognizers are cut where the detector
checks the per-document deadline after each one (``rec:NAME``: its own work, the tokenizer and
the tagger's steps excluded). Only the counted documents are cut:

- ``detect``: ``Detector.detect`` over the first ``--count`` dev notes at their first sight,
  after the detector has read ``--warm`` other notes (``bench/instructions.py --workload
  detect --warm``: a worker's warm caches, not a fresh process's);
- ``process-again``: ``Processor.process_many`` over ``--count`` documents whose texts the
  processor has processed once already, each with its own visit (``bench/instructions.py
  --workload process-again``: what ``bench/stream.py`` measures once it cycles); the
  processor's stages (``stage:NAME``) are cut too.

The wrappers and dumps cost a few thousand instructions per part entered, so the total runs
2-4 % over ``bench/instructions.py``'s figure for the same documents: read the parts as shares.
The garbage collector's work lands in whichever part allocates (this bench does not
``gc.freeze()``; the service does). Skips (exit 0) without the corpus, valgrind or ``cc``.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# bench/keystore.py would shadow the keystore package: take bench/ off the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "physionet" / "dev"


def _load_instructions() -> Any:
    """bench/instructions.py, whose corpus reader and callgrind plumbing this script shares."""
    spec = importlib.util.spec_from_file_location(
        "bench_instructions", ROOT / "bench" / "instructions.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_instructions"] = module
    spec.loader.exec_module(module)
    return module


_instructions = _load_instructions()


class _Marks:
    """Callgrind dumps at part boundaries, only between ``begin`` and ``end``."""

    def __init__(self, helper: str) -> None:
        import ctypes

        self._lib = ctypes.CDLL(helper)
        self.stack = ["outside"]
        self.on = False

    def dump(self, label: str) -> None:
        if self.on:
            self._lib.mark(label.encode("ascii"))

    def begin(self) -> None:
        self.on = True
        self.dump("BEGIN")

    def end(self) -> None:
        self.dump(self.stack[-1])
        self.dump("END")
        self.on = False

    def wrap(self, owner: Any, attr: str, label: str) -> None:
        """``owner.attr`` cut as part ``label`` (nested parts cut it further)."""
        inner = getattr(owner, attr)

        @functools.wraps(inner)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self.dump(self.stack[-1])
            self.stack.append(label)
            try:
                return inner(*args, **kwargs)
            finally:
                self.dump(self.stack.pop())

        setattr(owner, attr, wrapped)


def _cut_detector(marks: _Marks) -> None:
    import pipelines.phi.detector as detector
    from pipelines.phi import lexicons
    from pipelines.phi.tagger import crf, features

    def check(stage: str) -> None:  # after each recognizer: the interval is its own
        marks.dump(f"rec:{stage}")

    detector.check = check  # type: ignore[assignment]
    marks.wrap(lexicons, "_tokenize", "tokenize")
    marks.wrap(features.Featurizer, "encode", "tagger.encode")
    marks.wrap(features.Featurizer, "_made", "tagger.new_words")
    marks.wrap(features.Featurizer, "_rows", "tagger.rows")
    for method in ("set", "viterbi", "marginals", "marginal"):
        marks.wrap(crf.CrfTagger, method, "tagger.crfsuite")
    for name in ("propagated", "veto", "unite", "merge_spans", "without_inside_contact"):
        marks.wrap(detector, name, f"detector.{name}")


def _cut_processor(marks: _Marks) -> Any:
    """The processor's stages (the stopwatch and the de-identifier's laps) and the
    near-duplicate sketch's steps; returns the timer to give the processor."""
    import pipelines.deidentify as deidentify
    import pipelines.stopwatch as stopwatch
    from pipelines import near_duplicates, process_work

    def enter(self: Any) -> None:
        marks.dump(marks.stack[-1])
        marks.stack.append(f"stage:{self._stage}")

    def leave(self: Any, *exc: object) -> None:
        marks.dump(marks.stack.pop())
        self._times[self._stage] = 0.0

    def lap(self: Any, times: dict[str, float], stage: str, since: float) -> float:
        marks.dump(f"stage:{stage}")
        times[stage] = 0.0
        return 0.0

    def timer() -> float:  # the de-identifier's first tick closes what came before
        marks.dump(marks.stack[-1])
        return 0.0

    stopwatch.stopwatch.__enter__ = enter  # type: ignore[method-assign]
    stopwatch.stopwatch.__exit__ = leave  # type: ignore[method-assign]
    deidentify.Deidentifier._lap = lap  # type: ignore[method-assign]
    marks.wrap(near_duplicates, "sketch", "near.sketch")
    marks.wrap(near_duplicates.VisitSketches, "nearest", "near.nearest")
    marks.wrap(near_duplicates.VisitSketches, "add", "near.add")
    marks.wrap(process_work._Saver, "sketch_key", "near.key")
    marks.wrap(process_work._Saver, "save", "save_state")
    return timer


def _detect(marks: _Marks, corpus: Path, count: int, warm: int) -> None:
    from pipelines.document import Identifiers
    from pipelines.phi.base import Doc
    from pipelines.phi.detector import Detector
    from pipelines.policy import Policy

    texts = _instructions.notes(corpus, count + warm)
    detector = Detector(Policy.load(None))
    for text in texts[count:]:
        detector.detect(Doc(text, Identifiers()))
    marks.begin()
    for text in texts[:count]:
        detector.detect(Doc(text, Identifiers()))
    marks.end()


def _process_again(marks: _Marks, corpus: Path, count: int, timer: Any) -> None:
    bench_process = _instructions.bench_module("process")

    import surrogates
    from keystore import Keyring, open_store
    from keystore.memory import InMemoryStore
    from pipelines.policy import Policy
    from pipelines.process import Processor

    warmup = 20
    inputs = bench_process.corpus_inputs(corpus, count + warmup)
    assert inputs is not None
    surrogates.warm()
    warm = Processor(policy=Policy.load(None), store=InMemoryStore(), timer=timer)
    bench_process.run_pass(warm, inputs[count:], 64, many=True)
    inputs = bench_process.corpus_inputs(corpus, 2 * count, cycle=count)
    assert inputs is not None
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{tmp}/keys.db", Keyring.generate())
        proc = Processor(policy=Policy.load(None), store=store, timer=timer)
        bench_process.run_pass(proc, inputs[:count], 64, many=True)
        marks.begin()
        bench_process.run_pass(proc, inputs[count:], 64, many=True)
        marks.end()
        store.close()


def _run(args: argparse.Namespace) -> int:
    if not args.corpus.is_dir():
        print(f"skipped: no corpus at {args.corpus}")
        return 0
    if shutil.which("valgrind") is None or shutil.which("cc") is None:
        print("skipped: valgrind or cc not found")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        helper = _instructions.build_marker(Path(tmp))
        if helper is None:
            return 0
        out = Path(tmp) / "cg"
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
        cmd = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            "--dump-instr=no",
            "--dump-line=no",
            sys.executable,
            __file__,
            "--child",
            str(helper),
            "--workload",
            args.workload,
            "--count",
            str(args.count),
            "--warm",
            str(args.warm),
            "--corpus",
            str(args.corpus),
        ]
        totals = _instructions.interval_totals(_instructions.run_marked(cmd, env, Path(tmp)))
    _print(args, totals)
    return 0


def _print(args: argparse.Namespace, totals: dict[str, int]) -> None:
    total = sum(totals.values()) or 1
    warm = f", after {args.warm} other notes" if args.workload == "detect" else ""
    print(f"{args.workload}: {args.count} documents{warm}; M instructions per document by part")
    for part, n in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"  {part:32s} {n / args.count / 1e6:8.3f}  {100 * n / total:5.1f} %")
    print(f"  {'all':32s} {total / args.count / 1e6:8.3f}")


def _child(args: argparse.Namespace) -> None:
    marks = _Marks(args.child)
    _cut_detector(marks)
    if args.workload == "detect":
        _detect(marks, args.corpus, args.count, args.warm)
    else:
        _process_again(marks, args.corpus, args.count, _cut_processor(marks))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", choices=("detect", "process-again"), default="detect")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--warm", type=int, default=600, help="detect: other notes read first")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args)
        return 0
    return _run(args)


if __name__ == "__main__":
    sys.exit(main())
