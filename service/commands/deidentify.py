"""``deidstream deidentify``: de-identify a corpus file and write it back in its own format.

PhysioNet input keeps its records (same patient / note numbers, de-identified bodies); the
patient number is the patient's identity in the key store under the authority ``physionet``,
so a patient keeps one date shift and one set of surrogate names across runs. A note the leak
guard holds back is not written; stderr gets counts and categories only, never content.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, TextIO

import typer

from keystore.api import MintingStore, PatientState
from pipelines.corpus import (
    Note,
    RecordError,
    load_patient_names,
    read_notes,
    spans_json,
    write_phi,
    write_physionet_record,
)
from pipelines.deidentify import Deidentifier, DeidResult
from pipelines.document import ClinicalDocument, Identifiers
from pipelines.policy import Policy
from service.commands.options import Authority, PolicyFile, known_names_file

PHYSIONET_AUTHORITY = "physionet"
NO_PATIENT = "-"


class Format(StrEnum):
    AUTO = "auto"
    PHYSIONET = "physionet"
    TEXT = "text"
    JSON = "json"


class Annotations:
    """Writes the output spans: ``.phi`` form, or JSON lines when the file ends in .json(l)."""

    def __init__(self, path: Path | None) -> None:
        self.out: TextIO | None = path.open("w", encoding="utf-8") if path else None
        self.json = path is not None and path.suffix.lower() in (".json", ".jsonl")

    def write(self, note: Note, result: DeidResult) -> None:
        if self.out is None:
            return
        spans = list(result.spans)
        if self.json:
            self.out.write(spans_json(note.patient, note.note, spans) + "\n")
        else:
            write_phi(self.out, note.patient, note.note, spans)

    def close(self) -> None:
        if self.out is not None:
            self.out.close()


def deidentify_note(
    deid: Deidentifier,
    store: MintingStore | None,
    note: Note,
    identifiers: Identifiers,
    authority: str,
    patient_id: str | None,
) -> DeidResult:
    """One note through detect → replace → guard, with the patient's stored state if any."""
    document = ClinicalDocument(
        text=note.text,
        identifiers=identifiers,
        patient_id=patient_id or "",
        assigning_authority=authority,
        document_id=note.note,
    )
    if store is None or not patient_id:
        state: PatientState = deid.new_state()  # no identity: a one-off state, never stored
        return deid.deidentify(document, state)
    return deid.run(document, store, authority=authority, patient_id=patient_id)


def write_output(out: TextIO, fmt: Format, note: Note, result: DeidResult) -> None:
    if fmt is Format.PHYSIONET:
        write_physionet_record(out, note.patient, note.note, result.text)
    elif fmt is Format.JSON:
        import json

        out.write(
            json.dumps({"patient": note.patient, "note": note.note, "text": result.text}) + "\n"
        )
    else:
        out.write(result.text)


def _sniffed(file: Path, fmt: Format) -> Format:
    if fmt is not Format.AUTO:
        return fmt
    from pipelines.corpus import sniff_format

    return Format(sniff_format(file))


def _refuse_clinical(file: Path) -> None:
    """HL7 v2 / MLLP / FHIR go through `deidstream convert`; an empty file is an error."""
    from service.commands.clinical_input import EmptyInput, clinical_kind, refusal

    try:
        kind = clinical_kind(file)
    except EmptyInput as exc:
        typer.echo(f"deidstream deidentify: {exc}", err=True)
        raise typer.Exit(1) from None
    if kind is not None:
        typer.echo(refusal(file, kind, "deidentify"), err=True)
        raise typer.Exit(2)


@dataclass
class _Tally:
    """What a run did so far: notes written, records failed, leaks of the notes held."""

    written: int = 0
    failed: int = 0
    held: Counter[str] = field(default_factory=Counter)


def _one(
    tally: _Tally,
    item: Note | RecordError,
    deid: Deidentifier,
    store: MintingStore | None,
    known: dict[str, Identifiers],
    authority: str,
    patient_id: str | None,
    sink: tuple[TextIO, Format, Annotations],
) -> None:
    """One record of the input: de-identified and written, held, or counted as failed."""
    if isinstance(item, RecordError):
        tally.failed += 1
        typer.echo(f"deidstream: could not read {item.describe()}; skipped", err=True)
        return
    pid = item.patient if item.patient != NO_PATIENT else patient_id
    try:
        result = deidentify_note(
            deid, store, item, known.get(item.patient, Identifiers()), authority, pid
        )
    except Exception as exc:  # noqa: BLE001 - one bad note must not stop the run
        tally.failed += 1
        typer.echo(
            f"deidstream: record {item.index} (patient {item.patient} note {item.note}) "
            f"failed ({type(exc).__name__}); skipped",
            err=True,
        )
        return
    if result.held:
        tally.held.update(result.leaks)
        tally.held["notes"] += 1
        return
    out, fmt, notes = sink
    write_output(out, fmt, item, result)
    notes.write(item, result)
    tally.written += 1


