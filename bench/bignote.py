"""One very large note through the whole de-identification path: time and peak RSS.

    .venv/bin/python bench/bignote.py [--sizes 1,2,5] [--profile /tmp/bignote.prof] [--policy FILE]
                                      [--filler 6] [--texts 60]

For each size (MB of text) a child process builds one plain-text document of that size from
invented paragraphs (``pipelines.phi.synthetic`` short texts with PHI between invented
clinical sentences; ``--filler 6``: about one PHI phrase per 150 characters) and runs it
through ``Processor.process_document``: detect → replace → leak guard → render, with an
in-memory key store, after one small warm-up document (lexicons and the tagger load there)
with the service's word-list warm-up and ``gc.freeze()`` after it.
Prints wall and CPU seconds (CPU is the figure to read on a shared machine), the stage
split, the child's peak RSS and its resident size before the note. Needs no corpus. Speed
figures are printed here, never asserted.

Target (issue 15 item 14): 5 MB in < 3 s and < 200 MB.

    .venv/bin/python bench/bignote.py --dev [--mb 5] [--corpus DIR] [--runs 1] [--profile F]

``--dev`` (issue 24): the dev split's notes (``id.text``, cycled, joined by blank lines, cut
at ``--mb`` million characters) written to one text file and run through the
``deidstream deidentify FILE --format text`` command in a fresh interpreter, as a user
would: the whole process (imports, model and word-list loading, the note, the output), in a
temporary directory (its default local key store). Prints wall, CPU (user + system) and peak
RSS of that process, per run. ``--profile F`` runs it under cProfile (F: the stats file).
Target (issue 24): < 10 s and < 400 MB. Skips (exit 0) without the corpus.
"""

from __future__ import annotations

import argparse
import cProfile
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipelines.phi.synthetic import SyntheticNote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEV_CORPUS = ROOT.parent / "shared" / "data" / "physionet" / "dev"
PROFILED_CLI = """
import cProfile, sys, time
from service.cli import main
out = sys.argv.pop(1)
prof = cProfile.Profile(time.process_time)
try:
    prof.runcall(main)
except SystemExit:
    pass
finally:
    prof.dump_stats(out)
"""

FILLER = (
    "Vital signs stable overnight, afebrile, tolerating a regular diet.",
    "Lungs clear to auscultation bilaterally; no wheezes or crackles.",
    "Continue current antibiotic course and reassess renal function in the morning.",
    "Pain controlled on oral analgesics; ambulating with physical therapy.",
    "Labs notable for mild anemia, potassium 3.9, creatinine at baseline.",
    "Plan discussed with the patient, who agrees and has no further questions.",
)


def _publishable(notes: list[SyntheticNote]) -> list[SyntheticNote]:
    """The short texts the leak guard does not hold on their own: the big note is then
    published and rendered (a held note would skip the render stage)."""
    from keystore.api import PatientState
    from pipelines.deidentify import Deidentifier
    from pipelines.document import ClinicalDocument

    deid = Deidentifier()
    state = PatientState(shift_days=-40, pseudonym="p", seed=b"b" * 32)
    return [n for n in notes if not deid.deidentify(ClinicalDocument(text=n.text), state).held]


