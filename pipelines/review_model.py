"""The review queue's vocabulary: decision kinds, scopes, statuses, roles, a decision and
an unsealed item, and the errors a refused action raises (:mod:`pipelines.review` holds the
queue and re-exports these)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from keystore.forgetting import FORGOTTEN_DOC
from pipelines.errors import DeidstreamError
from pipelines.review_candidates import ItemKind
from pipelines.spans import Category, Span


class DecisionKind(StrEnum):
    PHI = "phi"
    NOT_PHI = "not_phi"
    UNSURE = "unsure"
    REFER = "refer"  # to an expert: not a rating


class Scope(StrEnum):
    NOTE = "note"
    PATIENT = "patient"
    SITE = "site"


class ItemStatus(StrEnum):
    OPEN = "open"
    REFERRED = "referred"
    DECIDED = "decided"


class DocStatus(StrEnum):
    OPEN = "open"
    RELEASING = "releasing"
    RELEASED = "released"
    HELD = "held"
    FORGOTTEN = FORGOTTEN_DOC  # its patient was forgotten (`keys forget`): never released


class Role(StrEnum):
    REVIEWER = "reviewer"
    EXPERT = "expert"


class ReviewError(DeidstreamError):
    """A refused review action (no text in the message)."""

    reason_class = "review"


class StaleItem(ReviewError):
    """The item was decided meanwhile (another key press, tab or reviewer's scope)."""


@dataclass(frozen=True)
class Decision:
    item_id: str
    reviewer: str
    role: Role
    kind: DecisionKind
    category: Category | None = None
    scope: Scope = Scope.NOTE

    def __post_init__(self) -> None:
        try:  # enums, whatever a caller passed (a request's strings)
            object.__setattr__(self, "role", Role(self.role))
            object.__setattr__(self, "kind", DecisionKind(self.kind))
            object.__setattr__(self, "scope", Scope(self.scope))
            if self.category is not None:
                object.__setattr__(self, "category", Category(self.category))
        except ValueError:
            raise ReviewError("a decision's role, kind, scope or category is unknown") from None
        if not self.reviewer or not self.item_id:
            raise ReviewError("a decision needs an item and a reviewer")
        if (self.kind is DecisionKind.PHI) != (self.category is not None):
            raise ReviewError("a PHI decision needs a category, and only a PHI decision")
        if self.kind in (DecisionKind.REFER, DecisionKind.UNSURE) and self.scope is not Scope.NOTE:
            raise ReviewError("unsure and refer apply to one item only")


@dataclass(frozen=True)
class QueueItem:
    """One queued item, unsealed (in memory only)."""

    id: str
    seq: int
    doc_id: str
    kind: ItemKind
    status: ItemStatus
    text: str  # the whole note
    candidate: Span | None  # None: a held document with no candidate span
    others: tuple[Span, ...]  # the other spans the detector found
    authority: str = ""
    patient_id: str = ""
    left: tuple[Span, ...] = ()  # a held note's places where an identifier survives

    @property
    def string(self) -> str:
        return self.candidate.text_of(self.text) if self.candidate else ""


def span_json(span: Span) -> list[object]:
    """A span as a queued item stores it (sealed with the item)."""
    return [span.start, span.end, span.category.value, span.confidence, span.source]


def span_of(raw: Sequence[object]) -> Span:
    """The span :func:`span_json` stored."""
    start, end, category, confidence, source = raw
    return Span(
        int(str(start)), int(str(end)), Category(str(category)), float(str(confidence)), str(source)
    )
