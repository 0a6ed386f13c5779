"""What each memo of the detector saves: CPU seconds with every memo on, and with each memo
(and all of them) off, in the same run.

    .venv/bin/python bench/memo_gain.py [--corpus DIR] [--rounds 3] [--megabytes 1] [--only NAME,...]

Two workloads, each timed in CPU seconds of this process (``time.process_time``), best of
``--rounds`` rounds that interleave the settings (so a busy spell of the machine touches all
of them alike): the PhysioNet dev split through ``Detector.detect`` (the patients' known
names given, as the service does; skipped when the corpus is absent), and one note of
``--megabytes`` MB built as ``bench/bignote.py`` builds it (invented text, long enough for the
window memos, which keep no verdicts for notes under 10,000 characters). Every memo is
emptied before each timed pass: each pass starts cold. Gain = (off - on) / off: the share of
the CPU time a memo saves; the project removes a memo worth under 1 % on both workloads
(bench/README.md, "Memos"). Also prints each memo's hit rate over the last pass with all on.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipelines import memo  # noqa: E402
from pipelines.corpus import Note, load_patient_names, read_notes  # noqa: E402
from pipelines.document import Identifiers  # noqa: E402
from pipelines.phi.base import Doc  # noqa: E402
from pipelines.phi.detector import Detector  # noqa: E402
from pipelines.policy import Policy  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "physionet" / "dev"


def _timed(work: Callable[[], object], off: tuple[str, ...] | None) -> float:
    """CPU seconds of ``work`` with the memos ``off`` (() = all; None = none) off."""
    for m in list(memo._ALL):
        m.clear()
    gc.collect()  # no pass pays for the garbage of the one before
    if off is None:
        t0 = time.process_time()
        work()
        return time.process_time() - t0
    with memo.memos(False, *off):
        t0 = time.process_time()
        work()
        return time.process_time() - t0


Workloads = dict[str, tuple[Callable[[], object], int]]  # label -> (work, notes or 0)
Setting = tuple[str, tuple[str, ...] | None]  # label, memos off (() all, None none)


def _workloads(corpus: Path, megabytes: float) -> Workloads:
    spec = importlib.util.spec_from_file_location("bignote", ROOT / "bench" / "bignote.py")
    assert spec is not None and spec.loader is not None
    bignote = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bignote)
    detector = Detector(Policy.load())
    out: Workloads = {}
    if (corpus / "id.text").is_file():
        notes = [n for n in read_notes(corpus / "id.text", "physionet") if isinstance(n, Note)]
        names_path = corpus / "pid_patientname.txt"
        known = load_patient_names(names_path) if names_path.is_file() else {}
        docs = [(n.text, known.get(n.patient, Identifiers())) for n in notes]
        out[f"dev split ({len(docs)} notes)"] = (
            lambda: [detector.detect(Doc(t, ids)) for t, ids in docs],
            len(docs),
        )
    if megabytes <= 0:
        return out
    big = bignote.build_text(megabytes)
    out[f"big note ({len(big) / 1e6:.1f} MB)"] = (lambda: detector.detect(Doc(big)), 0)
    return out


def _measure(
    workloads: Workloads, settings: list[Setting], rounds: int
) -> tuple[dict[tuple[str, str], float], dict[str, float]]:
    """Best CPU seconds per (workload, setting), and each memo's hit rate all on."""
    for work, _ in workloads.values():
        work()  # lazy loads (word lists, the tagger's tables) out of the timed passes
    best: dict[tuple[str, str], float] = {}
    asked: dict[str, list[int]] = {}  # memo -> [hits, misses] over the passes all on
    for r in range(max(1, rounds)):
        for label, (work, _) in workloads.items():
            # rotated each round: no setting always runs first (after another workload)
            for name, off in settings[r % len(settings) :] + settings[: r % len(settings)]:
                before = {s.name: (s.hits, s.misses) for s in memo.stats()}
                seconds = _timed(work, off)
                key = (label, name)
                best[key] = min(best.get(key, float("inf")), seconds)
                if off is not None:
                    continue
                for s in memo.stats():
                    hits, misses = before.get(s.name, (0, 0))
                    row = asked.setdefault(s.name, [0, 0])
                    row[0] += s.hits - hits
                    row[1] += s.misses - misses
    return best, {name: h / (h + m) if h + m else 0.0 for name, (h, m) in asked.items()}


def _estimate(work: Callable[[], object]) -> list[tuple[str, int, float, float]]:
    """Per memo, from one pass all on: its hits, the CPU a hit saves (computing its kept keys
    again, less looking them up) and so the seconds it saves. Far steadier than the
    difference of two passes on a shared machine. Memos filled by ``put`` are skipped."""
    for m in list(memo._ALL):
        m.clear()
    before = {id(m): m.hits for m in list(memo._ALL)}
    t0 = time.process_time()
    work()
    total = time.process_time() - t0
    rows: dict[str, list[float]] = {}
    for m in list(memo._ALL):
        keys = list(m._store)
        hits = m.hits - before.get(id(m), 0)
        if m.compute is None or not keys or not hits:
            continue
        t0 = time.process_time()
        for key in keys:
            m.compute(key)
        miss = (time.process_time() - t0) / len(keys)
        t0 = time.process_time()
        for key in keys:
            m(key)
        hit = (time.process_time() - t0) / len(keys)
        row = rows.setdefault(m.name, [0, 0.0])
        row[0] += hits
        row[1] += hits * (miss - hit)
    return [(name, int(h), saved / h, saved / total) for name, (h, saved) in sorted(rows.items())]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--megabytes", type=float, default=1.0)
    ap.add_argument("--only", default="", help="memo names to time (default: every memo)")
    # --megabytes 0: the dev split only
    ap.add_argument("--estimate", action="store_true", help="hits x CPU saved per hit")
    args = ap.parse_args()

    workloads = _workloads(args.corpus, args.megabytes)
    if args.estimate:
        for label, (work, _) in workloads.items():
            work()
            print(f"{label}: estimated from one pass all on")
            print(f"  {'memo':<30}{'hits':>9}{'µs/hit':>9}{'share':>8}")
            for name, hits, per_hit, share in _estimate(work):
                print(f"  {name:<30}{hits:>9}{per_hit * 1e6:>9.2f}{share:>8.2%}")
        return 0
    names = sorted(s for s in args.only.split(",") if s) or sorted(memo.names())
    settings: list[Setting] = [("(all on)", None)]
    settings += [(name, (name,)) for name in names] + [("(all off)", ())]
    best, hit_rates = _measure(workloads, settings, args.rounds)
    for label, (_, n) in workloads.items():
        on = best[label, "(all on)"]
        print(f"{label}: all memos on {on:.3f} s CPU (best of {args.rounds})")
        print(f"  {'memo off':<30}{'CPU s':>8}{'gain':>8}" + ("  notes/s" if n else ""))
        for name, _ in settings:
            off = best[label, name]
            rate = f"{n / off:>9,.0f}" if n else ""
            print(f"  {name:<30}{off:>8.3f}{(off - on) / off:>8.1%}{rate}")
    print("hit rates (all passes with the memo on):")
    for name in names:
        print(f"  {name:<30}{hit_rates.get(name, 0.0):>8.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
