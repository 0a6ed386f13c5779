"""`deidstream train` and `deidstream evaluate --cv` on the tiny invented corpus; and the
cross-validation report's shape on the PhysioNet dev split (figures are not asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pipelines.phi.tagger.crossval import patient_folds
from service.commands import evaluate, train

runner = CliRunner()


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False)
    train.register(app)
    evaluate.register(app)
    return app


def test_train_writes_a_model_and_its_report(
    app: typer.Typer, tiny_corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "m.crfsuite"
    result = runner.invoke(
        app,
        [
            "train",
            str(tiny_corpus),
            "--out",
            str(out),
            "--augment",
            "1",
            "--iterations",
            "20",
            "--synthetic",
            "0",
        ],
    )
    assert result.exit_code == 0, result.output
    assert out.stat().st_size > 0
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["notes"] == 24 and report["sequences"] == 48


def test_train_refuses_a_directory_without_gold(app: typer.Typer, tmp_path: Path) -> None:
    result = runner.invoke(app, ["train", str(tmp_path), "--out", str(tmp_path / "m")])
    assert result.exit_code == 2


def test_folds_split_patients_without_overlap() -> None:
    folds = patient_folds([str(p) for p in range(11)] * 3, 3, seed=1)
    assert sum(len(f) for f in folds) == 11
    assert all(not (a & b) for i, a in enumerate(folds) for b in folds[i + 1 :])
    assert patient_folds([str(p) for p in range(11)], 3, seed=1) == folds
    with pytest.raises(ValueError):
        patient_folds(["1", "2"], 3, seed=0)


def _check_cv_report(data: dict, k: int) -> None:  # type: ignore[type-arg]
    assert data["k"] == k and len(data["folds"]) == k
    for fold in data["folds"]:
        for system in ("tagger", "rules", "combined", "tagger@0.3", "combined@0.3"):
            figures = fold[system]
            assert 0.0 <= figures["sensitivity"] <= 1.0
            assert isinstance(figures["recall_by_category"], dict)
    summary = data["summary"]["combined"]
    assert summary["sensitivity"]["worst"] <= summary["sensitivity"]["mean"]


def test_cv_on_the_tiny_corpus(app: typer.Typer, tiny_corpus: Path) -> None:
    result = runner.invoke(
        app,
        [
            "evaluate",
            str(tiny_corpus),
            "--known-names",
            "--cv",
            "3",
            "--augment",
            "1",
            "--synthetic",
            "0",
            "--iterations",
            "20",
            "--threshold",
            "0.3",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    _check_cv_report(json.loads(result.stdout), 3)


@pytest.mark.corpus
@pytest.mark.slow
def test_cv_on_the_dev_split_has_the_reported_shape(app: typer.Typer, physionet_dev: Path) -> None:
    result = runner.invoke(
        app,
        [
            "evaluate",
            str(physionet_dev),
            "--known-names",
            "--cv",
            "2",
            "--augment",
            "0",
            "--synthetic",
            "0",
            "--iterations",
            "15",
            "--threshold",
            "0.3",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    _check_cv_report(json.loads(result.stdout), 2)


def test_training_does_not_depend_on_the_string_hash_seed(
    tiny_corpus: Path, tmp_path: Path
) -> None:
    """The same corpus and settings give the same model in any process: augmentation drew
    names from a list whose ties followed a set's (hash-seeded) order."""
    import os
    import subprocess
    import sys

    models = []
    for seed in ("1", "2"):
        out = tmp_path / f"m{seed}.crfsuite"
        args = [str(tiny_corpus), "--out", str(out), "--augment", "2", "--iterations", "20"]
        code = "import sys; from service.cli import main; sys.argv[0] = 'deidstream'; main()"
        subprocess.run(
            [sys.executable, "-c", code, "train", *args, "--synthetic", "0"],
            check=True,
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            timeout=300,
        )
        models.append(out.read_bytes())
    assert models[0] == models[1]
