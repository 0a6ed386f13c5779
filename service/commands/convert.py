"""``deidstream convert FILE...``: HL7 v2 / FHIR files in, research DocumentReferences out.

The same pipeline as the service (parse → version dedup → de-identify → research JSON),
without a broker: one DocumentReference per JSON line on stdout, or one file per document
under ``--out``. What did not become a document is said on stderr, one line per input
(reason class and reason, never content, never a traceback); the exit status is 1 if any
input failed or was held back. Version marks are acknowledged once an input's outputs are
written, so converting the same file again against the same key store says ``duplicate``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from pipelines.errors import DeidstreamError, PartialInput

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


def build_processor(policy_file: Path | None, *, annotations: bool) -> Any:
    from keystore.config import default_store_from_env
    from pipelines.policy import Policy
    from pipelines.process import Processor

    policy = Policy.load(policy_file)
    return Processor(policy=policy, store=default_store_from_env(), annotations=annotations)


def _say(path: Path, what: str) -> None:
    typer.echo(f"{path}: {what}", err=True)


def _emit(outcomes: Sequence[Any], path: Path, out_dir: Path | None) -> bool:
    """Write publish outcomes; report the rest. True if every document made it out."""
    ok = True
    for i, outcome in enumerate(outcomes, start=1):
        where = f"document {i}"
        if outcome.kind == "publish":
            headers = dict(outcome.headers)
            if out_dir is None:
                sys.stdout.buffer.write(outcome.value + b"\n")
                sys.stdout.buffer.flush()
            else:
                name = f"{headers.get('version', outcome.research_key)}.json"
                (out_dir / name).write_bytes(outcome.value)
            if "near-duplicate-score" in headers:
                _say(path, f"{where}: near-duplicate of another visit "
                           f"(score {headers['near-duplicate-score']})")
        elif outcome.kind == "tombstone":
            _say(path, f"{where}: tombstone (entered in error) key={outcome.research_key}")
        elif outcome.kind == "held":
            ok = False
            _say(path, f"{where}: held [{outcome.reason_class}] {outcome.reason}")
        else:
            reason = f" ({outcome.reason})" if outcome.reason else ""
            _say(path, f"{where}: {outcome.kind}{reason}")
    return ok


def convert_files(
    files: Sequence[Path], processor: Any, *, out_dir: Path | None = None
) -> int:
    """Convert every file; return the number of inputs that failed or were held."""
    failed = 0
    for path in files:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            _say(path, f"error [unreadable] {exc.strerror or type(exc).__name__}")
            failed += 1
            continue
        input_failed = False
        try:
            hint = content_hint(path)
            outcomes = processor.process(raw, content_hint=hint, now=datetime.now(UTC))
        except PartialInput as exc:
            outcomes = getattr(exc, "outcomes", ()) or ()
            _say(path, f"error [{exc.reason_class}] {exc}")
            input_failed = True
        except DeidstreamError as exc:
            _say(path, f"error [{exc.reason_class}] {exc}")
            failed += 1
            continue
        except Exception as exc:  # noqa: BLE001 - one bad input must not stop the run
            # the type only: messages of foreign exceptions may quote the input
            _say(path, f"error [internal_error] {type(exc).__name__}")
            failed += 1
            continue
        if not _emit(outcomes, path, out_dir):
            input_failed = True
        processor.commit(outcomes)  # written: these versions are acknowledged
        failed += input_failed
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
) -> None:
    """Parse, deduplicate versions, de-identify and write research DocumentReferences."""
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    try:
        processor = build_processor(policy, annotations=annotations)
    except DeidstreamError as exc:
        typer.echo(f"deidstream: cannot start [{exc.reason_class}] {exc}", err=True)
        raise typer.Exit(2) from None
    try:
        failed = convert_files(files, processor, out_dir=out)
    finally:
        close = getattr(processor.store, "close", None)
        if close is not None:
            close()
    if failed:
        typer.echo(f"deidstream: {failed} of {len(files)} inputs failed", err=True)
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("convert")(convert)
