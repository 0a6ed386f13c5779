"""The learned tagger at run time: a linear-chain CRF (crfsuite) over word features.

``Tagger.tag(text)`` returns spans of coarse PHI classes with a confidence (the CRF's marginal
probability that the tokens are PHI). A token is PHI when the marginal of "not PHI" falls below
``1 - threshold``; so a policy can trade precision for recall without retraining.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Final

from pipelines.phi.lexicons import Case, words_case_of
from pipelines.phi.tagger.crf import CrfModel, ItemTagger
from pipelines.phi.tagger.features import Encoded, Featurizer, token_columns
from pipelines.phi.wordlists import word_set
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


# The CRF's labels (B-NAME, I-NAME, …) -> their class, without an enum lookup per item
_LABEL_OF: Final = {f"{prefix}-{label}": label for label in Label for prefix in "BI"}

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
    """A trained CRF model and the featurizer it was trained with.

    ``threshold``: a token the best path calls "not PHI" is PHI all the same when the model
    gives it at least this probability of PHI (per label with ``thresholds``).
    """

    def __init__(
        self,
        model_path: Path | None = None,
        threshold: float = 0.5,
        thresholds: Mapping[Label, float] | None = None,
        labels: frozenset[Label] = frozenset({Label.NAME, Label.LOCATION}),
    ) -> None:
        if model_path is None:
            ref = resources.files("pipelines.phi").joinpath(DEFAULT_MODEL)
            model_path = Path(str(ref))
        if not model_path.is_file():
            raise FileNotFoundError(f"tagger model not found: {model_path}")
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"tagger threshold {threshold} outside (0, 1]")
        self.model_path = model_path
        self.thresholds = {label: threshold for label in Label} | dict(thresholds or {})
        self._least = min(self.thresholds.values())
        self.labels = labels  # the classes reported; the others are left to the rules
        self._local = threading.local()  # crfsuite taggers are not thread-safe: one per thread
        self._model = CrfModel(model_path)  # fails at start-up, not on the first note
        self._outside = self._model.labels.index(OUTSIDE)
        self.featurizer = Featurizer(keep=self._model.attribute_ids)

    def _open(self) -> ItemTagger:
        tagger: ItemTagger | None = getattr(self._local, "tagger", None)
        if tagger is None:
            tagger = self._local.tagger = self._model.tagger()
        return tagger

    def _decide(self, tagger: ItemTagger, i: int, predicted: str, p_phi: float) -> Label | None:
        """The label of item ``i`` (None: not PHI), given the probability that it is PHI."""
        if predicted != OUTSIDE:
            return _LABEL_OF[predicted]
        if p_phi < self._least:
            return None
        label = _likeliest(tagger, self._model.labels, i)
        return label if p_phi >= self.thresholds[label] else None

    def tag(
        self,
        text: str,
        columns: tuple[list[int], list[int], list[str]] | None = None,
        case: Case | None = None,
    ) -> list[TaggedSpan]:
        """The spans of ``text``; ``columns``: its tokens (``features.token_columns``) and
        ``case``: its case model as the tagger reads it (``Case.of_words``), when the caller
        has them (the analysed document's, ``lexicons.tokens``)."""
        starts, ends, note = self._encoded(text, columns, case)
        items = note.items
        if not items:
            return []
        tagger = self._open()
        tagger.set(note.rows.packed, note.rows.counts)
        names = self._model.labels
        # the items that may be PHI, their labels on the best path and P(not PHI); the
        # others (most items) are not PHI and only end the phrase open before them
        found, path, p_out = tagger.candidates(self._outside, self._least)
        spans: list[TaggedSpan] = []
        run: list[int] = []  # the items (indices into ``items``) of the phrase open
        run_label: Label | None = None
        run_conf = 1.0
        for i, best, p in zip(found, path, p_out, strict=True):
            predicted = names[best]
            p_phi = 1.0 - p
            label = self._decide(tagger, i, predicted, p_phi)
            if run and (
                label is None
                or label != run_label
                or run[-1] != i - 1  # an item between that is no PHI
                or predicted.startswith("B-")
                or _breaks(text, ends[items[run[-1]]], starts[items[i]], run_label)
            ):
                spans.append(_span(starts, ends, items, run, run_label, run_conf))
                run, run_label, run_conf = [], None, 1.0
            if label is not None:
                run.append(i)
                run_label = label
                run_conf = min(run_conf, p_phi)
        if run:
            spans.append(_span(starts, ends, items, run, run_label, run_conf))
        spans = [s for s in spans if s.label in self.labels]
        return spans

    def _encoded(
        self,
        text: str,
        columns: tuple[list[int], list[int], list[str]] | None,
        case: Case | None,
    ) -> tuple[list[int], list[int], Encoded]:
        """The starts and ends of ``text``'s tokens and their encoding: its own tokens and
        ``lexicons.words_case_of`` unless the caller gave them."""
        starts, ends, words = token_columns(text) if columns is None else columns
        case = words_case_of(text) if case is None else case
        return starts, ends, self.featurizer.encode(text, starts, words, case)


# Words a name or a place runs on over though the CRF does not label them (they are common
# English, ``features.may_be_phi``): particles of surnames, the joints of facility names
# ("Hospital of the Good Shepherd", "Saint Mary and Saint Joseph Hospital").
CONNECTORS: Final[dict[Label, frozenset[str]]] = {
    Label.NAME: word_set("tagger_name_connectors"),
    Label.LOCATION: word_set("tagger_place_connectors"),
}


_CLAUSE_MARKS: Final = frozenset(",;:()[]{}\n|/")


def _breaks(text: str, end: int, start: int, label: Label | None = None) -> bool:
    """Text between two items that ends a phrase: a clause mark or a line break. A name or
    a place runs on over spaces, hyphens, periods of initials and apostrophes, and over up
    to two of its class's ``CONNECTORS``."""
    gap = text[end:start]
    if not _CLAUSE_MARKS.isdisjoint(gap):
        return True
    if len(gap) <= 3:
        return False
    words = gap.lower().split()
    joints = CONNECTORS.get(label) if label is not None else None
    return not (joints and 0 < len(words) <= 2 and all(w in joints for w in words))


def _likeliest(tagger: ItemTagger, names: tuple[str, ...], i: int) -> Label:
    best_label, best_p = Label.NAME, -1.0
    for label, name in enumerate(names):
        if name == OUTSIDE:
            continue
        p = tagger.marginal(label, i)
        if p > best_p:
            best_label, best_p = _LABEL_OF[name], p
    return best_label


def _span(
    starts: list[int],
    ends: list[int],
    items: list[int],
    run: list[int],
    label: Label | None,
    conf: float,
) -> TaggedSpan:
    assert label is not None  # noqa: S101 - a run always has a label
    start, end = starts[items[run[0]]], ends[items[run[-1]]]
    return TaggedSpan(start, end, label, max(0.0, min(1.0, conf)))