def _close(store: MintingStore | None, notes: Annotations, out: TextIO, to_file: bool) -> None:
    if store is not None:
        store.flush()
        close = getattr(store, "close", None)
        if close is not None:
            close()
    notes.close()
    if to_file:
        out.close()
    else:
        out.flush()


def _summarise(file: Path, tally: _Tally) -> None:
    """The run's counts on stderr; exit 1 when nothing was read or a record failed."""
    held = tally.held
    if tally.written == 0 and tally.failed == 0 and not held:
        typer.echo(f"deidstream deidentify: no notes in {file}", err=True)
        raise typer.Exit(1)
    typer.echo(f"deidstream: {tally.written} note(s) de-identified", err=True)
    if held:
        notes_held = held.pop("notes")
        detail = ", ".join(f"{k}={v}" for k, v in sorted(held.items()))
        typer.echo(
            f"deidstream: {notes_held} note(s) held back by the leak guard ({detail})", err=True
        )
    if tally.failed:
        typer.echo(f"deidstream: {tally.failed} record(s) could not be processed", err=True)
        raise typer.Exit(1)


def _warm_and_freeze() -> None:
    """As the service does before its first document: the detector's lexicons loaded (the
    first note loads them anyway), then moved out of the garbage collector's reach, so the
    collections a long note causes do not walk them again and again (5 MB dev note:
    bench/README.md, session 13). The surrogates' lists load on use: a short note needs few."""
    from pipelines.phi import lexicons
    from service.wiring import freeze_after_warmup

    lexicons.warm()
    freeze_after_warmup()


def register(app: typer.Typer) -> None:
    @app.command()
    def deidentify(
        file: Annotated[
            Path,
            typer.Argument(
                help="PhysioNet id.text, JSON lines or a plain-text note.",
                exists=True,
                dir_okay=False,
            ),
        ],
        format: Annotated[
            Format,
            typer.Option("--format", help="Input (and output) format; auto sniffs the file."),
        ] = Format.AUTO,
        known_names: Annotated[
            Path | None,
            known_names_file(
                "pid_patientname.txt (patient||||FIRST||||LAST): known names per patient."
            ),
        ] = None,
        policy: PolicyFile = None,
        annotations: Annotated[
            Path | None,
            typer.Option(
                "--annotations",
                help="Write the surrogate spans (offsets in the output): .phi form, or JSON lines for *.json / *.jsonl.",
                dir_okay=False,
            ),
        ] = None,
        output: Annotated[
            Path | None,
            typer.Option("--output", "-o", help="Output file (default: stdout).", dir_okay=False),
        ] = None,
        patient_id: Annotated[
            str | None,
            typer.Option(
                "--patient-id",
                help="Patient identity for text input (keeps the shift and names across runs).",
            ),
        ] = None,
        authority: Authority = PHYSIONET_AUTHORITY,
        no_store: Annotated[
            bool,
            typer.Option(
                "--no-store", help="Use one-off states (nothing read or written): a dry run."
            ),
        ] = False,
    ) -> None:
        """De-identify every note of FILE: PHI replaced by surrogates (or tags, per the policy)."""
        _refuse_clinical(file)
        fmt = _sniffed(file, format)
        deid = Deidentifier(Policy.load(policy))
        _warm_and_freeze()
        known = load_patient_names(known_names) if known_names else {}
        store = None
        if not no_store:
            from keystore.config import default_store_from_env

            store = default_store_from_env()
        notes = Annotations(annotations)
        out = output.open("w", encoding="utf-8") if output else sys.stdout
        tally = _Tally()
        try:
            for item in read_notes(file, fmt.value):
                _one(tally, item, deid, store, known, authority, patient_id, (out, fmt, notes))
        finally:
            _close(store, notes, out, to_file=output is not None)
        _summarise(file, tally)