def build_text(megabytes: float, seed: int = 1, filler: int = 6, texts: int = 60) -> str:
    """Paragraphs of ``filler`` invented clinical sentences around one short synthetic text
    with PHI (about 4 phrases); filler=6 gives about one PHI phrase per 150 characters. The
    ``texts`` synthetic texts are cycled: the default 60 make a note whose paragraphs repeat
    every 60 (memos of the detector gain from that); more repeat less."""
    from pipelines.phi.synthetic import generate

    target = int(megabytes * 1_000_000)
    # 60 texts of seed 1 share no value written two ways, so the big note is published
    notes = _publishable(generate(texts, seed, "dev"))
    parts: list[str] = []
    size = 0
    i = 0
    while size < target:
        before = [FILLER[(i + k) % len(FILLER)] for k in range(filler // 2)]
        after = [FILLER[(i + k + 3) % len(FILLER)] for k in range(filler - filler // 2)]
        para = " ".join((*before, notes[i % len(notes)].text, *after))
        parts.append(para)
        size += len(para) + 2
        i += 1
    return "\n\n".join(parts)


def _current_rss_mb() -> float:
    """Resident set size now (Linux), to tell the note's share of the peak."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return float("nan")
    return pages * resource.getpagesize() / 2**20


def child(
    megabytes: float, profile: str | None, filler: int, policy_file: str | None, texts: int
) -> int:
    from keystore.memory import InMemoryStore
    from keystore.pseudonyms import Pseudonyms
    from pipelines.document import ClinicalDocument, Identifiers, PersonName
    from pipelines.policy import Policy
    from pipelines.process import Processor
    from service.wiring import freeze_after_warmup, warm_word_lists

    warm_word_lists()  # as the service does, before its processor
    policy = Policy.load(policy_file)
    proc = Processor(policy=policy, store=InMemoryStore(), pseudonyms=Pseudonyms.random())
    # a small document first: lexicons, the tagger model and the census lists load here
    small = ClinicalDocument(
        text="Seen by Dr. Quill on 3/4/2021.",
        patient_id="P0",
        document_id="D0",
        assigning_authority="BENCH",
    )
    proc.process_document(small, now=datetime.now(UTC))
    freeze_after_warmup()  # as the service does after its warm-up
    rss_before = _current_rss_mb()
    text = build_text(megabytes, filler=filler, texts=texts)
    doc = ClinicalDocument(
        text=text,
        patient_id="P1",
        document_id="D1",
        assigning_authority="BENCH",
        identifiers=Identifiers(
            patient_names=(PersonName(family="Quillfeather", given=("Orla",)),)
        ),
    )
    prof = cProfile.Profile() if profile else None
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    if prof:
        prof.enable()
    out = proc.process_document(doc, now=datetime.now(UTC))
    if prof:
        prof.disable()
        prof.dump_stats(profile)
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    stages = ", ".join(f"{k} {v:.2f}" for k, v in sorted(out.stage_seconds.items()) if v >= 0.01)
    print(
        f"{megabytes:>4g} MB ({len(text):,} chars): {seconds:6.2f} s wall, {cpu:6.2f} s CPU, peak RSS {rss:6.0f} MB "
        f"(resident before the note {rss_before:.0f} MB), outcome {out.kind}"
        + (f" ({out.reason})" if out.reason else "")
        + f"\n       stages: {stages}; {sum(out.span_counts.values())} spans replaced"
    )
    return 0


def dev_note(corpus: Path, megabytes: float) -> str:
    """The dev split's notes cycled, joined by blank lines, cut at ``megabytes`` million chars."""
    from pipelines.corpus import Note, read_notes

    texts = [
        n.text.strip() for n in read_notes(corpus / "id.text", "physionet") if isinstance(n, Note)
    ]
    target = int(megabytes * 1_000_000)
    parts: list[str] = []
    size = 0
    i = 0
    while size < target:
        parts.append(texts[i % len(texts)])
        size += len(parts[-1]) + 2
        i += 1
    return "\n\n".join(parts)[:target]


def run_dev(corpus: Path, megabytes: float, runs: int, profile: str | None) -> int:
    """The dev note through ``deidstream deidentify`` in a fresh process: wall, CPU, peak RSS."""
    import os
    import tempfile

    if not (corpus / "id.text").is_file():
        print(f"bench/bignote.py: {corpus / 'id.text'} not found; skipped")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        note = Path(tmp) / "bignote.txt"
        note.write_text(dev_note(corpus, megabytes), encoding="utf-8")
        size = note.stat().st_size
        cli = [sys.executable, "-c", "import sys; from service.cli import main; sys.exit(main())"]
        if profile:
            # CPU time, not wall: on a shared machine the wall clock counts other processes
            cli = [sys.executable, "-c", PROFILED_CLI, profile]
        cmd = [*cli, "deidentify", str(note), "--format", "text", "-o", os.devnull]
        # compiled modules cached as an installed package has them (in the temporary
        # directory, filled by one short run first), even where the environment says not to
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pyc")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        (Path(tmp) / "warm").mkdir()
        (Path(tmp) / "short.txt").write_text("Seen by Dr. Quill on 3/4/2021.\n")
        short = [
            *cmd[: cmd.index(str(note))],
            str(Path(tmp) / "short.txt"),
            *cmd[cmd.index(str(note)) + 1 :],
        ]
        subprocess.run(short, cwd=Path(tmp) / "warm", env=env, capture_output=True, check=False)
        for run in range(runs):
            # a fresh directory per run: the CLI's local key store starts empty each time
            cwd = Path(tmp) / f"run{run}"
            cwd.mkdir()
            wall0 = time.perf_counter()
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stderr=subprocess.PIPE, text=True)
            _, _, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - wall0
            err = proc.stderr.read() if proc.stderr else ""
            tail = " / ".join(line for line in err.splitlines() if line.startswith("deidstream:"))
            print(
                f"dev note {size / 1e6:.2f} MB: {wall:6.2f} s wall, "
                f"{usage.ru_utime + usage.ru_stime:6.2f} s CPU (user {usage.ru_utime:.2f}, "
                f"system {usage.ru_stime:.2f}), peak RSS {usage.ru_maxrss / 1024:.0f} MB; {tail}"
            )
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", action="store_true", help="the dev notes as one note, via the CLI")
    ap.add_argument("--mb", type=float, default=5.0, help="size of the --dev note (MB)")
    ap.add_argument("--corpus", type=Path, default=DEV_CORPUS, help="the dev split (--dev)")
    ap.add_argument("--runs", type=int, default=1, help="runs of the --dev note")
    ap.add_argument("--sizes", default="1,2,5")
    ap.add_argument("--profile", default=None, help="cProfile output (with one size)")
    ap.add_argument("--filler", type=int, default=6, help="clinical sentences per PHI text")
    ap.add_argument("--policy", default=None, help="a policy file (default: the packaged one)")
    ap.add_argument(
        "--texts",
        type=int,
        default=60,
        help="distinct synthetic texts cycled (more: less repeated)",
    )
    ap.add_argument("--child", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dev:
        return run_dev(args.corpus, args.mb, args.runs, args.profile)
    if args.child is not None:
        return child(args.child, args.profile, args.filler, args.policy, args.texts)
    for size in [float(s) for s in args.sizes.split(",") if s.strip()]:
        cmd = [sys.executable, __file__, "--child", str(size), "--filler", str(args.filler)]
        cmd += ["--texts", str(args.texts)]
        if args.profile:
            cmd += ["--profile", args.profile]
        if args.policy:
            cmd += ["--policy", args.policy]
        subprocess.run(cmd, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
