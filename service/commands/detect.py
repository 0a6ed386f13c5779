"""``deidstream detect``: run the detector over a corpus file and write the spans it finds.

Records that cannot be read (or make the detector fail) are reported on stderr by position
only — never their content — and the run goes on; the exit status is 1 if any record failed.
"""

from __future__ import annotations

import gc
import io
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from itertools import chain
from pathlib import Path
from typing import Annotated, TextIO

import typer

from pipelines.corpus import (
    Note,
    RecordError,
    load_patient_names,
    read_notes,
    spans_json,
    write_phi,
)
from pipelines.document import Identifiers
from pipelines.phi import registry
from pipelines.phi.base import Doc
from pipelines.phi.combine import unite
from pipelines.phi.detector import Detector
from pipelines.phi.explain import explained
from pipelines.phi.passes import declared
from pipelines.policy import Policy
from pipelines.spans import Span
from service.commands.detect_pool import (
    Item,
    Result,
    choose_jobs,
    look_ahead,
    ordered_results,
)
from service.commands.options import PolicyFile, known_names_file
from service.cpus import usable_cpus


class OutputFormat(StrEnum):
    PHYSIONET = "physionet"
    JSON = "json"
    TEXT = "text"


class InputFormat(StrEnum):
    AUTO = "auto"
    PHYSIONET = "physionet"
    JSON = "json"
    TEXT = "text"


def report_error(err: RecordError) -> None:
    typer.echo(f"deidstream: could not read {err.describe()}; skipped", err=True)


def detect_notes(
    items: Iterable[Note | tuple[Note, Identifiers] | RecordError],
    detector: Detector,
    known: dict[str, Identifiers] | None = None,
    explain: bool = False,
) -> Iterator[tuple[Note, list[Span]] | RecordError]:
    """Detect spans note by note; unreadable records and detector failures become errors.
    With ``explain``, each span's ``source`` names every pass that found it ("a+b")."""
    known = known or {}
    for item in items:
        if isinstance(item, RecordError):
            yield item
            continue
        if isinstance(item, tuple):  # a clinical message's document, with its identifiers
            item, identifiers = item
        else:
            identifiers = known.get(item.patient, Identifiers())
        doc = Doc(item.text, identifiers)
        try:
            spans = _explained(detector, doc) if explain else detector.detect(doc)
        except Exception as exc:  # noqa: BLE001 - one bad note must not stop the run
            yield RecordError(
                item.index,
                item.line,
                f"detector failed ({type(exc).__name__})",
                item.patient,
                item.note,
            )
            continue
        yield item, spans


def _explained(detector: Detector, doc: Doc) -> list[Span]:
    """The detector's spans, each with the passes behind it as its source."""
    analysed, kept, learned = detector.parts(doc)
    return explained(detector.finish(doc, analysed, kept, learned), unite(kept, learned))


def redacted(text: str, spans: list[Span], explain: bool = False) -> str:
    """The note with each detected region replaced by a ``[GROUP]`` tag (``[PHI]`` if several);
    with ``explain``, ``[GROUP:pass]``."""
    regions: dict[tuple[int, int], set[str]] = {}
    for span in spans:
        tag = f"{span.category.group}:{span.source}" if explain else span.category.group
        regions.setdefault((span.start, span.end), set()).add(tag)
    out: list[str] = []
    pos = 0
    for (start, end), groups in sorted(regions.items()):
        if start < pos:  # merged spans never overlap; be safe with any other input
            start = pos
            if end <= start:
                continue
        out.append(text[pos:start])
        out.append(f"[{next(iter(groups))}]" if len(groups) == 1 else "[PHI]")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def write_note(
    out: TextIO, fmt: OutputFormat, note: Note, spans: list[Span], explain: bool = False
) -> None:
    """One note's spans; with ``explain``, the pass of each too (a fifth ``.phi`` column,
    the JSON ``source``, or ``[GROUP:pass]`` tags)."""
    if fmt is OutputFormat.PHYSIONET and explain:
        out.write(f"Patient {note.patient}\tNote {note.note}\n")
        for idx, s in enumerate(spans, 1):
            out.write(f"{idx}\t{s.start}\t{s.end}\t{s.category.value}\t{s.source}\n")
    elif fmt is OutputFormat.PHYSIONET:
        write_phi(out, note.patient, note.note, spans)
    elif fmt is OutputFormat.JSON:
        out.write(spans_json(note.patient, note.note, spans) + "\n")
    else:
        text = redacted(note.text, spans, explain)
        out.write(f"Patient {note.patient}\tNote {note.note}\n{text}\n")


@dataclass(frozen=True)
class NoteWriter:
    """A chunk of notes to their output text (what :func:`write_note` writes) or errors; the
    same in this process and in a ``--jobs`` worker, so the output is the same."""

    detector: Detector
    known: dict[str, Identifiers]
    format: OutputFormat
    explain: bool = False

    def __call__(self, chunk: list[Item]) -> list[Result]:
        results: list[Result] = []
        for result in detect_notes(chunk, self.detector, self.known, self.explain):
            if isinstance(result, RecordError):
                results.append(result)
                continue
            buffer = io.StringIO()
            write_note(buffer, self.format, *result, explain=self.explain)
            results.append(buffer.getvalue())
        return results


