"""``deidstream convert FILE...``: HL7 v2 / FHIR files in, research DocumentReferences out.

The same pipeline as the service (parse → version dedup → de-identify → research JSON),
without a broker: one DocumentReference per JSON line on stdout, or one file per document
under ``--out``. What did not become a document is said on stderr, one line per input
(reason class and reason, never content, never a traceback); the exit status is 1 if any
input failed or was held back. Version marks are acknowledged once an input's outputs are
written, so converting the same file again against the same key store says ``duplicate``
— and so would the stream (``deidstream run``) on that store: ``--no-store`` converts with
a throw-away one (a try-out, the README's first step).
"""

from __future__ import annotations

import base64
import sys
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from pipelines.errors import DeidstreamError, PartialInput
from pipelines.outcome import Outcome

HL7_SUFFIXES = {".hl7", ".er7", ".hl7v2", ".mllp", ".txt"}
FHIR_SUFFIXES = {".json", ".fhir"}
NDJSON_SUFFIXES = {".ndjson", ".jsonl"}


def content_hint(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix in HL7_SUFFIXES:
        return "hl7v2"
    if suffix in NDJSON_SUFFIXES:
        return "ndjson"
    if suffix in FHIR_SUFFIXES:
        return "fhir"
    return None  # let the parser sniff


def build_processor(policy_file: Path | None, *, annotations: bool, store: bool = True) -> Any:
    """The service's processor; ``store=False``: a throw-away in-memory store (nothing read
    or written: new pseudonyms and shifts, no version marks left for the stream)."""
    from keystore.config import default_store_from_env
    from keystore.memory import InMemoryStore
    from pipelines.policy import Policy
    from pipelines.process import Processor

    policy = Policy.load(policy_file)
    patients = default_store_from_env() if store else InMemoryStore()
    return Processor(policy=policy, store=patients, annotations=annotations)


def _say(path: Path, what: str) -> None:
    typer.echo(f"{path}: {what}", err=True)


# the summary's columns, in order: what became of each input's documents
SUMMARY = ("published", "duplicate", "superseded", "held", "dead-lettered", "tombstone", "context")


def summary_line(counts: Counter[str]) -> str:
    """``published 1, duplicate 0, …`` (the last two only when non-zero)."""
    shown = [k for k in SUMMARY[:5]] + [k for k in SUMMARY[5:] if counts[k]]
    return ", ".join(f"{counts[k]} {k}" for k in shown)


def decoded_text(value: bytes) -> str:
    """The research DocumentReference's text: its first attachment, base64-decoded."""
    import orjson

    resource = orjson.loads(value)
    for content in resource.get("content") or []:
        data = (content.get("attachment") or {}).get("data")
        if data:
            return base64.b64decode(data).decode("utf-8", "replace")
    return ""


def _write(outcome: Any, out_dir: Path | None, text: bool) -> None:
    if out_dir is None:
        sys.stdout.buffer.write(outcome.value + b"\n")
        sys.stdout.buffer.flush()
        return
    stem = str(dict(outcome.headers).get("version", outcome.research_key))
    (out_dir / f"{stem}.json").write_bytes(outcome.value)
    if text:
        (out_dir / f"{stem}.txt").write_text(decoded_text(outcome.value), encoding="utf-8")


def _emit(
    outcomes: Sequence[Outcome],
    path: Path,
    out_dir: Path | None,
    counts: Counter[str] | None = None,
    *,
    text: bool = False,
) -> bool:
    """Write publish outcomes; report the rest. True if every document made it out."""
    ok = True
    counts = Counter() if counts is None else counts
    for i, outcome in enumerate(outcomes, start=1):
        where = f"document {i}"
        counts["published" if outcome.kind == "publish" else outcome.kind] += 1
        if outcome.kind == "publish":
            headers = dict(outcome.headers)
            _write(outcome, out_dir, text)
            if "near-duplicate-score" in headers:
                _say(
                    path,
                    f"{where}: near-duplicate of another visit "
                    f"(score {headers['near-duplicate-score']})",
                )
        elif outcome.kind == "tombstone":
            _say(path, f"{where}: tombstone (entered in error) key={outcome.research_key}")
        elif outcome.kind == "held":
            ok = False
            _say(path, f"{where}: held [{outcome.reason_class}] {outcome.reason}")
        else:
            reason = f" ({outcome.reason})" if outcome.reason else ""
            _say(path, f"{where}: {outcome.kind}{reason}")
    return ok


def _convert_one(
    path: Path, processor: Any, out_dir: Path | None, counts: Counter[str], text: bool
) -> bool:
    """One input; True if it failed (unreadable, not parsed, held). ``counts`` gets its
    documents' fates; an input the service would dead-letter counts as ``dead-lettered``."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        _say(path, f"error [unreadable] {exc.strerror or type(exc).__name__}")
        counts["dead-lettered"] += 1
        return True
    input_failed = False
    try:
        hint = content_hint(path)
        outcomes = processor.process(raw, content_hint=hint, now=datetime.now(UTC))
    except PartialInput as exc:
        outcomes = exc.outcomes
        _say(path, f"error [{exc.reason_class}] {exc}")
        counts["dead-lettered"] += len(exc.entry_errors) or 1
        input_failed = True
    except DeidstreamError as exc:
        _say(path, f"error [{exc.reason_class}] {exc}")
        counts["dead-lettered"] += 1
        return True
    except Exception as exc:  # noqa: BLE001 - one bad input must not stop the run
        # the type only: messages of foreign exceptions may quote the input
        _say(path, f"error [internal_error] {type(exc).__name__}")
        counts["dead-lettered"] += 1
        return True
    if not _emit(outcomes, path, out_dir, counts, text=text):
        input_failed = True
    processor.commit(outcomes)  # written: these versions are acknowledged
    return input_failed


def convert_files(
    files: Sequence[Path],
    processor: Any,
    *,
    out_dir: Path | None = None,
    text: bool = False,
) -> int:
    """Convert every file; return the number of inputs that failed or were held. Each input
    ends with its summary line on stderr (published / duplicate / superseded / held /
    dead-lettered), and several inputs with a total."""
    failed = 0
    total: Counter[str] = Counter()
    for path in files:
        counts: Counter[str] = Counter()
        failed += _convert_one(path, processor, out_dir, counts, text)
        _say(path, summary_line(counts))
        total.update(counts)
    if len(files) > 1:
        typer.echo(f"total ({len(files)} inputs): {summary_line(total)}", err=True)
    return failed


def convert(
    files: Annotated[list[Path], typer.Argument(help="HL7 v2 (ER7) or FHIR JSON/NDJSON files.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Write one <id>.json per document here.")
    ] = None,
    policy: Annotated[Path | None, typer.Option("--policy", help="Policy TOML file.")] = None,
    annotations: Annotated[
        bool, typer.Option("--annotations", help="Add surrogate offsets as an extension.")
    ] = False,
    text: Annotated[
        bool,
        typer.Option(
            "--text",
            help="With --out: also write each document's decoded "
            "text as <id>.txt beside its <id>.json.",
        ),
    ] = False,
    no_store: Annotated[
        bool,
        typer.Option(
            "--no-store",
            help="A throw-away key store: nothing read or written, so a later `deidstream "
            "run` on the same store does not see these documents as duplicates.",
        ),
    ] = False,
) -> None:
    """Parse, deduplicate versions, de-identify and write research DocumentReferences."""
    if text and out is None:
        typer.echo(
            "deidstream convert: --text writes beside the JSON files: give --out DIR", err=True
        )
        raise typer.Exit(2)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    try:
        processor = build_processor(policy, annotations=annotations, store=not no_store)
    except DeidstreamError as exc:
        typer.echo(f"deidstream: cannot start [{exc.reason_class}] {exc}", err=True)
        raise typer.Exit(2) from None
    try:
        failed = convert_files(files, processor, out_dir=out, text=text)
    finally:
        close = getattr(processor.store, "close", None)
        if close is not None:
            close()
    if failed:
        typer.echo(f"deidstream: {failed} of {len(files)} inputs failed", err=True)
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("convert")(convert)
