"""The fixed cost of a process that detects, part by part (session 15): CPU seconds of the
detector's imports, each word table's load, the holiday names, ``Detector()`` and the first
note, in one fresh process. Needs no corpus.

    .venv/bin/python bench/startup.py [NOTE_FILE]

``NOTE_FILE``: a PhysioNet ``id.text`` file whose first note is timed (default: an invented
note). Run it against another checkout with ``PYTHONPATH=that/checkout`` from a directory
holding no package of the project, alternating runs (the machine is shared).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

# bench/ itself holds modules named as the packages (bench/keystore.py): not on the path; this
# checkout last, so a PYTHONPATH checkout is the one measured
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]
sys.path.append(str(Path(__file__).resolve().parents[1]))

NOTE = "Seen by Dr. Greta Quonset at Oakdale Regional on 3/4/2021; follow up in Lakeview."
TABLES = ("drug_words", "first_names", "last_names", "_english", "us_states", "us_cities")


def main() -> int:
    clock = time.process_time
    parts: list[tuple[str, float]] = []
    start = clock()
    from pipelines.phi import lexicons
    from pipelines.phi.detector import Detector
    from pipelines.phi.recognizers.date_patterns import holiday_pattern

    parts.append(("imports", clock() - start))
    for name in TABLES:
        began = clock()
        getattr(lexicons, name)()
        parts.append((name, clock() - began))
    began = clock()
    holiday_pattern()
    parts.append(("holiday_pattern", clock() - began))
    began = clock()
    detector = Detector()
    parts.append(("Detector()", clock() - began))
    text = NOTE
    if len(sys.argv) > 1:
        text = Path(sys.argv[1]).read_text(encoding="utf-8").split("||||", 3)[-1]
        text = text.split("||||END_OF_RECORD", 1)[0]
    began = clock()
    detector.detect(text)
    parts.append(("first note", clock() - began))
    print(" | ".join(f"{name} {seconds:.3f}" for name, seconds in parts) + f" | all {clock():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
