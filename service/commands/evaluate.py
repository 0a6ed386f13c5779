"""``deidstream evaluate``: score the detector against a gold corpus (token level, NLM Scrubber).

A developer tool: ``--show-errors N`` prints missed phrases and false-positive tokens from the
corpus (already surrogate data) to the developer's terminal; the service never does this.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pipelines.corpus import (
    Note,
    NoteKey,
    PredictedSpan,
    RecordError,
    load_patient_names,
    read_predictions,
)
from pipelines.corpus_formats import CorpusFormat
from pipelines.document import Identifiers
from pipelines.evaluation import Evaluation, SpanLike
from pipelines.phi.detector import Detector
from pipelines.phi.tagger.train import TrainSettings
from pipelines.policy import Policy
from service.commands.detect import detect_notes, report_error
from service.commands.options import FORMAT_HELP, PolicyFile
from service.commands.train import load_corpus, read_corpus

if TYPE_CHECKING:
    from pipelines.phi.tagger.crossval import CrossValidation


def _replay(
    items: Iterable[Note | RecordError], predicted: dict[NoteKey, list[PredictedSpan]]
) -> Iterator[tuple[Note, Sequence[PredictedSpan]] | RecordError]:
    for item in items:
        yield item if isinstance(item, RecordError) else (item, predicted.get(item.key, []))


class PatientHalf(StrEnum):
    """Which patients to score: tune on one half, report the other (by patient number parity)."""

    ALL = "all"
    EVEN = "even"
    ODD = "odd"


def _in_half(patient: str, half: PatientHalf) -> bool:
    if half is PatientHalf.ALL:
        return True
    try:
        number = int(patient)
    except ValueError:
        number = sum(map(ord, patient))  # non-numeric ids: a stable split all the same
    return (number % 2 == 0) is (half is PatientHalf.EVEN)


def _only_half(
    items: Iterable[Note | RecordError], half: PatientHalf
) -> Iterator[Note | RecordError]:
    for item in items:
        if isinstance(item, RecordError) or _in_half(item.patient, half):
            yield item


def _beside(path: Path) -> Path:
    """The corpus directory (a JSON Lines / XML corpus may be a single file)."""
    return path if path.is_dir() else path.parent


def _known_names(
    directory: Path, use_names: bool, names_file: Path | None
) -> dict[str, Identifiers]:
    """The patients' names beside the corpus (or in ``names_file``) when asked for; exits 2
    when the file is missing."""
    if not use_names:
        return {}
    pid = names_file or _beside(directory) / "pid_patientname.txt"
    if not pid.is_file():
        typer.echo(f"deidstream: --known-names needs {pid}", err=True)
        raise typer.Exit(2)
    return load_patient_names(pid)


def _cross_validate(
    directory: Path,
    k: int,
    seed: int,
    use_names: bool,
    names_file: Path | None,
    policy: Path | None,
    augment: int,
    iterations: int,
    as_json: bool,
    thresholds: list[float],
    synthetic: int,
    corpus_format: CorpusFormat = CorpusFormat.AUTO,
) -> None:
    from pipelines.phi.tagger.crossval import cross_validate

    notes, gold = read_corpus(directory, corpus_format, policy)
    known = _known_names(directory, use_names, names_file)
    settings = TrainSettings(augment=augment, max_iterations=iterations, synthetic=synthetic)
    with tempfile.TemporaryDirectory(prefix="deidstream-cv-") as work:
        try:
            result = cross_validate(
                notes,
                gold,
                known,
                k=k,
                seed=seed,
                settings=settings,
                policy=Policy.load(policy),
                work_dir=Path(work),
                thresholds=thresholds,
                progress=lambda line: typer.echo(line, err=True),
            )
        except ValueError as exc:
            typer.echo(f"deidstream: {exc}", err=True)
            raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
        return
    typer.echo(f"patient-level {k}-fold cross-validation of {directory} (seed {seed})")
    _echo_folds(result)
    _echo_categories(result)
    typer.echo(
        "note: the rules were written for this whole corpus; only the tagger's figures are"
        " unseen-patient figures"
    )


def _echo_folds(result: CrossValidation) -> None:
    """One line per fold and system, then each system's mean and worst."""
    typer.echo("fold  patients notes  system    sensitivity precision f2     phrase recall")
    for fold in result.folds:
        for system in result.systems:
            f = fold.figures(system)
            typer.echo(
                f"{fold.fold:>4}  {fold.patients:>8} {fold.notes:>5}  {system:<13} "
                f"{f['sensitivity']:.4f}      {f['precision']:.4f}    {f['f2']:.4f} {f['phrase_recall']:.4f}"
            )
    for system in result.systems:
        summary = result.summary(system)
        cells = "  ".join(f"{k} mean {v['mean']} worst {v['worst']}" for k, v in summary.items())
        typer.echo(f"{system:<13} {cells}")


