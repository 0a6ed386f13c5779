"""Ingest throughput, one core: HL7 v2 and FHIR messages parsed per second.

Run: .venv/bin/python bench/ingest.py [--seconds 2] [--corpus DIR] [--count 2000]

Inputs: the public samples in ../shared/data/samples (when present) and our fixtures; and,
when the PhysioNet dev corpus is present, its notes wrapped as bench/process.py wraps them
(ORU^R01 with one TX OBX per line, and DocumentReference with a base64 attachment). Every
rate is messages (or documents) per second of this process's CPU time, single-threaded,
including the dead-letter outcomes (errors are part of the stream too). hl7apy's
``parse_message`` and fhir.resources validation are measured on the same inputs for scale.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipelines.errors import InputError  # noqa: E402
from pipelines.fhir.parse import loads, parse_ndjson, parse_resource  # noqa: E402
from pipelines.hl7.er7 import read_message  # noqa: E402
from pipelines.hl7.framing import split_messages  # noqa: E402
from pipelines.ingest import parse_input  # noqa: E402

SAMPLES = ROOT.parent / "shared" / "data" / "samples"
FIXTURES = ROOT / "tests" / "fixtures"
LIMIT = 16 << 20


def _files(sub: str, suffixes: tuple[str, ...]) -> list[bytes]:
    paths = sorted((FIXTURES / sub).glob("*"))
    if (SAMPLES / sub).exists():
        paths += sorted((SAMPLES / sub).glob("*"))
    return [p.read_bytes() for p in paths if p.suffix in suffixes and not p.name.startswith("err-")]


def rate(fn: Callable[[bytes], int], inputs: list[bytes], seconds: float) -> tuple[float, int]:
    """(units per CPU second, units per pass): repeat passes over ``inputs`` for ``seconds``.

    Process CPU time, not wall time: "per core" even when other work shares the machine.
    """
    per_pass = sum(fn(raw) for raw in inputs)
    done = 0
    start = time.process_time()
    while True:
        for raw in inputs:
            done += fn(raw)
        elapsed = time.process_time() - start
        if elapsed >= seconds:
            return done / elapsed, per_pass


def ingest_count(raw: bytes) -> int:
    try:
        return max(1, len(parse_input(raw, max_bytes=LIMIT)))
    except InputError as e:
        docs = getattr(e, "documents", ())
        return max(1, len(docs))


def reader_only(raw: bytes) -> int:
    n = 0
    for m in split_messages(raw.removeprefix(b"\xef\xbb\xbf")):
        with contextlib.suppress(InputError):
            read_message(m)
        n += 1
    return n


def hl7apy_parse(raw: bytes) -> int:
    import re

    from hl7apy.parser import parse_message

    text = raw.removeprefix(b"\xef\xbb\xbf").decode("latin-1")
    # hl7apy raises many kinds of errors on the samples; only its speed matters here
    with contextlib.suppress(Exception):
        parse_message(re.sub(r"\r\n|\n", "\r", text).strip(), find_groups=False)
    return 1


def fhir_validated(raw: bytes) -> int:
    body = raw.removeprefix(b"\xef\xbb\xbf")
    try:
        if body.lstrip()[:1] == b"{" and b"\n{" in body.strip():
            outcomes = parse_ndjson(body, validate=True)
        else:
            outcomes = parse_resource(loads(body), validate=True)
    except InputError:
        return 1
    return max(1, len(outcomes))


def corpus_inputs(corpus: Path, count: int) -> list[tuple[bytes, str]]:
    """The notes as bench/process.py feeds them (bench/stream.py's builders), or []."""
    import importlib.util

    if not (corpus / "id.text").is_file():
        return []
    spec = importlib.util.spec_from_file_location("bench_process", ROOT / "bench" / "process.py")
    assert spec is not None and spec.loader is not None
    process = importlib.util.module_from_spec(spec)
    sys.modules["bench_process"] = process
    spec.loader.exec_module(process)
    found: list[tuple[bytes, str]] | None = process.corpus_inputs(corpus, count)
    return found or []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared/data/physionet/dev")
    parser.add_argument("--count", type=int, default=2000, help="corpus inputs (half each)")
    args = parser.parse_args()
    notes = corpus_inputs(args.corpus, args.count)
    for kind, label in (("hl7v2", "ORU^R01"), ("fhir", "DocumentReference")):
        inputs = [raw for raw, hint in notes if hint == kind]
        if inputs:
            per_second, _ = rate(ingest_count, inputs, args.seconds)
            print(
                f"{'PhysioNet notes as ' + label + ' parse_input (µs/doc CPU)':<72} "
                f"{1e6 / per_second:>10,.1f}   ({len(inputs)} docs, {per_second:,.0f}/s)"
            )
    hl7 = _files("hl7v2", (".hl7",))
    fhir = _files("fhir", (".json", ".ndjson"))
    markup = [r for r in hl7 if b"|ED|" in r and (b"html" in r.lower() or b"xml" in r.lower())]
    plain = [r for r in hl7 if r not in markup]
    small = [r for r in hl7 if len(r) <= 20_000]

    print(
        f"inputs: {len(hl7)} HL7 v2 files, {len(fhir)} FHIR files (samples present: {SAMPLES.exists()})"
    )
    rows = [
        ("HL7 v2 parse_input (all files, msgs/s)", ingest_count, hl7),
        ("HL7 v2 parse_input (no embedded HTML/XML document, msgs/s)", ingest_count, plain),
        (
            "HL7 v2 parse_input (OBX ED HTML/XML: 70 KB HTML, 17 KB CDA, msgs/s)",
            ingest_count,
            markup,
        ),
        ("HL7 v2 ER7 reader only (split+decode+fields, msgs/s)", reader_only, hl7),
        ("FHIR parse_input (documents/s)", ingest_count, fhir),
        ("FHIR with fhir.resources validation (documents/s)", fhir_validated, fhir),
    ]
    for label, fn, inputs in rows:
        if not inputs:
            continue
        per_second, per_pass = rate(fn, inputs, args.seconds)
        print(f"{label:<72} {per_second:>10,.0f}   ({per_pass} per pass)")
    per_second, _ = rate(hl7apy_parse, small[:8], min(args.seconds, 2.0))
    print(f"{'reference: hl7apy parse_message (files <= 20 KB, msgs/s)':<72} {per_second:>10,.0f}")


if __name__ == "__main__":
    main()
