"""What the review queue's decisions teach: the decided notes as training data, and the
reviewers' agreement (docs/review.md, "Agreement and learning")."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

from pipelines.agreement import cohen_kappa, fleiss_kappa
from pipelines.spans import Category

if TYPE_CHECKING:
    from pipelines.review import DecisionKind, QueueItem, ReviewQueue

    # an item finally decided, its decision and the category a PHI decision gave
    _Decided = tuple[QueueItem, DecisionKind, Category | None]


@dataclass
class Stats:
    counts: dict[str, Counter[str]] = field(default_factory=dict)  # reviewer → kind → n
    cohen: dict[tuple[str, str], tuple[float | None, int]] = field(default_factory=dict)
    fleiss: float | None = None
    fleiss_items: int = 0


def decided_notes(queue: ReviewQueue) -> list[tuple[str, list[tuple[int, int, Category]]]]:
    """Each decided note's text and its PHI phrases for training (in memory only): the
    spans decided PHI, plus the detector's other spans not decided not-PHI."""
    return [
        (decided[0][0].text, _note_phrases(decided)) for decided in _decided_by_doc(queue).values()
    ]


def _decided_by_doc(queue: ReviewQueue) -> dict[str, list[_Decided]]:
    """The items finally decided PHI or not-PHI, by document (with the category a PHI
    decision gave, if any)."""
    from pipelines.review import DecisionKind

    final = queue._final_kinds([d.item_id for d in queue.db.decisions()])
    by_doc: dict[str, list[_Decided]] = defaultdict(list)
    categories = {d.item_id: d.category for d in queue.db.decisions() if d.category}
    for item_id, kind in final.items():
        row = queue.db.item(item_id)
        if row is None or kind not in (DecisionKind.PHI, DecisionKind.NOT_PHI):
            continue
        cat = categories.get(item_id)
        by_doc[row.doc_id].append((queue.open_item(row), kind, Category(cat) if cat else None))
    return by_doc


def _note_phrases(decided: list[_Decided]) -> list[tuple[int, int, Category]]:
    """One note's training phrases: decided PHI, then the detector's other spans that no
    not-PHI decision rejects (or overlaps)."""
    from pipelines.review import DecisionKind

    rejected = {
        (i.candidate.start, i.candidate.end)
        for i, k, _ in decided
        if i.candidate and k is DecisionKind.NOT_PHI
    }
    phrases = {
        (i.candidate.start, i.candidate.end): c or i.candidate.category
        for i, k, c in decided
        if i.candidate and k is DecisionKind.PHI
    }
    for s in decided[0][0].others:
        if (s.start, s.end) not in rejected and not any(
            s.start < e and b < s.end for b, e in rejected
        ):
            phrases.setdefault((s.start, s.end), s.category)
    return sorted((b, e, c) for (b, e), c in phrases.items())


def training_examples(queue: ReviewQueue) -> list[Any]:
    """:meth:`decided_notes` as the tagger's training examples (in memory only)."""
    from pipelines.phi.tagger.augment import Example, Phrase
    from pipelines.phi.tagger.model import label_of

    out = []
    for text, spans in decided_notes(queue):
        phrases = []
        for start, end, category in spans:
            label = label_of(category.value)
            if label is not None:
                phrases.append(Phrase(start, end, label))
        out.append(Example(text, tuple(phrases)))
    return out


def stats(queue: ReviewQueue) -> Stats:
    """Per-reviewer counts, Cohen's kappa per pair, Fleiss' kappa across all."""
    from pipelines.review import DecisionKind

    latest: dict[tuple[str, str], str] = {}
    out = Stats()
    for d in queue.db.decisions():
        out.counts.setdefault(d.reviewer, Counter())[d.kind] += 1
        if d.kind != DecisionKind.REFER:
            latest[(d.item_id, d.reviewer)] = d.kind
    return _agreement(latest, out)


def _agreement(latest: dict[tuple[str, str], str], out: Stats) -> Stats:
    by_item: dict[str, dict[str, str]] = defaultdict(dict)
    for (item, reviewer), kind in latest.items():
        by_item[item][reviewer] = kind
    reviewers = sorted(out.counts)
    for a, b in combinations(reviewers, 2):
        pairs = [(r[a], r[b]) for r in by_item.values() if a in r and b in r]
        if pairs:
            out.cohen[(a, b)] = (cohen_kappa(pairs), len(pairs))
    table: list[Mapping[Hashable, int]] = [
        Counter(r.values()) for r in by_item.values() if len(r) >= 2
    ]
    out.fleiss = fleiss_kappa(table)
    out.fleiss_items = len(table)
    return out