def _category_recalls(result: CrossValidation, system: str, category: str) -> list[float]:
    """The recall of ``category`` by ``system`` in each fold that has it."""
    return [
        r
        for f in result.folds
        if (r := f.figures(system)["recall_by_category"].get(category)) is not None
    ]


def _echo_categories(result: CrossValidation) -> None:
    typer.echo("recall by gold category (mean over folds, combined):")
    cats = sorted({c for f in result.folds for c in f.reports["combined"].categories})
    for cat in cats:
        values = _category_recalls(result, "combined", cat)
        tagger = _category_recalls(result, "tagger", cat)
        typer.echo(
            f"  {cat:<18} combined {sum(values) / len(values):.4f}  tagger alone {sum(tagger) / len(tagger):.4f}"
        )


def _results(
    items: Iterator[Note | RecordError],
    predictions: Path | None,
    policy: Path | None,
    known: dict[str, Identifiers],
) -> tuple[Detector, str, Iterator[tuple[Note, Sequence[SpanLike]] | RecordError]]:
    """The detector's spans per note, or those of a span file when ``predictions`` is set."""
    if predictions is None:
        detector = Detector(Policy.load(policy))
        source = "recognizers: " + (", ".join(r.name for r in detector.recognizers) or "(none)")
        return detector, source, detect_notes(items, detector, known)
    try:
        with predictions.open(encoding="utf-8") as fh:
            predicted = read_predictions(fh)
    except (ValueError, KeyError, TypeError) as exc:
        typer.echo(f"deidstream: cannot read {predictions} ({type(exc).__name__})", err=True)
        raise typer.Exit(2) from None
    detector = Detector(Policy(recognizers={}))
    return detector, f"span file {predictions.name}", _replay(items, predicted)


def _score(
    results: Iterator[tuple[Note, Sequence[SpanLike]] | RecordError],
    evaluation: Evaluation,
    gold: dict[tuple[str, str], Any],
) -> tuple[int, set[tuple[str, str]]]:
    """Add every result to ``evaluation``; the records that failed and the notes seen."""
    failed = 0
    seen: set[tuple[str, str]] = set()
    for result in results:
        if isinstance(result, RecordError):
            failed += 1
            report_error(result)
            continue
        note, spans = result
        seen.add(note.key)
        evaluation.add(note.patient, note.note, note.text, gold.get(note.key, []), spans)
    return failed, seen


