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

from pipelines.corpus import GoldPhrase, Note, NoteKey
from pipelines.corpus_formats import Corpus, CorpusError, CorpusFormat
from pipelines.corpus_formats import read_corpus as read_any_corpus
from pipelines.phi.tagger.augment import Example
from pipelines.phi.tagger.train import TrainSettings, examples_from, train
from pipelines.policy import Policy
from service.commands.options import CorpusLayout

_DEFAULT_OUT = Path("pipelines/phi/data/tagger.crfsuite")


def load_corpus(
    path: Path,
    fmt: CorpusFormat = CorpusFormat.AUTO,
    policy: Path | None = None,
    names_file: Path | None = None,
) -> Corpus:
    """Any supported layout; categories renamed by the policy's [evaluation.category_map]."""
    try:
        return read_any_corpus(path, fmt, Policy.load(policy).category_map, names_file)
    except (CorpusError, OSError) as exc:
        reason = exc.reason if isinstance(exc, CorpusError) else type(exc).__name__
        typer.echo(f"deidstream: cannot read the corpus {path}: {reason}", err=True)
        raise typer.Exit(2) from None


def read_corpus(
    directory: Path, fmt: CorpusFormat = CorpusFormat.AUTO, policy: Path | None = None
) -> tuple[list[Note], dict[NoteKey, list[GoldPhrase]]]:
    """Readable notes and gold phrases of a corpus (unreadable records are left out)."""
    corpus = load_corpus(directory, fmt, policy)
    return list(corpus.notes), corpus.gold


def reviewed_examples() -> list[Example]:
    """The review queue's decided notes (the key store the settings name)."""
    from pipelines.review import ReviewQueue
    from service.settings import settings_or_exit
    from service.wiring import open_keystore

    queue = ReviewQueue(open_keystore(settings_or_exit()))
    try:
        return queue.training_examples()
    finally:
        queue.store.close()


def register(app: typer.Typer) -> None:
    @app.command("train")
    def train_command(
        directory: Annotated[
            Path,
            typer.Argument(
                help="Gold corpus: a directory (PhysioNet, BRAT, i2b2) or a JSON Lines / i2b2 XML file.",
                exists=True,
            ),
        ],
        corpus_format: CorpusLayout = CorpusFormat.AUTO,
        policy: Annotated[
            Path | None,
            typer.Option(
                "--policy",
                help="Policy TOML whose [evaluation.category_map] renames the corpus categories.",
                exists=True,
                dir_okay=False,
            ),
        ] = None,
        out: Annotated[Path, typer.Option("--out", help="Model file to write.")] = _DEFAULT_OUT,
        augment: Annotated[
            int, typer.Option("--augment", min=0, help="Surrogate-augmented copies of each note.")
        ] = TrainSettings.augment,
        seed: Annotated[
            int, typer.Option("--seed", help="Seed of the augmentation.")
        ] = TrainSettings.seed,
        iterations: Annotated[
            int, typer.Option("--iterations", min=1, help="L-BFGS iterations.")
        ] = TrainSettings.max_iterations,
        limit: Annotated[
            int, typer.Option("--limit", min=0, help="Train on the first N notes only (0: all).")
        ] = 0,
        synthetic: Annotated[
            int,
            typer.Option(
                "--synthetic", min=0, help="Add N invented notes of the short clinical genre."
            ),
        ] = TrainSettings.synthetic,
        review_decisions: Annotated[
            bool,
            typer.Option(
                "--review-decisions",
                help="Add the review queue's decided notes (read from the key store, unsealed in memory only; docs/review.md).",
            ),
        ] = False,
    ) -> None:
        """Train the CRF tagger; writes the model and MODEL.json (counts, settings, seconds)."""
        notes, gold = read_corpus(directory, corpus_format, policy)
        if limit:
            notes = notes[:limit]
        if not notes:
            typer.echo(f"deidstream: no readable notes in {directory}", err=True)
            raise typer.Exit(2)
        settings = TrainSettings(
            augment=augment, seed=seed, max_iterations=iterations, synthetic=synthetic
        )
        examples = examples_from(notes, gold)
        reviewed = reviewed_examples() if review_decisions else []
        report = train(examples + reviewed, out, settings)
        summary = out.with_suffix(".json")
        record = {
            **report.__dict__,
            "review_notes": len(reviewed),
            "review_phrases": sum(len(e.phrases) for e in reviewed),
        }
        summary.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        typer.echo(
            f"trained on {report.notes} notes ({report.sequences} with augmentation, "
            f"{report.tokens} tokens) in {report.seconds} s -> {out} ({report.model_bytes} bytes)"
            + (f"; {len(reviewed)} of them reviewed notes" if review_decisions else "")
        )
