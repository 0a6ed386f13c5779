"""A digest of every span the detector finds on the PhysioNet dev split.

    .venv/bin/python bench/memo_digest.py [--corpus DIR] [--no-memos]

Runs ``Detector(Policy.load())`` over every note of ``id.text`` and prints the sha256 of all
(note, start, end, category) spans, once without and once with the patients' known names
(``pid_patientname.txt``), so a change meant to keep behaviour (a memo added, changed or
removed) can be checked to keep every span. ``--no-memos`` runs under ``memos(False)``: every
memo computes without storing. Skips (exit 0) when the corpus is absent.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipelines.corpus import Note, load_patient_names, read_notes  # noqa: E402
from pipelines.document import Identifiers  # noqa: E402
from pipelines.phi.base import Doc  # noqa: E402
from pipelines.phi.detector import Detector  # noqa: E402
from pipelines.policy import Policy  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "physionet" / "dev"


def digest(notes: list[Note], known: dict[str, Identifiers]) -> tuple[str, int]:
    """The sha256 of every span over ``notes`` and the number of spans."""
    detector = Detector(Policy.load())
    h = hashlib.sha256()
    count = 0
    for note in notes:
        for span in detector.detect(Doc(note.text, known.get(note.patient, Identifiers()))):
            h.update(f"{note.index}|{span.start}|{span.end}|{span.category}\n".encode())
            count += 1
    return h.hexdigest(), count


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--no-memos", action="store_true", help="every memo off (memos(False))")
    args = ap.parse_args()
    text_path = args.corpus / "id.text"
    if not text_path.is_file():
        print(f"bench/memo_digest.py: {text_path} not found; skipped")
        return 0
    notes = [n for n in read_notes(text_path, "physionet") if isinstance(n, Note)]
    names_path = args.corpus / "pid_patientname.txt"
    known = load_patient_names(names_path) if names_path.is_file() else {}
    switch: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if args.no_memos:
        from pipelines.memo import memos

        switch = memos(False)
    with switch:
        for label, names in (("no known names", {}), ("known names", known)):
            value, count = digest(notes, names)
            print(f"{label:<16}{len(notes)} notes  {count} spans  sha256 {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
