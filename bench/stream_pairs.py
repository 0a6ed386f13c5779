"""Alternated pairs of ``bench/stream.py`` runs: this checkout against another (issue 25).

    .venv/bin/python bench/stream_pairs.py --other ../base [--pairs 6]

Each pair runs this checkout's ``bench/stream.py --count 4000 --rate-seconds 10 --workers 1``
and then the other checkout's own (its own ``.venv``), one after the other, and reads
"service: CPU per document" and the detect stage's mean time off their output. The machine's
speed drifts over minutes, so each pair is read as a ratio (this / other for the CPU, other /
this for the detect stage) and the series by its median. Run it with nothing else on the
machine. Skips (exit 0) when ``../shared/data`` is absent.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STREAM_ARGS = ["--count", "4000", "--rate-seconds", "10", "--workers", "1"]


def run(tree: Path) -> tuple[float, float]:
    """(CPU ms per document, detect stage µs) of one stream run in ``tree``."""
    out = subprocess.run(
        [str(tree / ".venv" / "bin" / "python"), str(tree / "bench" / "stream.py"), *STREAM_ARGS],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    cpu = re.search(r"CPU per document\s+([\d.]+) ms", out)
    detect = re.search(r"detect ([\d,]+) µs", out)
    if cpu is None or detect is None:
        sys.exit(f"no figures in the output of {tree}/bench/stream.py")
    return float(cpu.group(1)), float(detect.group(1).replace(",", ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", type=Path, required=True, help="the other checkout")
    parser.add_argument("--pairs", type=int, default=6)
    args = parser.parse_args()
    if not (ROOT.parent / "shared" / "data").is_dir():
        print("skipped: no ../shared/data")
        return 0
    cpu_ratios: list[float] = []
    detect_ratios: list[float] = []
    for i in range(args.pairs):
        this, other = run(ROOT), run(args.other.resolve())
        cpu_ratios.append(this[0] / other[0])
        detect_ratios.append(other[1] / this[1])
        print(
            f"{time.strftime('%H:%M')} pair {i + 1}: CPU per document {this[0]:.2f} / "
            f"{other[0]:.2f} ms = {cpu_ratios[-1]:.3f}; detect {this[1]:.0f} / {other[1]:.0f} µs,"
            f" {detect_ratios[-1]:.2f}x faster",
            flush=True,
        )
    print(
        f"median of {args.pairs}: CPU per document {statistics.median(cpu_ratios):.3f}x the "
        f"other's, detect stage {statistics.median(detect_ratios):.2f}x faster"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
