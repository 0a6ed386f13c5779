"""The learned tagger at run time: a linear-chain CRF (python-crfsuite) over word features.

``Tagger.tag(text)`` returns spans of coarse PHI classes with a confidence (the CRF's marginal
probability that the tokens are PHI). A token is PHI when the marginal of "not PHI" falls below
``1 - threshold``; so a policy can trade precision for recall without retraining.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Final

import pycrfsuite

from pipelines.phi.tagger.features import Featurizer, Tok, tokenize
from pipelines.spans import Category, Span

OUTSIDE: Final = "O"


class Label(StrEnum):
    """The tagger's classes: coarser than ``Category`` (roles and kinds come from the rules)."""

    NAME = "NAME"
    LOCATION = "LOCATION"
    DATE = "DATE"
    ID = "ID"
    PHONE = "PHONE"
    AGE = "AGE"
    CONTACT = "CONTACT"

    @property
    def category(self) -> Category:
        return _CATEGORY[self]


_CATEGORY: Final = {
    Label.NAME: Category.NAME_OTHER,
    Label.LOCATION: Category.LOCATION_OTHER,
    Label.DATE: Category.DATE,
    Label.ID: Category.ID,
    Label.PHONE: Category.PHONE,
    Label.AGE: Category.AGE,
    Label.CONTACT: Category.URL,
}

# Gold category names of the corpora we read -> tagger label (PhysioNet, i2b2, our categories).
GOLD_LABELS: Final[dict[str, Label]] = {
    "hcpname": Label.NAME,
    "ptname": Label.NAME,
    "ptnameinitial": Label.NAME,
    "relativeproxyname": Label.NAME,
    "name": Label.NAME,
    "location": Label.LOCATION,
    "date": Label.DATE,
    "dateyear": Label.DATE,
    "phone": Label.PHONE,
    "age": Label.AGE,
    "other": Label.ID,
    "id": Label.ID,
    "contact": Label.CONTACT,
}


def label_of(category: str) -> Label | None:
    low = category.lower()
    if low in GOLD_LABELS:
        return GOLD_LABELS[low]
    for prefix, label in (("name", Label.NAME), ("location", Label.LOCATION)):
        if low.startswith(prefix):
            return label
    try:
        return Label(category.upper())
    except ValueError:
        return None


DEFAULT_MODEL: Final = "data/tagger.crfsuite"


@dataclass(frozen=True, slots=True)
class TaggedSpan:
    start: int
    end: int
    label: Label
    confidence: float

    def to_span(self) -> Span:
        return Span(self.start, self.end, self.label.category, self.confidence, "tagger")


class Tagger:
    """A trained CRF model and the featurizer it was trained with."""

    def __init__(self, model_path: Path | None = None, threshold: float = 0.5) -> None:
        if model_path is None:
            ref = resources.files("pipelines.phi").joinpath(DEFAULT_MODEL)
            model_path = Path(str(ref))
        if not model_path.is_file():
            raise FileNotFoundError(f"tagger model not found: {model_path}")
        self.model_path = model_path
        self.threshold = threshold
        self.featurizer = Featurizer()
        self._local = threading.local()  # crfsuite taggers are not thread-safe: one per thread
        self._open()  # fail at start-up, not on the first note

    def _open(self) -> pycrfsuite.Tagger:
        tagger: pycrfsuite.Tagger | None = getattr(self._local, "tagger", None)
        if tagger is None:
            tagger = pycrfsuite.Tagger()
            tagger.open(str(self.model_path))
            self._local.tagger = tagger
        return tagger

    def tag(self, text: str) -> list[TaggedSpan]:
        tokens = tokenize(text)
        if not tokens:
            return []
        rows = self.featurizer.features(text, tokens)
        tagger = self._open()
        tagger.set(rows)
        best = tagger.tag()
        keep = 1.0 - self.threshold
        spans: list[TaggedSpan] = []
        run: list[int] = []
        run_label: Label | None = None
        run_conf = 1.0
        for i, predicted in enumerate(best):
            p_out = tagger.marginal(OUTSIDE, i) if predicted == OUTSIDE else 0.0
            if predicted == OUTSIDE and p_out >= keep:
                label = None
            elif predicted == OUTSIDE:
                label = _likeliest(tagger, i)
            else:
                label = Label(predicted[2:])
            starts = predicted.startswith("B-")
            if run and (label is None or label != run_label or starts):
                spans.append(_span(tokens, run, run_label, run_conf))
                run, run_label, run_conf = [], None, 1.0
            if label is not None:
                run.append(i)
                run_label = label
                run_conf = min(run_conf, 1.0 - (p_out if predicted == OUTSIDE else
                                               tagger.marginal(OUTSIDE, i)))
        if run:
            spans.append(_span(tokens, run, run_label, run_conf))
        return spans


def _likeliest(tagger: pycrfsuite.Tagger, i: int) -> Label:
    best_label, best_p = Label.NAME, -1.0
    for name in tagger.labels():
        if name == OUTSIDE:
            continue
        p = tagger.marginal(name, i)
        if p > best_p:
            best_label, best_p = Label(name[2:]), p
    return best_label


def _span(tokens: Sequence[Tok], run: list[int], label: Label | None, conf: float) -> TaggedSpan:
    assert label is not None  # noqa: S101 - a run always has a label
    return TaggedSpan(tokens[run[0]][0], tokens[run[-1]][1], label, max(0.0, min(1.0, conf)))