def register(app: typer.Typer) -> None:
    @app.command()
    def evaluate(
        directory: Annotated[
            Path,
            typer.Argument(
                help="Gold corpus: a directory (PhysioNet id.text + id-phi.phrase, BRAT .txt + .ann, i2b2 XML) or a JSON Lines / i2b2 XML file.",
                exists=True,
            ),
        ],
        corpus_format: Annotated[
            CorpusFormat, typer.Option("--format", "--corpus", help=FORMAT_HELP)
        ] = CorpusFormat.AUTO,
        known_names: Annotated[
            bool,
            typer.Option(
                "--known-names",
                help="Give each note its patient's names from pid_patientname.txt beside the corpus (as a PID segment would).",
            ),
        ] = False,
        names_file: Annotated[
            Path | None,
            typer.Option(
                "--names-file",
                help="Another patient-names file; implies --known-names.",
                exists=True,
                dir_okay=False,
            ),
        ] = None,
        policy: PolicyFile = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
        resamples: Annotated[
            int,
            typer.Option(
                "--bootstrap",
                min=0,
                help="Bootstrap resamples (by patient) for the 95% intervals; 0 turns them off.",
            ),
        ] = 1000,
        seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap.")] = 0,
        show_errors: Annotated[
            int,
            typer.Option(
                "--show-errors",
                min=0,
                help="Developer aid: print N missed gold phrases and frequent false-positive tokens (corpus text).",
            ),
        ] = 0,
        error_category: Annotated[
            list[str] | None,
            typer.Option(
                "--error-category",
                help="With --show-errors: only gold / predicted categories starting with this (repeatable; e.g. HCPName, date, NAME).",
            ),
        ] = None,
        predictions: Annotated[
            Path | None,
            typer.Option(
                "--predictions",
                help="Score this span file (.phi or `detect --format json` output) instead of running the detector.",
                exists=True,
                dir_okay=False,
            ),
        ] = None,
        patients: Annotated[
            PatientHalf,
            typer.Option(
                "--patients",
                help="Score only patients with an even / odd number (tune on one half, report the other).",
            ),
        ] = PatientHalf.ALL,
        cv: Annotated[
            int,
            typer.Option(
                "--cv",
                min=0,
                help="Patient-level K-fold cross-validation of the learned tagger: train on K-1 folds, score the held fold (tagger alone, rules, combined). 0: off.",
            ),
        ] = 0,
        augment: Annotated[
            int,
            typer.Option(
                "--augment", min=0, help="With --cv: surrogate-augmented copies per training note."
            ),
        ] = TrainSettings.augment,
        iterations: Annotated[
            int, typer.Option("--iterations", min=1, help="With --cv: L-BFGS iterations per fold.")
        ] = TrainSettings.max_iterations,
        synthetic: Annotated[
            int,
            typer.Option(
                "--synthetic",
                min=0,
                help="With --cv: add N invented notes of the short clinical genre to each fold's training.",
            ),
        ] = TrainSettings.synthetic,
        thresholds: Annotated[
            list[float] | None,
            typer.Option(
                "--threshold",
                help="With --cv: also score the tagger at this probability threshold (repeatable).",
            ),
        ] = None,
    ) -> None:
        """Token-level sensitivity, specificity, precision, F2, phrase recall with 95% CIs."""
        if cv:
            _cross_validate(
                directory,
                cv,
                seed,
                known_names or names_file is not None,
                names_file,
                policy,
                augment,
                iterations,
                as_json,
                thresholds or [],
                synthetic,
                corpus_format,
            )
            return
        use_names = known_names or names_file is not None
        known = _known_names(directory, use_names, names_file)
        corpus = load_corpus(directory, corpus_format, policy)
        gold = {k: v for k, v in corpus.gold.items() if _in_half(k[0], patients)}
        items = _only_half([*corpus.errors, *corpus.notes], patients)
        detector, source, results = _results(items, predictions, policy, known)
        evaluation = Evaluation(collect_text=show_errors > 0)
        began = time.perf_counter()
        failed, seen = _score(results, evaluation, gold)
        elapsed = time.perf_counter() - began
        report = evaluation.report(resamples=resamples, seed=seed).only_categories(
            error_category or ()
        )
        unmatched = len(set(gold) - seen)
        if as_json:
            data = report.to_dict(known_names=use_names, show_errors=show_errors)
            data["recognizers"] = [r.name for r in detector.recognizers]
            data["predictions"] = str(predictions) if predictions else None
            data["corpus_format"] = corpus.format.value
            data["records_failed"] = failed
            data["gold_notes_without_record"] = unmatched
            data["detect_seconds"] = round(elapsed, 3)
            typer.echo(json.dumps(data, indent=2))
        else:
            typer.echo(f"corpus {directory} ({corpus.format.value})  {source}")
            typer.echo(report.format_text(known_names=use_names, show_errors=show_errors))
            typer.echo(
                f"detected {report.notes} notes in {elapsed:.2f} s"
                f" ({report.notes / elapsed if elapsed else 0:.0f} notes/s incl. scoring)"
            )
        if unmatched:
            typer.echo(
                f"deidstream: {unmatched} gold note(s) have no readable record; not scored",
                err=True,
            )
        if failed:
            typer.echo(f"deidstream: {failed} record(s) could not be processed", err=True)
            raise typer.Exit(1)
