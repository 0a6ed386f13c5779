"""De-identification throughput and leak rate on the PhysioNet dev split.

    .venv/bin/python bench/deidentify.py [--corpus DIR] [--policy FILE] [--backends sqlite,postgresql,memory]
                                         [--pg postgresql://postgres@127.0.0.1:5432/test]

For each key store backend (each in its own process, so peak RSS is its own): every note goes
through detect → replace → leak guard with its patient's state from the store (get_or_create,
save when the maps grew, flush at the end) — a cold pass on an empty store, then a warm pass
from a fresh store instance on the same database (the "after a restart" case). Prints notes/s
(wall and per CPU-second), the time split by stage, and peak RSS.

Leak rate (from the SQLite child): the share of gold PHI phrases (id-phi.phrase) still present
verbatim (whole token, case-sensitive) in the output, by category, with our own surrogate spans
masked (a shifted date may legitimately read like another original date); plus known patient
name parts (pid_patientname.txt) found anywhere in the output, case-insensitive. Held-back notes
are counted both ways: all outputs, and only what would be published.

Speed figures are printed here, never asserted in tests. Skips (exit 0) without the corpus.
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from keystore import Keyring, open_store  # noqa: E402
from keystore.memory import InMemoryStore  # noqa: E402
from pipelines.corpus import Note, load_gold, load_patient_names, read_notes  # noqa: E402
from pipelines.deidentify import Deidentifier, DeidResult  # noqa: E402
from pipelines.document import ClinicalDocument, Identifiers  # noqa: E402
from pipelines.leak_guard import word_pattern  # noqa: E402
from pipelines.policy import Policy  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "physionet" / "dev"
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
TARGET_NOTES_PER_S = 800
AUTHORITY = "physionet"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--policy", type=Path, default=None)
    ap.add_argument("--backends", default="sqlite,postgresql")
    ap.add_argument("--pg", default=DEFAULT_PG)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if not (args.corpus / "id.text").is_file():
        print(f"bench/deidentify.py: {args.corpus / 'id.text'} not found; skipped")
        return 0
    if args.child:
        return run_backend(args)
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        cmd = [
            sys.executable,
            __file__,
            "--corpus",
            str(args.corpus),
            "--pg",
            args.pg,
            "--child",
            backend,
        ]
        if args.policy:
            cmd += ["--policy", str(args.policy)]
        subprocess.run(cmd, check=False)
    return 0


def run_backend(args: argparse.Namespace) -> int:
    backend = args.child
    notes = [n for n in read_notes(args.corpus / "id.text", "physionet") if isinstance(n, Note)]
    names_path = args.corpus / "pid_patientname.txt"
    known = load_patient_names(names_path) if names_path.is_file() else {}
    docs = [
        ClinicalDocument(
            text=n.text,
            identifiers=known.get(n.patient, Identifiers()),
            patient_id=n.patient,
            assigning_authority=AUTHORITY,
            document_id=n.note,
        )
        for n in notes
    ]
    deid = Deidentifier(Policy.load(args.policy), timer=time.perf_counter)
    deid.deidentify(docs[0], deid.new_state())  # load lexicons, census lists, zip codes
    rss_setup = _peak_rss_mb()

    with tempfile.TemporaryDirectory() as tmp:
        keyring = Keyring.generate()
        if backend == "sqlite":
            url = f"sqlite:///{Path(tmp) / 'bench.sqlite3'}"
        elif backend == "postgresql":
            url = f"{args.pg}?schema=bench_{uuid.uuid4().hex[:12]}"
        elif backend == "memory":
            url = ""
        else:
            print(f"unknown backend {backend}")
            return 2

        def make_store():  # type: ignore[no-untyped-def]
            return InMemoryStore() if backend == "memory" else open_store(url, keyring)

        try:
            store = make_store()
        except Exception as exc:  # noqa: BLE001 - a bench reports, it does not crash
            print(f"[{backend}] store unavailable ({type(exc).__name__}); skipped")
            return 0
        print(f"[{backend}] {len(notes)} notes, {len({n.patient for n in notes})} patients")
        cold, results = _pass(deid, docs, store)
        store_warm = store if backend == "memory" else make_store()
        if backend != "memory":
            store.close()
        warm, _ = _pass(deid, docs, store_warm)
        if backend == "postgresql":
            _drop_schema(args.pg, url)
        if backend != "memory":
            store_warm.close()

    for label, stats in (("cold (new patients)", cold), ("warm (restart, states read back)", warm)):
        rate = len(docs) / stats["wall"]
        cpu_rate = len(docs) / stats["cpu"]
        verdict = "met" if cpu_rate >= TARGET_NOTES_PER_S else "NOT met"
        print(
            f"[{backend}] {label}: {rate:,.0f} notes/s wall, {cpu_rate:,.0f} notes/CPU-s "
            f"(target >= {TARGET_NOTES_PER_S}/core: {verdict}); "
            f"detect {stats['detect'] / len(docs) * 1e6:.0f} µs, replace {stats['replace'] / len(docs) * 1e6:.0f} µs, "
            f"guard {stats['guard'] / len(docs) * 1e6:.0f} µs, store {stats['store'] / len(docs) * 1e6:.0f} µs per note"
        )
    held = sum(1 for r in results if r.held)
    print(f"[{backend}] held back by the leak guard: {held} of {len(results)} notes")
    print(f"[{backend}] peak RSS: {_peak_rss_mb():.0f} MB (after setup: {rss_setup:.0f} MB)")
    if backend == "sqlite":
        leak_report(args.corpus, notes, results, known)
    return 0


def _pass(
    deid: Deidentifier, docs: list[ClinicalDocument], store
) -> tuple[dict[str, float], list[DeidResult]]:  # type: ignore[no-untyped-def]
    stats: Counter[str] = Counter()
    results = []
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for doc in docs:
        t = time.perf_counter()
        state = store.get_or_create(AUTHORITY, doc.patient_id, deid.state_factory(store))
        stats["store"] += time.perf_counter() - t
        result = deid.deidentify(doc, state)
        for stage, secs in result.stage_seconds.items():
            stats[stage] += secs
        if result.state_changed:
            t = time.perf_counter()
            store.save(AUTHORITY, doc.patient_id, state)
            stats["store"] += time.perf_counter() - t
        results.append(result)
    t = time.perf_counter()
    store.flush()
    stats["store"] += time.perf_counter() - t
    stats["wall"] = time.perf_counter() - wall0
    stats["cpu"] = time.process_time() - cpu0
    return dict(stats), results


def leak_report(
    corpus: Path, notes: list[Note], results: list[DeidResult], known: dict[str, Identifiers]
) -> None:
    gold = load_gold(corpus / "id-phi.phrase")
    uncovered: Counter[str] = Counter()
    leaked_all: Counter[str] = Counter()
    leaked_pub: Counter[str] = Counter()
    total: Counter[str] = Counter()
    known_all = known_pub = known_total = 0
    for note, result in zip(notes, results, strict=True):
        masked = list(result.text)
        for span in result.spans:
            masked[span.start : span.end] = "\x00" * span.length
        scan = "".join(masked)
        for phrase in gold.get(note.key, []):
            text = phrase.text.strip()
            if not text:
                continue
            total[phrase.category] += 1
            if not any(r.start <= phrase.start and phrase.end <= r.end for r in result.replaced):
                uncovered[phrase.category] += 1
            if re.search(rf"(?<![A-Za-z0-9]){re.escape(text)}(?![A-Za-z0-9])", scan):
                leaked_all[phrase.category] += 1
                if not result.held:
                    leaked_pub[phrase.category] += 1
        ids = known.get(note.patient)
        for name in ids.patient_names if ids else ():
            for part in name.parts:
                if len(part) < 2:
                    continue
                known_total += 1
                if re.search(
                    word_pattern(part), result.text, re.IGNORECASE
                ):  # "don't" is not "Don"
                    known_all += 1
                    known_pub += 0 if result.held else 1
    print(
        "leak rate: gold phrases still present verbatim (whole token, our spans masked) in all "
        "outputs / in published ones; and gold phrases whose own position was not replaced:"
    )
    rows = [*sorted(total), "ALL"]
    for category in rows:
        n = total[category] if category != "ALL" else sum(total.values())
        a = leaked_all[category] if category != "ALL" else sum(leaked_all.values())
        p = leaked_pub[category] if category != "ALL" else sum(leaked_pub.values())
        u = uncovered[category] if category != "ALL" else sum(uncovered.values())
        print(
            f"  {category:<20}{a:>4}/{n:<4} {a / n:>6.1%}   published {p:>4} {p / n:>6.1%}"
            f"   not replaced in place {u:>4} {u / n:>6.1%}"
        )
    print(
        f"known patient name parts (per note) surviving: {known_all}/{known_total} in all outputs, "
        f"{known_pub} published"
    )
    dates = [r.text[sp.start : sp.end] for r in results for sp in r.spans if sp.category == "DATE"]
    tagged = sum(1 for d in dates if d == "[DATE]")
    print(f"date spans: {len(dates)}, shifted {len(dates) - tagged}, tagged [DATE] {tagged}")


def _drop_schema(pg: str, url: str) -> None:
    import psycopg

    schema = url.rsplit("schema=", 1)[1]
    try:
        with psycopg.connect(pg, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')  # noqa: S608 - our own name
    except Exception as exc:  # noqa: BLE001
        print(f"could not drop bench schema ({type(exc).__name__})")


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 / (1024 if sys.platform == "darwin" else 1)


if __name__ == "__main__":
    raise SystemExit(main())
