"""``deidstream export``: de-identify an annotated corpus and write it, with its surrogate
spans, as a corpus in any layout ``evaluate`` and ``train`` read (PhysioNet, BRAT, i2b2 2014
XML, JSON Lines) — a ready training corpus.

Every note goes through the same detect → replace → guard as ``deidstream deidentify``
(patient identities in the key store under ``--authority``, so a patient keeps one date
shift and one set of surrogate names across runs; ``--no-store`` for a dry run). The spans
written are the output's surrogate / tag spans (offsets in the de-identified text) with the
detector's category names (``NAME_PROVIDER``, ``DATE``...); the policy's
``[evaluation.category_map]`` maps them back to the gold vocabulary when the export is read.
The input's own gold phrases are not carried over: their offsets no longer hold once
surrogates replace the PHI. A note the leak guard holds back is not written; stderr gets
counts and categories only, never content.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from keystore.api import MintingStore
from pipelines.corpus import GoldPhrase, Note, load_patient_names
from pipelines.corpus_formats import Corpus, CorpusError, CorpusFormat, write_corpus
from pipelines.corpus_formats import read_corpus as read_any_corpus
from pipelines.deidentify import Deidentifier
from pipelines.document import Identifiers
from pipelines.policy import Policy
from service.commands.deidentify import PHYSIONET_AUTHORITY, deidentify_note
from service.commands.options import Authority, CorpusLayout, PolicyFile, known_names_file


class _Exporter:
    """Yields de-identified ``(note, spans)`` pairs and counts what it skipped."""

    def __init__(self, deid: Deidentifier, store: MintingStore | None, authority: str) -> None:
        self.deid, self.store, self.authority = deid, store, authority
        self.failed = 0
        self.held: Counter[str] = Counter()
        self.written = 0

    def run(
        self, corpus: Corpus, known: dict[str, Identifiers]
    ) -> Iterator[tuple[Note, list[GoldPhrase]]]:
        for error in corpus.errors:
            self.failed += 1
            typer.echo(f"deidstream: could not read {error.describe()}; skipped", err=True)
        for note in corpus.notes:
            try:
                result = deidentify_note(
                    self.deid,
                    self.store,
                    note,
                    known.get(note.patient, Identifiers()),
                    self.authority,
                    note.patient,
                )
            except Exception as exc:  # noqa: BLE001 - one bad note must not stop the export
                self.failed += 1
                typer.echo(
                    f"deidstream: record {note.index} (patient {note.patient} note {note.note})"
                    f" failed ({type(exc).__name__}); skipped",
                    err=True,
                )
                continue
            if result.held:
                self.held.update(result.leaks)
                self.held["notes"] += 1
                continue
            out = Note(note.patient, note.note, result.text, note.index, note.line)
            spans = [
                GoldPhrase(s.start, s.end, s.category.value, result.text[s.start : s.end])
                for s in result.spans
            ]
            self.written += 1
            yield out, spans


def register(app: typer.Typer) -> None:
    @app.command()
    def export(
        source: Annotated[
            Path,
            typer.Argument(
                help="Corpus to de-identify: a directory (PhysioNet, BRAT, i2b2) or a JSON Lines / i2b2 XML file.",
                exists=True,
            ),
        ],
        dest: Annotated[
            Path, typer.Argument(help="Output directory (or a .jsonl file with --to jsonl).")
        ],
        to: Annotated[
            CorpusFormat,
            typer.Option("--to", help="Output layout: physionet, brat, i2b2 or jsonl."),
        ] = CorpusFormat.JSONL,
        corpus_format: CorpusLayout = CorpusFormat.AUTO,
        known_names: Annotated[
            Path | None,
            known_names_file("pid_patientname.txt (default: the one beside the corpus, if any)."),
        ] = None,
        policy: PolicyFile = None,
        authority: Authority = PHYSIONET_AUTHORITY,
        no_store: Annotated[
            bool,
            typer.Option(
                "--no-store", help="One-off patient states (nothing read or written): a dry run."
            ),
        ] = False,
    ) -> None:
        """Write SOURCE de-identified, with its surrogate spans, as a corpus in DEST."""
        if to is CorpusFormat.AUTO:
            typer.echo("deidstream export: --to must name a layout", err=True)
            raise typer.Exit(2)
        loaded = Policy.load(policy)
        try:
            corpus = read_any_corpus(
                source, corpus_format, loaded.category_map, known_names, require_gold=False
            )
        except (CorpusError, OSError) as exc:
            reason = exc.reason if isinstance(exc, CorpusError) else type(exc).__name__
            typer.echo(f"deidstream: cannot read the corpus {source}: {reason}", err=True)
            raise typer.Exit(2) from None
        known = load_patient_names(known_names) if known_names else corpus.known
        store = None
        if not no_store:
            from keystore.config import default_store_from_env

            store = default_store_from_env()
        exporter = _Exporter(Deidentifier(loaded), store, authority)
        try:
            write_corpus(dest, to, exporter.run(corpus, known))
        except CorpusError as exc:  # reason and record ids only
            typer.echo(f"deidstream export: {exc}; stopped", err=True)
            raise typer.Exit(1) from None
        finally:
            if store is not None:
                store.flush()
                close = getattr(store, "close", None)
                if close is not None:
                    close()
        typer.echo(
            f"deidstream: {exporter.written} note(s) exported to {dest} ({to.value})", err=True
        )
        if exporter.held:
            notes_held = exporter.held.pop("notes")
            detail = ", ".join(f"{k}={v}" for k, v in sorted(exporter.held.items()))
            typer.echo(
                f"deidstream: {notes_held} note(s) held back by the leak guard ({detail})", err=True
            )
        if exporter.failed:
            typer.echo(f"deidstream: {exporter.failed} record(s) could not be processed", err=True)
            raise typer.Exit(1)
