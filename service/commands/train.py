"""``deidstream train``: train the learned tagger on a gold corpus (deterministic by seed).

The shipped model (``pipelines/phi/data/tagger.crfsuite``) is reproduced by
``deidstream train ../shared/data/physionet/dev`` with the defaults; docs/model-card.md says
what it was trained on and how it scores under patient-level cross-validation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from pipelines.corpus import Note, load_gold, read_notes
from pipelines.phi.tagger.train import TrainSettings, examples_from, train

_DEFAULT_OUT = Path("pipelines/phi/data/tagger.crfsuite")


def read_corpus(directory: Path) -> tuple[list[Note], dict]:  # type: ignore[type-arg]
    text_path = directory / "id.text"
    gold_path = directory / "id-phi.phrase"
    if not text_path.is_file() or not gold_path.is_file():
        typer.echo(f"deidstream: {directory} lacks id.text or id-phi.phrase", err=True)
        raise typer.Exit(2)
    notes = [n for n in read_notes(text_path, "physionet") if isinstance(n, Note)]
    return notes, load_gold(gold_path)


def register(app: typer.Typer) -> None:
    @app.command("train")
    def train_command(
        directory: Annotated[Path, typer.Argument(help="Gold corpus directory (PhysioNet layout: id.text, id-phi.phrase).", exists=True, file_okay=False)],
        out: Annotated[Path, typer.Option("--out", help="Model file to write.")] = _DEFAULT_OUT,
        augment: Annotated[int, typer.Option("--augment", min=0, help="Surrogate-augmented copies of each note.")] = TrainSettings.augment,
        seed: Annotated[int, typer.Option("--seed", help="Seed of the augmentation.")] = TrainSettings.seed,
        iterations: Annotated[int, typer.Option("--iterations", min=1, help="L-BFGS iterations.")] = TrainSettings.max_iterations,
        limit: Annotated[int, typer.Option("--limit", min=0, help="Train on the first N notes only (0: all).")] = 0,
        synthetic: Annotated[int, typer.Option("--synthetic", min=0, help="Add N invented notes of the short clinical genre.")] = TrainSettings.synthetic,
    ) -> None:
        """Train the CRF tagger; writes the model and MODEL.json (counts, settings, seconds)."""
        notes, gold = read_corpus(directory)
        if limit:
            notes = notes[:limit]
        if not notes:
            typer.echo(f"deidstream: no readable notes in {directory}", err=True)
            raise typer.Exit(2)
        settings = TrainSettings(augment=augment, seed=seed, max_iterations=iterations, synthetic=synthetic)
        report = train(examples_from(notes, gold), out, settings)
        summary = out.with_suffix(".json")
        summary.write_text(json.dumps(report.__dict__, indent=2) + "\n", encoding="utf-8")
        typer.echo(
            f"trained on {report.notes} notes ({report.sequences} with augmentation, "
            f"{report.tokens} tokens) in {report.seconds} s -> {out} ({report.model_bytes} bytes)"
        )
