"""Patient-level K-fold cross-validation of the tagger, alone and united with the rules.

Every patient's notes fall in exactly one fold; for each fold a model is trained on the other
folds (with surrogate augmentation) and scored on the held fold. Three systems are scored on
the same held notes: ``tagger`` (the fold's model alone: an honest figure, it never saw these
patients), ``rules`` and ``combined`` (rules united with the fold's model). The rules were
written once for the whole corpus, so their figures here are not unseen-data figures.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pipelines.corpus import GoldPhrase, Note, NoteKey
from pipelines.document import Identifiers
from pipelines.evaluation import Evaluation, Report
from pipelines.phi.base import Doc
from pipelines.phi.combine import unite
from pipelines.phi.detector import Detector, propagated
from pipelines.phi.merge import merge_spans
from pipelines.phi.recognizers.tagger import TaggerRecognizer
from pipelines.phi.tagger.model import Label, label_of
from pipelines.phi.tagger.train import TrainSettings, examples_from, train
from pipelines.policy import Policy

SYSTEMS = ("tagger", "rules", "combined")  # with thresholds: "tagger@0.3", "combined@0.3"
_HEADLINE = ("sensitivity", "precision", "f2", "phrase_recall", "name_place_recall")


def patient_folds(patients: Sequence[str], k: int, seed: int) -> list[frozenset[str]]:
    """``k`` disjoint sets of patients of (nearly) equal size, chosen by a seeded shuffle."""
    if k < 2:
        raise ValueError("cross-validation needs at least 2 folds")
    ordered = sorted(set(patients))
    if len(ordered) < k:
        raise ValueError(f"{len(ordered)} patients cannot make {k} folds")
    random.Random(seed).shuffle(ordered)  # noqa: S311 - a reproducible split, not a secret
    return [frozenset(ordered[i::k]) for i in range(k)]


@dataclass
class FoldResult:
    fold: int
    patients: int
    notes: int
    train_seconds: float
    reports: dict[str, Report]

    def figures(self, system: str) -> dict[str, Any]:
        report = self.reports[system]
        out: dict[str, Any] = {k: report.metrics.get(k) for k in _HEADLINE[:4]}
        names_places = [
            c
            for cat, c in report.categories.items()
            if label_of(cat) in (Label.NAME, Label.LOCATION)
        ]
        tokens = sum(c.tokens for c in names_places)
        # the tagger's own job: names and places (dates, phones, IDs are left to the rules)
        out["name_place_recall"] = (
            sum(c.tokens_found for c in names_places) / tokens if tokens else None
        )
        out["recall_by_category"] = {
            cat: (c.tokens_found / c.tokens if c.tokens else None)
            for cat, c in report.categories.items()
        }
        return out


@dataclass
class CrossValidation:
    k: int
    seed: int
    settings: TrainSettings
    folds: list[FoldResult] = field(default_factory=list)

    @property
    def systems(self) -> list[str]:
        return list(self.folds[0].reports) if self.folds else []

    def summary(self, system: str) -> dict[str, dict[str, float | None]]:
        """Mean and worst fold of each headline figure."""
        out: dict[str, dict[str, float | None]] = {}
        for key in _HEADLINE:
            values = [v for f in self.folds if (v := f.figures(system).get(key)) is not None]
            out[key] = {
                "mean": round(statistics.fmean(values), 4) if values else None,
                "worst": round(min(values), 4) if values else None,
            }
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "seed": self.seed,
            "train_settings": self.settings.__dict__,
            "folds": [
                {
                    "fold": f.fold,
                    "patients": f.patients,
                    "notes": f.notes,
                    "train_seconds": f.train_seconds,
                    **{s: _rounded(f.figures(s)) for s in self.systems},
                }
                for f in self.folds
            ],
            "summary": {s: self.summary(s) for s in self.systems},
        }


def _rounded(figures: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in figures.items():
        if isinstance(value, dict):
            out[key] = _rounded(value)
        else:
            out[key] = round(value, 4) if isinstance(value, float) else value
    return out


def _fold_taggers(
    options: Mapping[str, Any], model: Path, thresholds: Sequence[float]
) -> dict[str, TaggerRecognizer]:
    """The fold model as a recognizer at the policy's threshold ("") and at each other one."""
    taggers = {"": TaggerRecognizer({**options, "model": str(model)})}
    for t in thresholds:
        taggers[f"@{t}"] = TaggerRecognizer({**options, "model": str(model), "threshold": t})
    return taggers


def _score_fold(
    test_notes: Sequence[Note],
    gold: Mapping[NoteKey, list[GoldPhrase]],
    known: Mapping[str, Identifiers],
    rules: Detector,
    taggers: Mapping[str, TaggerRecognizer],
) -> dict[str, Evaluation]:
    """Each system's evaluation on the held fold: rules, tagger and combined per threshold."""
    evaluations: dict[str, Evaluation] = {}
    for note in test_notes:
        doc = Doc(note.text, known.get(note.patient) or Identifiers())
        found_rules = rules.detect(doc)
        spans = {"rules": found_rules}
        for suffix, tagger in taggers.items():
            found_tagger = tagger.detect(doc)
            found_tagger += propagated(doc, [], found_tagger, [tagger])[1]  # the detector's step
            spans["tagger" + suffix] = merge_spans(found_tagger)
            spans["combined" + suffix] = merge_spans(unite(found_rules, found_tagger))
        phrases = gold.get(note.key, [])
        for system, found in spans.items():
            evaluations.setdefault(system, Evaluation()).add(
                note.patient, note.note, note.text, phrases, found
            )
    return evaluations


def cross_validate(
    notes: Sequence[Note],
    gold: Mapping[NoteKey, list[GoldPhrase]],
    known: Mapping[str, Identifiers],
    *,
    k: int = 5,
    seed: int = 0,
    settings: TrainSettings | None = None,
    policy: Policy | None = None,
    work_dir: Path,
    thresholds: Sequence[float] = (),
    progress: Callable[[str], None] = lambda _line: None,
) -> CrossValidation:
    """Train per fold, score the held fold. With several ``thresholds``, the same fold model
    is scored at each (systems ``tagger@T`` and ``combined@T``)."""
    settings = settings or TrainSettings()
    policy = policy or Policy.load()
    tagger_options = dict(policy.recognizers.get("tagger", {}))
    rules = Detector(
        replace(
            policy,
            recognizers={
                name: opts for name, opts in policy.recognizers.items() if name != "tagger"
            },
        )
    )
    result = CrossValidation(k=k, seed=seed, settings=settings)
    folds = patient_folds([n.patient for n in notes], k, seed)
    for index, held in enumerate(folds, 1):
        train_notes = [n for n in notes if n.patient not in held]
        test_notes = [n for n in notes if n.patient in held]
        model = work_dir / f"fold{index}.crfsuite"
        report = train(examples_from(train_notes, dict(gold)), model, settings)
        progress(f"fold {index}/{k}: trained on {len(train_notes)} notes in {report.seconds} s")
        taggers = _fold_taggers(tagger_options, model, thresholds)
        evaluations = _score_fold(test_notes, gold, known, rules, taggers)
        result.folds.append(
            FoldResult(
                fold=index,
                patients=len(held),
                notes=len(test_notes),
                train_seconds=report.seconds,
                reports={s: e.report(resamples=0) for s, e in evaluations.items()},
            )
        )
        figures = result.folds[-1].figures("combined")
        progress(
            f"fold {index}/{k}: combined sensitivity {figures['sensitivity']:.4f}"
            f" precision {figures['precision']:.4f}"
        )
    return result
