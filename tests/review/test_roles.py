"""Issue 23.3 (roles) and 28.7 (no re-queue) on the queue, over SQLite and PostgreSQL: an
expert's decision is final for reviewers; a site-wide allow needs the expert role; a
patient-scope decision stops the same string being queued again for that patient; an item
decided meanwhile is refused as stale."""

from __future__ import annotations

import pytest

from keystore import EncryptedStore
from pipelines.document import ClinicalDocument
from pipelines.phi.detector import Detector
from pipelines.review import (
    Candidate,
    Decision,
    DecisionKind,
    ItemKind,
    ItemStatus,
    ReviewError,
    ReviewQueue,
    Role,
    Scope,
    StaleItem,
)
from pipelines.spans import Category, Span

from .conftest import held_document
from .test_queue import BLIND

PHI, NOT = DecisionKind.PHI, DecisionKind.NOT_PHI


def _queue(store: EncryptedStore) -> tuple[ReviewQueue, list[str], list[str]]:
    """Two held notes of two patients naming the same invented relative."""
    queue = ReviewQueue(store, lists_ttl_s=0.0)
    a = queue.enqueue(
        held_document(), Detector(BLIND), coordinates="in:0:1", held_reason=("leak_guard", "r")
    )
    other = ClinicalDocument(
        text="Brought in by Quillon today.\n",
        patient_id="P-9",
        assigning_authority="HOSP",
        identifiers=held_document().identifiers,
    )
    b = queue.enqueue(other, Detector(BLIND), coordinates="in:0:2", held_reason=("leak_guard", "r"))
    return queue, a, b


def _first(queue: ReviewQueue, ids: list[str], string: str) -> str:
    for i in ids:
        item = queue.item(i)
        if item is not None and item.string == string:
            return item.id
    raise AssertionError("no such item")


def test_a_reviewer_cannot_override_an_experts_site_decision(store: EncryptedStore) -> None:
    queue, a, b = _queue(store)
    referred = _first(queue, a, "Quillon")
    queue.decide(Decision(referred, "ana", Role.REVIEWER, DecisionKind.REFER))
    queue.decide(Decision(referred, "eve", Role.EXPERT, PHI, Category.NAME_RELATIVE, Scope.SITE))
    # the same string in another patient's note, still open or decided by the site decision
    twin = _first(queue, b, "Quillon")
    with pytest.raises(ReviewError, match="expert"):
        queue.decide(Decision(twin, "bob", Role.REVIEWER, NOT, scope=Scope.SITE))
    with pytest.raises(ReviewError, match="expert"):
        queue.decide(Decision(referred, "bob", Role.REVIEWER, NOT))
    # the deny entry stands: the name is still found in a third patient's note
    detector = Detector(BLIND, lists=queue.lists)
    text = "Visit with Quillon.\n"
    found = detector.detect(ClinicalDocument(text=text, patient_id="P-3", assigning_authority="H"))
    assert [s.text_of(text) for s in found] == ["Quillon"]
    assert not [d for d in queue.db.decisions() if d.reviewer == "bob"]


def test_a_site_allow_needs_the_expert_role(store: EncryptedStore) -> None:
    queue, a, _b = _queue(store)
    item = _first(queue, a, "Marbry")
    with pytest.raises(ReviewError, match="expert role"):
        queue.decide(Decision(item, "ana", Role.REVIEWER, NOT, scope=Scope.SITE))
    assert queue.item(item).status is ItemStatus.OPEN  # type: ignore[union-attr]
    assert queue.db.decisions() == [] and queue.lists().empty
    queue.decide(Decision(item, "eve", Role.EXPERT, NOT, scope=Scope.SITE))
    assert "marbry" in queue.lists().site.allow


def test_a_reviewer_cannot_change_an_experts_patient_entry(store: EncryptedStore) -> None:
    queue, a, _b = _queue(store)
    first, *_ = [i for i in a if (queue.item(i) or held_document()).string == "Marbry"]  # type: ignore[union-attr]
    queue.decide(Decision(first, "eve", Role.EXPERT, PHI, Category.NAME_RELATIVE, Scope.PATIENT))
    doc = held_document("Marbry again, with Westfalls staff.\n")
    # the patient's string was decided: not queued again (28.7) — as a band or disagreement
    # candidate of any of the patient's notes, nor as a place where it survives
    found = [Candidate(Span(0, 6, Category.NAME_OTHER, 0.5, "tagger"), ItemKind.BAND)]
    assert queue.undecided(doc, found) == []
    assert queue.add_candidates(doc, found, []) == []
    stranger = ClinicalDocument(text=doc.text, patient_id="P-9", assigning_authority="HOSP")
    assert queue.undecided(stranger, found) == found
    detector = Detector(BLIND, lists=queue.lists)
    new = queue.enqueue(doc, detector, coordinates="in:0:3", held_reason=("leak_guard", "r"))
    assert all((queue.item(i) or held_document()).string != "Marbry" for i in new)  # type: ignore[union-attr]
    # an undo of the expert's decision makes it queueable again; a reviewer's allow for the
    # patient is refused while the expert's entry stands
    spans = [i for i in a if (queue.item(i) or held_document()).string == "Quillon"]  # type: ignore[union-attr]
    queue.decide(Decision(spans[0], "ana", Role.REVIEWER, NOT, scope=Scope.PATIENT))
    queue.decide(Decision(spans[0], "eve", Role.EXPERT, PHI, Category.NAME_RELATIVE))
    with pytest.raises(ReviewError, match="expert"):
        queue.decide(Decision(spans[0], "ana", Role.REVIEWER, NOT, scope=Scope.PATIENT))


def test_a_decided_item_is_stale_for_a_reviewer(store: EncryptedStore) -> None:
    queue, a, _b = _queue(store)
    spans = [i for i in a if (queue.item(i) or held_document()).string == "Quillon"]  # type: ignore[union-attr]
    assert len(spans) == 2
    queue.decide(Decision(spans[0], "ana", Role.REVIEWER, PHI, Category.NAME_RELATIVE))
    # the note-scope decision settled the twin too; a key press meant for the twin's old page
    with pytest.raises(StaleItem):
        queue.decide(Decision(spans[1], "ana", Role.REVIEWER, NOT))
    assert [d.kind for d in queue.db.decisions(item_id=spans[1])] == ["phi"]
