"""A warm worker's detect, timed: CPU per note over unseen dev notes after a warm-up.

    .venv/bin/python bench/warm_detect.py [--warm 600] [--rounds 1] [--corpus DIR]

The detector first reads the first ``--warm`` dev notes (a worker's warm caches), then the
others ``--rounds`` times; it prints the CPU time (``time.process_time``) per note of those.
The timed counterpart of ``bench/instructions.py --workload detect --warm N``: instructions
do not skew with the machine's load, this does (alternate two checkouts, repeat). Skips
(exit 0) without the corpus.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from pipelines.corpus import read_notes  # noqa: E402
from pipelines.phi.base import Doc  # noqa: E402
from pipelines.phi.detector import Detector  # noqa: E402
from pipelines.policy import Policy  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warm", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared/data/physionet/dev")
    args = parser.parse_args()
    text = args.corpus / "id.text"
    if not text.is_file():
        print(f"bench/warm_detect.py: no corpus at {args.corpus}; skipped")
        return 0
    notes = [n.text for n in read_notes(text)]
    detector = Detector(Policy.load())
    for note in notes[: args.warm]:
        detector.detect(Doc(note))
    timed = notes[args.warm :]
    start = time.process_time()
    for _ in range(args.rounds):
        for note in timed:
            detector.detect(Doc(note))
    seconds = time.process_time() - start
    count = len(timed) * args.rounds
    print(
        f"warm detect: {count} notes after {args.warm}, {seconds * 1e3 / count:.3f} ms CPU a note"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
