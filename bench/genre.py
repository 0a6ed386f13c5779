"""Phrase coverage of the default Detector on the invented short-text genre (issue 13).

    .venv/bin/python bench/genre.py [--family heldout|dev] [--notes N] [--seed S] [--policy FILE]
        [--show-misses N (dev family: missed phrases in their texts)]
        [--show-phrases LABEL (any family: the missed phrases of LABEL alone)]

Generates N notes of a template family with ``pipelines.phi.synthetic.generate`` and prints,
per gold label, the share of gold PHI phrases *fully covered*: every alphanumeric token of the
phrase overlaps a detected span (any category; as ``pipelines.evaluation`` counts a phrase
found). Also the share of predicted tokens that are no gold PHI (a precision check on this
genre) and notes/s of detection alone (CPU time). Report figures on the ``heldout`` family:
rules are written against ``dev``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipelines.evaluation import tokenize  # noqa: E402
from pipelines.phi.detector import Detector  # noqa: E402
from pipelines.phi.synthetic import generate  # noqa: E402
from pipelines.policy import Policy  # noqa: E402
from pipelines.spans import Span  # noqa: E402


def _covered(tokens: list[tuple[int, int]], spans: list[Span], start: int, end: int) -> bool:
    inside = [(a, b) for a, b in tokens if a < end and start < b]
    return all(any(s.start < b and a < s.end for s in spans) for a, b in inside)


def _marked(
    text: str, tokens: list[tuple[int, int]], spans: list[Span], start: int, end: int
) -> str:
    """The phrase with its uncovered tokens in brackets, and the sources that covered the
    rest ("Xyz [Hospital]  <- locations.after_cue")."""
    out, pos = [], start
    for a, b in tokens:
        if a < end and start < b:
            covered = any(s.start < b and a < s.end for s in spans)
            out.append(text[pos:a] + (text[a:b] if covered else f"[{text[a:b]}]"))
            pos = b
    out.append(text[pos:end])
    sources = sorted({s.source for s in spans if s.start < end and start < s.end})
    return "".join(out) + "  <- " + ", ".join(sources)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", default="heldout", choices=["dev", "heldout"])
    ap.add_argument("--notes", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--policy", type=Path, default=None)
    ap.add_argument("--show-misses", type=int, default=0, help="print N missed phrases (dev only)")
    ap.add_argument(
        "--show-phrases", metavar="LABEL", default=None,
        help="print the missed phrases of LABEL alone, no text around them (any family)",
    )  # fmt: skip
    args = ap.parse_args()
    if args.show_misses and args.family != "dev":
        ap.error("--show-misses is for the dev family only: heldout texts are not to be read")
    notes = generate(args.notes, args.seed, args.family)
    detector = Detector(Policy.load(args.policy) if args.policy else None)
    detector.detect("Warm-up: seen by Dr. Smith at Mercy Hospital on 3/4/2019.")
    found: Counter[str] = Counter()
    total: Counter[str] = Counter()
    pred_tokens = fp_tokens = 0
    misses: list[str] = []
    phrases: list[str] = []
    elapsed = 0.0
    for note in notes:
        t0 = time.process_time()
        spans = detector.detect(note.text)
        elapsed += time.process_time() - t0
        tokens = tokenize(note.text)
        for start, end, label in note.spans:
            total[label] += 1
            if _covered(tokens, spans, start, end):
                found[label] += 1
            elif label == args.show_phrases:
                phrases.append(_marked(note.text, tokens, spans, start, end))
            elif len(misses) < args.show_misses:
                misses.append(f"{label:9} {note.text[start:end]!r} in {note.text!r}")
        gold = [(s, e) for s, e, _ in note.spans]
        for a, b in tokens:
            if any(s.start < b and a < s.end for s in spans):
                pred_tokens += 1
                fp_tokens += not any(s < b and a < e for s, e in gold)
    print(f"family {args.family}  notes {len(notes)}  seed {args.seed}")
    print(f"{'label':10} {'phrases':>8} {'covered':>8} {'share':>7}")
    for label in sorted(total):
        print(f"{label:10} {total[label]:8d} {found[label]:8d} {found[label] / total[label]:7.3f}")
    all_total, all_found = sum(total.values()), sum(found.values())
    print(f"{'ALL':10} {all_total:8d} {all_found:8d} {all_found / max(all_total, 1):7.3f}")
    print(f"predicted tokens {pred_tokens}, not gold PHI {fp_tokens} "
          f"(token precision {1 - fp_tokens / max(pred_tokens, 1):.3f})")  # fmt: skip
    print(f"detect: {len(notes) / max(elapsed, 1e-9):,.0f} notes/s (CPU time)")
    for line in misses:
        print("MISS", line)
    for phrase in sorted(phrases):
        print("MISSED", phrase)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
