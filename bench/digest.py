"""A digest of every span the detector finds on the PhysioNet dev split: a refactoring that
must not change behaviour (moving word lists to data files, say) prints the same digest
before and after.

    .venv/bin/python bench/digest.py [--corpus DIR] [--policy FILE] [--dump FILE] [--no-memos]
                                 [--no-compiled]

Runs ``Detector`` (``Policy.load()`` unless ``--policy``) over every note of ``id.text``,
twice: with the patients' known names (``pid_patientname.txt``, as ``deidstream evaluate
--known-names`` gives them) and without. For each run it prints the number of spans and the
sha256 of the sorted ``note start end category`` lines. ``--dump`` writes those lines (the run
with known names) so two dumps can be compared with ``diff`` when the digests differ; the dump
holds offsets and categories only, never the text. ``--no-memos`` runs under
``memos(False)``: every memo computes without storing (the same digest shows the memos change
nothing). ``--no-compiled`` runs the Python code in place of every compiled helper
(``pipelines.compiled``): the same digest shows the helpers change nothing. Skips (exit 0) when
the corpus is absent.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipelines.compiled import compiled  # noqa: E402
from pipelines.corpus import Note, load_patient_names, read_notes  # noqa: E402
from pipelines.document import Identifiers  # noqa: E402
from pipelines.memo import memos  # noqa: E402
from pipelines.phi.base import Doc  # noqa: E402
from pipelines.phi.detector import Detector  # noqa: E402
from pipelines.policy import Policy  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "physionet" / "dev"


def span_lines(detector: Detector, notes: list[Note], known: dict[str, Identifiers]) -> list[str]:
    """``patient:note start end category`` for every span of every note, sorted."""
    lines: list[str] = []
    for note in notes:
        doc = Doc(note.text, known.get(note.patient, Identifiers()))
        lines.extend(
            f"{note.patient}:{note.note}\t{s.start}\t{s.end}\t{s.category.value}"
            for s in detector.detect(doc)
        )
    lines.sort()
    return lines


def digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--policy", type=Path, default=None)
    ap.add_argument("--dump", type=Path, default=None, help="write the span lines here")
    ap.add_argument("--no-memos", action="store_true", help="every memo off (memos(False))")
    ap.add_argument(
        "--no-compiled", action="store_true", help="the Python code of every compiled helper"
    )
    args = ap.parse_args()
    with memos(not args.no_memos), compiled(not args.no_compiled):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    text_path = args.corpus / "id.text"
    if not text_path.is_file():
        print(f"skipped: no corpus at {text_path}")
        return 0
    notes = [n for n in read_notes(text_path, "physionet") if isinstance(n, Note)]
    names_path = args.corpus / "pid_patientname.txt"
    known = load_patient_names(names_path) if names_path.is_file() else {}
    detector = Detector(Policy.load(args.policy))
    print(f"notes: {len(notes)}")
    for label, given in (("known names", known), ("no names", {})):
        lines = span_lines(detector, notes, given)
        print(f"{label:12} spans {len(lines):6}  sha256 {digest(lines)}")
        if args.dump is not None and given is known:
            args.dump.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
