"""Digest of the detector's spans over the dev split, to show a change left them alone.

    .venv/bin/python bench/digest.py [--corpus ../shared/data/physionet/dev] [--list FILE]

Every note of the split through ``Detector.detect`` with its patient's known names (as
``deidstream evaluate --known-names`` gives them); every span's note, start, end, category
and confidence hashed in order. Prints the span count and the first 16 hex digits of the
sha256; ``--list FILE`` also writes the spans one a line, to diff two runs. Skips (exit 0)
when the corpus is absent.
"""

from __future__ import annotations

import argparse
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--list", type=Path, default=None, help="write the spans here too")
    args = ap.parse_args()
    text_path = args.corpus / "id.text"
    if not text_path.is_file():
        print(f"bench/digest.py: {text_path} not found; skipped")
        return 0
    notes = [n for n in read_notes(text_path, "physionet") if isinstance(n, Note)]
    names_path = args.corpus / "pid_patientname.txt"
    known = load_patient_names(names_path) if names_path.is_file() else {}
    detector = Detector(Policy.load())
    digest = hashlib.sha256()
    lines: list[str] = []
    count = 0
    for note in notes:
        doc = Doc(note.text, known.get(note.patient, Identifiers()))
        for s in detector.detect(doc):
            line = f"{note.patient}/{note.note} {s.start} {s.end} {s.category} {s.confidence!r}"
            digest.update(line.encode() + b"\n")
            lines.append(line)
            count += 1
    if args.list:
        args.list.write_text("\n".join(lines) + "\n")
    print(f"dev spans {count} {digest.hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
