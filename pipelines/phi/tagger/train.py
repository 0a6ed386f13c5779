"""Training the tagger: gold phrases -> BIO labels per token -> a crfsuite model file.

Deterministic: the same corpus, augmentation count and seed give the same model bytes
(crfsuite's L-BFGS has no randomness; the augmentation draws from a seeded generator).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pycrfsuite

from pipelines.corpus import GoldPhrase, Note, NoteKey
from pipelines.phi.tagger.augment import Example, Phrase, augmented
from pipelines.phi.tagger.features import Featurizer, facility_core, tokenize
from pipelines.phi.tagger.model import OUTSIDE, Label, label_of


@dataclass(frozen=True)
class TrainSettings:
    """What a model is trained with; recorded in the model card."""

    augment: int = 3
    seed: int = 13
    c1: float = 0.05
    c2: float = 0.01
    max_iterations: int = 120
    min_feature_freq: int = 2
    synthetic: int = 400  # invented short notes of the second genre (pipelines.phi.synthetic)


@dataclass
class TrainReport:
    notes: int
    sequences: int
    tokens: int
    phi_tokens: int
    seconds: float
    model_bytes: int
    settings: dict[str, float | int] = field(default_factory=dict)


def examples_from(notes: Iterable[Note], gold: dict[NoteKey, list[GoldPhrase]]) -> list[Example]:
    out: list[Example] = []
    for note in notes:
        phrases = []
        for g in gold.get(note.key, []):
            label = label_of(g.category)
            if label is not None and 0 <= g.start < g.end <= len(note.text):
                phrases.append(Phrase(g.start, g.end, label))
        out.append(Example(note.text, tuple(phrases)))
    return out


def synthetic_examples(count: int, seed: int) -> list[Example]:
    """Invented notes of the short clinician-written genre (the generator's ``dev`` family:
    its ``heldout`` family stays unseen for scoring), every other one in capitals. A
    facility's generic head words ("Hospital", "Medical Center") are left out of the phrase,
    as the PhysioNet gold does: the rules extend a facility span over its head."""
    from pipelines.phi.synthetic import generate

    out: list[Example] = []
    for k, note in enumerate(generate(count, seed, "dev")):
        phrases = []
        for start, end, label in note.spans:
            tagged = Label(str(label))
            if tagged is Label.LOCATION:
                end = start + len(facility_core(note.text[start:end]))
            if end > start:
                phrases.append(Phrase(start, end, tagged))
        # every other note in capitals: many systems print notes that way, and the model
        # must know the genre's contexts without the help of case
        text = note.text.upper() if k % 2 else note.text
        if len(text) != len(note.text):  # a letter whose capital is longer ("ß"): keep case
            text = note.text
        out.append(Example(text, tuple(phrases)))
    return out


def labelled(example: Example, featurizer: Featurizer) -> tuple[list[list[str]], list[str]]:
    """Feature rows and BIO labels of the word items of one example."""
    tokens = tokenize(example.text)
    labels = [OUTSIDE] * len(tokens)
    phrases = sorted(example.phrases, key=lambda p: p.start)
    k = 0
    for i, tok in enumerate(tokens):
        while k < len(phrases) and phrases[k].end <= tok[0]:
            k += 1
        if k < len(phrases) and phrases[k].start < tok[1]:
            phrase = phrases[k]
            first = i == 0 or labels[i - 1] == OUTSIDE or tokens[i - 1][1] <= phrase.start
            labels[i] = ("B-" if first else "I-") + phrase.label.value
    items = featurizer.items(example.text, tokens)
    return featurizer.features(example.text, tokens, items), _restart([labels[i] for i in items])


def _restart(labels: list[str]) -> list[str]:
    """BIO again over the word items: an I- whose item before is not of its class starts."""
    out: list[str] = []
    for label in labels:
        if label.startswith("I-") and (not out or out[-1][2:] != label[2:]):
            label = "B-" + label[2:]
        out.append(label)
    return out


def train(
    examples: Sequence[Example], out: Path, settings: TrainSettings | None = None
) -> TrainReport:
    settings = settings or TrainSettings()
    began = time.perf_counter()
    featurizer = Featurizer()
    trainer = pycrfsuite.Trainer(verbose=False)
    trainer.set_params(
        {
            "c1": settings.c1,
            "c2": settings.c2,
            "max_iterations": settings.max_iterations,
            "feature.minfreq": settings.min_feature_freq,
            "feature.possible_transitions": True,
        }
    )
    data = augmented(examples, settings.augment, settings.seed)
    if settings.synthetic:
        data += synthetic_examples(settings.synthetic, settings.seed)
    tokens = phi = 0
    for example in data:
        rows, labels = labelled(example, featurizer)
        if not rows:
            continue
        tokens += len(labels)
        phi += sum(1 for lab in labels if lab != OUTSIDE)
        trainer.append(rows, labels)
    out.parent.mkdir(parents=True, exist_ok=True)
    trainer.train(str(out))
    return TrainReport(
        notes=len(examples),
        sequences=len(data),
        tokens=tokens,
        phi_tokens=phi,
        seconds=round(time.perf_counter() - began, 1),
        model_bytes=out.stat().st_size,
        settings=asdict(settings),
    )


def write_report(report: TrainReport, path: Path) -> None:
    path.write_text(json.dumps(asdict(report), indent=2) + "\n", encoding="utf-8")
