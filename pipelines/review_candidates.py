"""Which spans of a document a person should look at (docs/review.md, "What enters the
queue"): tagger spans in the policy's ``[review] band`` and spans the rules and the tagger
disagree on; :class:`QueueingDetector` queues them off the stream's own detection."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from pipelines.document import ClinicalDocument
from pipelines.phi.base import Doc
from pipelines.phi.detector import Detector
from pipelines.policy import Policy
from pipelines.spans import Span

if TYPE_CHECKING:
    from pipelines.review import ReviewQueue

_NAMES_AND_PLACES = frozenset({"NAME", "LOCATION"})
# The kinds of identifier the rules tell apart; the tagger's one class (ID) agrees with each.
_IDENTIFIERS = frozenset(
    {"SSN", "MRN", "ACCOUNT", "HEALTH_PLAN", "LICENSE", "VEHICLE", "DEVICE", "ID"}
)


class ItemKind(StrEnum):
    HELD_DOCUMENT = "held_document"  # a held note as a whole: is any PHI left in it?
    BAND = "band"  # tagger confidence inside the policy band
    DISAGREEMENT = "disagreement"  # rules and tagger disagree
    HELD_SPAN = "held_span"  # where an identifier survives in a held document
    MARKED = "marked"  # a string a reviewer marked that the machine did not propose


@dataclass(frozen=True)
class Candidate:
    span: Span
    kind: ItemKind


def candidates(
    detector: Detector,
    document: ClinicalDocument | str,
    band: tuple[float, float],
    disagreement: bool = True,
) -> tuple[list[Candidate], list[Span]]:
    """The spans a person should look at, and every span the detector finds (the context)."""
    doc, rules, learned = detector.parts(document)
    return (
        candidates_from(rules, learned, band, disagreement),
        detector.finish(document, doc, rules, learned),
    )


def candidates_from(
    rules: Sequence[Span],
    learned: Sequence[Span],
    band: tuple[float, float],
    disagreement: bool = True,
) -> list[Candidate]:
    low, high = band
    found: dict[tuple[int, int], Candidate] = {}
    for span in learned:
        if low <= span.confidence <= high:
            found[(span.start, span.end)] = Candidate(span, ItemKind.BAND)
    if disagreement:
        for span in _disagreements(rules, learned):
            found.setdefault((span.start, span.end), Candidate(span, ItemKind.DISAGREEMENT))
    return sorted(found.values(), key=lambda c: c.span)


class QueueingDetector(Detector):
    """A detector that also queues each document's band and disagreement spans for review
    (the service with ``review_queue_spans``): one detection, the candidates read off the
    rules' and the tagger's spans before they are united. Idempotent per note text."""

    def __init__(self, policy: Policy, queue: ReviewQueue) -> None:
        super().__init__(policy, lists=queue.lists)
        self.queue = queue

    def detect(self, document: ClinicalDocument | Doc | str) -> list[Span]:
        doc, rules, learned = self.parts(document)
        spans = self.finish(document, doc, rules, learned)
        if isinstance(document, ClinicalDocument):
            found = candidates_from(
                rules, learned, self.policy.review_band, self.policy.review_disagreement
            )
            if found:
                self.queue.add_candidates(document, found, spans)
        return spans


def _disagreements(rules: Sequence[Span], learned: Sequence[Span]) -> Iterable[Span]:
    """Names and places one side finds and the other does not, and overlaps of two groups."""
    for span in learned:
        overlapping = [r for r in rules if r.overlaps(span)]
        if not overlapping:
            if span.category.group in _NAMES_AND_PLACES:
                yield span
        elif all(not _same_kind(r, span) for r in overlapping):
            yield span
    for rule in rules:
        if rule.category.group in _NAMES_AND_PLACES and not any(s.overlaps(rule) for s in learned):
            yield rule


def _same_kind(rule: Span, learned: Span) -> bool:
    """One category group, or both identifiers (the tagger does not tell an MRN from an
    account number: its ID over a rule's MRN is agreement)."""
    groups = {rule.category.group, learned.category.group}
    return len(groups) == 1 or groups <= _IDENTIFIERS