def write_results(
    items: Iterable[Item], writer: NoteWriter, jobs: int, out: TextIO
) -> tuple[int, int]:
    """Detect and write every note of ``items`` (``jobs``: 0 automatic); (records, failed)."""
    head, rest = look_ahead(items)
    jobs = choose_jobs(jobs, len(head), usable_cpus())
    seen = failed = 0
    for result in ordered_results(chain(head, rest), writer, jobs):
        seen += 1
        if isinstance(result, RecordError):
            failed += 1
            report_error(result)
        else:
            out.write(result)
    out.flush()
    return seen, failed


def _detect_all(
    items: Iterable[Item],
    policy: Path | None,
    known_names: Path | None,
    fmt: OutputFormat,
    explain: bool,
    jobs: int,
) -> tuple[int, int]:
    """Load the detector and write every note's output to stdout; (records, failed)."""
    # Loading builds the detector's tables, none of it garbage: no collection walks them
    # (on again once the first notes are done: detect_pool.settle_collector).
    threshold = gc.get_threshold()
    gc.disable()
    try:
        detector = Detector(Policy.load(policy))
        known = load_patient_names(known_names) if known_names else {}
        writer = NoteWriter(detector, known, fmt, explain)
        return write_results(items, writer, jobs, sys.stdout)
    finally:
        gc.enable()
        if sys.stdout is not sys.__stdout__:  # a test runner's, an embedding program's
            gc.unfreeze()  # its collector as it was (a process that ends leaves it frozen)
            gc.set_threshold(*threshold)


def write_passes(out: TextIO) -> None:
    """Every recognizer's declared passes: ``pass<TAB>what it does``, by recognizer."""
    registry.names()  # imports the built-in recognizers, which declare their passes
    for passes in declared():
        for entry in passes.describe():
            out.write(f"{entry['pass']}\t{entry['does']}\n")


def _items(
    file: Path, input_format: InputFormat
) -> Iterable[Note | tuple[Note, Identifiers] | RecordError]:
    """The notes of FILE; a clinical message file goes through the ingest path."""
    from service.commands.clinical_input import EmptyInput, clinical_kind, clinical_notes

    try:
        kind = clinical_kind(file)
    except EmptyInput as exc:
        typer.echo(f"deidstream detect: {exc}", err=True)
        raise typer.Exit(1) from None
    if kind is not None and input_format is InputFormat.AUTO:
        typer.echo(f"deidstream detect: {file}: {kind}, parsed as the service does", err=True)
        return clinical_notes(file, kind, max_bytes=max(file.stat().st_size, 1) + 1)
    return read_notes(file, input_format.value)


def register(app: typer.Typer) -> None:
    @app.command()
    def detect(
        file: Annotated[
            Path | None,
            typer.Argument(
                help="Corpus file: PhysioNet id.text, JSON lines or plain text.",
                exists=True,
                dir_okay=False,
            ),
        ] = None,
        format: Annotated[
            OutputFormat,
            typer.Option(
                "--format",
                help="Output: physionet (.phi spans), json (one line a note) or text (note with PHI replaced by tags).",
            ),
        ] = OutputFormat.PHYSIONET,
        input_format: Annotated[
            InputFormat, typer.Option("--input", help="Input format; auto sniffs the file.")
        ] = InputFormat.AUTO,
        known_names: Annotated[
            Path | None,
            known_names_file(
                "pid_patientname.txt lines (patient||||FIRST||||LAST): each note gets its patient's names as known identifiers."
            ),
        ] = None,
        policy: PolicyFile = None,
        explain: Annotated[
            bool,
            typer.Option("--explain", help="Also write the pass that found each span."),
        ] = False,
        passes: Annotated[
            bool,
            typer.Option("--passes", help="List every recognizer's declared passes and exit."),
        ] = False,
        jobs: Annotated[
            int,
            typer.Option(
                "--jobs",
                min=0,
                help="Worker processes for detection (output as with 1). 0: the CPUs this process may use (affinity, capped by a cgroup CPU quota), one for a small input.",
            ),
        ] = 0,
    ) -> None:
        """Detect PHI spans in every note of FILE and write them to stdout.

        HL7 v2 (also MLLP-framed) and FHIR JSON/NDJSON files are parsed as the service does:
        the narrative of each document, with the message's own identifiers known."""
        if passes:
            write_passes(sys.stdout)
            return
        if file is None:
            typer.echo("deidstream detect: FILE is required (or --passes)", err=True)
            raise typer.Exit(2)
        items = _items(file, input_format)
        seen, failed = _detect_all(items, policy, known_names, format, explain, jobs)
        if not seen:
            typer.echo(f"deidstream detect: no notes in {file}", err=True)
            raise typer.Exit(1)
        if failed:
            typer.echo(f"deidstream: {failed} record(s) could not be processed", err=True)
            raise typer.Exit(1)
