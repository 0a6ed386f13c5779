"""Detector throughput on the PhysioNet dev split: notes/s, MB/s, µs/note, peak memory,
and the share of time each recognizer takes.

    .venv/bin/python bench/detect.py [--corpus DIR] [--policy FILE] [--no-known-names]
                                     [--identifiers] [--repeat N] [--tracemalloc] [--gc-freeze]
                                     [--unseen [--warm N]]

Times are CPU time of this process (``time.process_time``), so other work on the machine
skews them little. Speed figures are printed here and never asserted in tests. Skips (exit 0)
when the corpus is absent. Targets (issue 13): the whole detector (rules + tagger) >= 1,000
notes/s on one core, the tagger alone >= 2,000 (its line in the time share).

``--identifiers`` gives every note the structured identifiers an HL7 message carries (an MRN,
an account number, a birth date, a phone; synthetic values), as the service does, so the
known-identifier scans run as they do there.

``--unseen`` asks what repeated passes over the same notes flatter: a fresh detector warms on
one half of the notes (the first ``--warm N`` notes instead, if given: ``--warm 600`` is the
split ``bench/instructions.py --workload detect --warm 600`` counts), then times its first sight
of the other notes against a second pass over them. A service sees mostly new text; ``bench/stream.py`` cycles the dev notes, so its
documents after the first 1,624 are repeats.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import resource
import sys
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipelines.corpus import Note, load_patient_names, read_notes  # noqa: E402
from pipelines.document import Identifier, Identifiers  # noqa: E402
from pipelines.phi.base import Doc  # noqa: E402
from pipelines.phi.detector import Detector  # noqa: E402
from pipelines.phi.merge import merge_spans  # noqa: E402
from pipelines.policy import Policy  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "physionet" / "dev"
TARGET_NOTES_PER_S = 1000  # the whole detector
TARGET_TAGGER_NOTES_PER_S = 2000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--policy", type=Path, default=None)
    ap.add_argument("--no-known-names", action="store_true")
    ap.add_argument(
        "--identifiers",
        action="store_true",
        help="also give each note a synthetic MRN, account, birth date and phone",
    )
    ap.add_argument("--repeat", type=int, default=3, help="timed passes; the best is reported")
    ap.add_argument("--tracemalloc", action="store_true", help="also trace Python heap peak")
    ap.add_argument(
        "--gc-freeze",
        action="store_true",
        help="gc.freeze() after the first note, as the service does after its warm-up",
    )
    ap.add_argument(
        "--unseen",
        action="store_true",
        help="warm on half the notes, then time the other half at first sight and again",
    )
    ap.add_argument(
        "--warm", type=int, default=None, help="--unseen: notes to warm on (default: half)"
    )
    args = ap.parse_args()

    text_path = args.corpus / "id.text"
    if not text_path.is_file():
        print(f"bench/detect.py: {text_path} not found; skipped")
        return 0

    notes = [n for n in read_notes(text_path, "physionet") if isinstance(n, Note)]
    known: dict[str, Identifiers] = {}
    names_path = args.corpus / "pid_patientname.txt"
    if not args.no_known_names and names_path.is_file():
        known = load_patient_names(names_path)
    if args.identifiers:
        known = {n.patient: _with_ids(known.get(n.patient, Identifiers())) for n in notes}
    chars = sum(len(n.text) for n in notes)
    mbytes = sum(len(n.text.encode("utf-8")) for n in notes) / 1e6
    rss_before = _peak_rss_mb()

    t0 = time.process_time()
    detector = Detector(Policy.load(args.policy))
    if notes:  # lexicons and compiled patterns load lazily on the first note
        detector.detect(Doc(notes[0].text, known.get(notes[0].patient, Identifiers())))
    setup = time.process_time() - t0
    if args.gc_freeze:  # lexicons and patterns out of the collector's reach (service/wiring.py)
        gc.collect()
        gc.freeze()

    if args.unseen:
        return _unseen(detector, notes, known, args.warm)

    names = [r.name for r in detector.recognizers]
    print(f"corpus {args.corpus}: {len(notes)} notes, {chars} characters, {mbytes:.2f} MB")
    print(
        f"recognizers: {', '.join(names) or '(none)'}  known names: {not args.no_known_names}"
        f"  identifiers: {args.identifiers}"
    )
    print(f"setup (construct + first note): {setup * 1000:.0f} ms")

    best = float("inf")
    spans_total = 0
    for _ in range(max(1, args.repeat)):
        # each Doc is built and dropped in the loop, as in the service: keeping every note's
        # cached tokens alive would make the garbage collector walk them all, again and again
        t0 = time.process_time()
        spans_total = sum(
            len(detector.detect(Doc(n.text, known.get(n.patient, Identifiers())))) for n in notes
        )
        best = min(best, time.process_time() - t0)
    n = len(notes) or 1
    rate = len(notes) / best if best else float("inf")
    verdict = "met" if rate >= TARGET_NOTES_PER_S else "NOT met"
    print(
        f"throughput: {rate:,.0f} notes/s  {mbytes / best:.2f} MB/s  "
        f"{best / n * 1e6:.0f} µs/note  ({spans_total} spans, best of {args.repeat})"
    )
    print(f"target: >= {TARGET_NOTES_PER_S} notes/s on one core  {verdict}")
    if not detector.recognizers:
        print("note: the policy enables no recognizer, so this measures only the overhead")

    # Per-recognizer share: each recognizer timed separately over the same notes.
    per: dict[str, float] = defaultdict(float)
    merge_time = 0.0
    for note in notes:
        doc = Doc(note.text, known.get(note.patient, Identifiers()))
        found = []
        for rec in detector.recognizers:
            t = time.process_time()
            found.extend(rec.detect(doc))
            per[rec.name] += time.process_time() - t
        t = time.process_time()
        merge_spans(found)
        merge_time += time.process_time() - t
    total = sum(per.values()) + merge_time
    if total > 0:
        print("time share:")
        rows = sorted(per.items(), key=lambda kv: -kv[1]) + [("(merge)", merge_time)]
        for name, secs in rows:
            print(f"  {name:<28}{secs / total:>7.1%}  {secs / n * 1e6:>8.1f} µs/note")
        if per.get("tagger"):
            tagger_rate = n / per["tagger"]
            verdict = "met" if tagger_rate >= TARGET_TAGGER_NOTES_PER_S else "NOT met"
            print(
                f"tagger alone: {tagger_rate:,.0f} notes/s; target >= "
                f"{TARGET_TAGGER_NOTES_PER_S} on one core  {verdict}"
            )

    print(f"peak RSS: {_peak_rss_mb():.0f} MB (before detector: {rss_before:.0f} MB)")
    if args.tracemalloc:
        tracemalloc.start()
        for note in notes:
            detector.detect(Doc(note.text, known.get(note.patient, Identifiers())))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"peak Python heap during detection (tracemalloc): {peak / 1e6:.1f} MB")
    return 0


def _unseen(
    detector: Detector, notes: list[Note], known: dict[str, Identifiers], warm_count: int | None
) -> int:
    """µs per note: the warm-up notes, the others at first sight, the same others again."""
    half = len(notes) // 2 if warm_count is None else warm_count
    if not 0 < half < len(notes):
        print("--unseen needs a warm-up part and another part")
        return 0

    def timed(group: list[Note]) -> float:
        t0 = time.process_time()
        for note in group:
            detector.detect(Doc(note.text, known.get(note.patient, Identifiers())))
        return (time.process_time() - t0) / len(group) * 1e6

    warm, other = notes[:half], notes[half:]
    rows = [
        (f"warm-up notes, first sight ({len(warm)} notes; cold caches)", timed(warm)),
        ("warm-up notes again", timed(warm)),
        (f"other notes, first sight ({len(other)} notes, warm caches)", timed(other)),
        ("other notes again", timed(other)),
    ]
    for label, us in rows:
        print(f"  {label:<60}{us:>8.0f} µs/note")
    print(f"first sight over repeat, warm caches: {rows[2][1] / rows[3][1]:.2f}x")
    return 0


def _with_ids(ids: Identifiers) -> Identifiers:
    """``ids`` plus the numbers a PID segment carries (synthetic: they occur in no note)."""
    return dataclasses.replace(
        ids,
        patient_ids=(Identifier("0012345678", "HOSP", "MR"),),
        account_numbers=("AC-998877",),
        birth_date=datetime.date(1931, 7, 14),
        phones=("617-555-0143",),
    )


def _peak_rss_mb() -> float:
    """ru_maxrss is in KiB on Linux (bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 / (1024 if sys.platform == "darwin" else 1)


if __name__ == "__main__":
    raise SystemExit(main())
