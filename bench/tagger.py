"""The learned tagger alone on the PhysioNet dev split: where its time per note goes.

    .venv/bin/python bench/tagger.py [--corpus DIR] [--repeat N]

Each note's tokens are taken once, as the detector hands them over (``lexicons.tokens``),
so only the tagger is timed: ``Featurizer.encode`` (items and packed feature rows),
crfsuite (``set``, Viterbi, the marginals of "not PHI"), and ``Tagger.tag`` whole (the
two, plus the spans). "first sight" is a fresh featurizer's first pass (every distinct
word's features worked out once: the memo's misses), "again" the best of ``--repeat``
passes after it. CPU time of this process (``time.process_time``), after ``gc.freeze()``
as the service does. Speed figures are printed here and never asserted in tests. Skips
(exit 0) when the corpus is absent.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipelines.corpus import Note, read_notes  # noqa: E402
from pipelines.phi import lexicons  # noqa: E402
from pipelines.phi.base import Doc  # noqa: E402
from pipelines.phi.lexicons import words_case_of  # noqa: E402
from pipelines.phi.tagger.model import Tagger  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "physionet" / "dev"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--repeat", type=int, default=5, help="warm passes; the best is reported")
    args = ap.parse_args()
    path = args.corpus / "id.text"
    if not path.is_file():
        print(f"bench/tagger.py: {path} not found; skipped")
        return 0
    notes = [n.text for n in read_notes(path, "physionet") if isinstance(n, Note)]
    columns = [lexicons.tokens(Doc(text)).columns for text in notes]
    cases = [words_case_of(text) for text in notes]
    tagger = Tagger()
    tagger.featurizer.warm()
    gc.collect()
    gc.freeze()
    n = len(notes)

    def encode() -> None:
        featurizer = tagger.featurizer
        for text, (starts, _, words), one_case in zip(notes, columns, cases, strict=True):
            featurizer.encode(text, starts, words, one_case)

    def tag() -> None:
        for text, cols in zip(notes, columns, strict=True):
            tagger.tag(text, cols)

    encoded = [
        tagger.featurizer.encode(text, starts, words, one_case)
        for text, (starts, _, words), one_case in zip(notes, columns, cases, strict=True)
    ]
    tagger.featurizer = Tagger().featurizer  # a fresh memo: the first pass sees every word new
    crf = tagger._open()
    outside = tagger._model.labels.index("O")

    def crfsuite() -> None:
        for note in encoded:
            if note.items:
                crf.set(note.rows.packed, note.rows.counts)
                crf.viterbi()
                crf.marginals(outside)

    first = _timed(tag) / n * 1e6
    words = sum(len(memo) for memo in tagger.featurizer._words.values())
    print(f"dev notes: {n}; distinct (word, case) pairs: {words}")
    print(f"  {'tag, first sight (every word new)':<44}{first:>8.1f} µs/note")
    for label, run in (("tag, again", tag), ("  encode", encode), ("  crfsuite", crfsuite)):
        best = min(_timed(run) for _ in range(max(1, args.repeat))) / n * 1e6
        print(f"  {label:<44}{best:>8.1f} µs/note")
    return 0


def _timed(run: Callable[[], None]) -> float:
    t0 = time.process_time()
    run()
    return time.process_time() - t0


if __name__ == "__main__":
    raise SystemExit(main())
