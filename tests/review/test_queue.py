"""The review queue over a real key store (SQLite and PostgreSQL): what enters, sealing,
decisions by scope, lists the detector uses, referral, undo, audit, settling held notes."""

from __future__ import annotations

from typing import Any

import pytest

from keystore import EncryptedStore
from keystore.reviewdb import DocRow
from pipelines.document import ClinicalDocument
from pipelines.phi.detector import Detector
from pipelines.policy import Policy
from pipelines.review import (
    Decision,
    DecisionKind,
    DocStatus,
    ItemKind,
    ItemStatus,
    ReviewError,
    ReviewQueue,
    Role,
    Scope,
)
from pipelines.review_candidates import _disagreements
from pipelines.spans import Category, Span

from .conftest import NOTE, held_document

BLIND = Policy.from_mapping({"recognizers": {}})  # finds nothing: the leak guard would hold


def _dump(store: EncryptedStore) -> str:
    """Every row of every review table and the audit log, as text."""
    out = []
    backend = store.backend
    with backend._transaction(write=False) as cur:
        for table in ("review_items", "review_docs", "review_decisions", "review_lists", "audit"):
            for row in backend._exec(cur, f"SELECT * FROM {table}").fetchall():  # noqa: S608
                out.append(repr(row))
                out.extend(
                    bytes(v).decode("latin-1") for v in row if isinstance(v, bytes | memoryview)
                )
    return "\n".join(out)


def _queue(store: EncryptedStore, **kw: Any) -> tuple[ReviewQueue, list[str]]:
    queue = ReviewQueue(store, lists_ttl_s=0.0, **kw)
    ids = queue.enqueue(
        held_document(),
        Detector(BLIND),
        coordinates="in.hl7v2:0:7",
        held_reason=("leak_guard", "leak guard: NAME_RELATIVE=1"),
    )
    return queue, ids


def test_held_document_enters_with_the_strings_that_held_it(store: EncryptedStore) -> None:
    queue, ids = _queue(store)
    items = [queue.item(i) for i in ids]
    kinds = [i.kind for i in items if i]
    assert kinds.count(ItemKind.HELD_DOCUMENT) == 1
    strings = {i.string for i in items if i and i.kind is ItemKind.HELD_SPAN}
    assert {"Quillon", "Marbry"} <= strings or "Quillon Marbry" in strings
    assert all(i and i.text == NOTE for i in items)
    # again (a second sync of the held topic): nothing new
    assert len(queue.db.items_of_doc(items[0].doc_id)) == len(ids)  # type: ignore[union-attr]
    queue.enqueue(
        held_document(),
        Detector(BLIND),
        coordinates="in.hl7v2:0:7",
        held_reason=("leak_guard", "x"),
    )
    assert len(queue.db.items_of_doc(items[0].doc_id)) == len(ids)  # type: ignore[union-attr]
    dump = _dump(store)
    for secret in ("Quillon", "Marbry", "Westfalls", "P-7734", "daughter"):
        assert secret not in dump


def _span_items(queue: ReviewQueue, ids: list[str]) -> list[Any]:
    return [i for i in (queue.item(x) for x in ids) if i and i.candidate]


def test_patient_scope_decides_every_occurrence_and_feeds_the_detector(
    store: EncryptedStore,
) -> None:
    queue, ids = _queue(store)
    spans = _span_items(queue, ids)
    first = spans[0]
    same = [s for s in spans if s.string == first.string]
    assert len(same) == 2  # the name occurs twice in the note
    decided = queue.decide(
        Decision(
            first.id, "ana", Role.REVIEWER, DecisionKind.PHI, Category.NAME_RELATIVE, Scope.PATIENT
        )
    )
    assert set(decided) == {s.id for s in same}
    assert all(queue.item(s.id).status is ItemStatus.DECIDED for s in same)  # type: ignore[union-attr]
    detector = Detector(BLIND, lists=queue.lists)
    later = f"Note: {first.string} visited again.\n"
    mine = ClinicalDocument(text=later, patient_id="P-7734", assigning_authority="HOSP")
    other = ClinicalDocument(text=later, patient_id="P-1", assigning_authority="HOSP")
    found = detector.detect(mine)
    assert [s.text_of(later) for s in found] == [first.string]
    assert found[0].category is Category.NAME_RELATIVE
    assert detector.detect(other) == []  # a patient's list is that patient's only
    assert first.string not in _dump(store)


def test_site_allow_drops_a_detected_span(store: EncryptedStore) -> None:
    queue, ids = _queue(store)
    item = _span_items(queue, ids)[0]
    # a site allow needs the expert role (issue 23.3)
    queue.decide(Decision(item.id, "eve", Role.EXPERT, DecisionKind.NOT_PHI, scope=Scope.SITE))
    lists = queue.lists()
    text = f"{item.string} sign noted"
    spans = [Span(0, len(item.string), Category.NAME_OTHER, 0.9, "tagger")]
    assert lists.apply(text, spans) == []


def test_referred_items_are_the_experts(store: EncryptedStore) -> None:
    queue, ids = _queue(store)
    item = _span_items(queue, ids)[0]
    queue.decide(Decision(item.id, "ana", Role.REVIEWER, DecisionKind.REFER))
    assert queue.item(item.id).status is ItemStatus.REFERRED  # type: ignore[union-attr]
    assert item.id not in [i.id for i in queue.page(Role.REVIEWER, limit=100)]
    assert queue.page(Role.EXPERT, limit=1)[0].id == item.id
    with pytest.raises(ReviewError, match="referred"):
        queue.decide(Decision(item.id, "bob", Role.REVIEWER, DecisionKind.NOT_PHI))
    queue.decide(Decision(item.id, "eve", Role.EXPERT, DecisionKind.NOT_PHI))
    assert queue.item(item.id).status is ItemStatus.DECIDED  # type: ignore[union-attr]


def test_undo_reopens_and_takes_back_the_list_entry(store: EncryptedStore) -> None:
    queue, ids = _queue(store)
    item = _span_items(queue, ids)[0]
    queue.decide(
        Decision(item.id, "ana", Role.REVIEWER, DecisionKind.PHI, Category.NAME_OTHER, Scope.SITE)
    )
    assert not queue.lists().empty
    undone = queue.undo("ana")
    assert item.id in undone
    assert queue.item(item.id).status is ItemStatus.OPEN  # type: ignore[union-attr]
    assert queue.lists().empty
    assert queue.undo("nobody") == []


def test_undo_keeps_a_list_entry_another_live_decision_made(store: EncryptedStore) -> None:
    """An entry goes with the last live decision that made it: undoing one reviewer's site
    decision leaves (or restores) another's; a note-scope undo never touches the lists."""
    clock = iter(range(1, 100))
    queue, ids = _queue(store, clock=lambda: float(next(clock)))
    spans = _span_items(queue, ids)
    item = spans[0]
    twin = next(s for s in spans if s.string == item.string and s.id != item.id)
    word = item.string.lower()

    def site(reviewer: str, kind: DecisionKind) -> None:
        category = Category.NAME_RELATIVE if kind is DecisionKind.PHI else None
        queue.decide(Decision(item.id, reviewer, Role.EXPERT, kind, category, Scope.SITE))

    site("ana", DecisionKind.NOT_PHI)
    site("bob", DecisionKind.NOT_PHI)
    queue.undo("bob")  # ana's allow is still live: the entry stays
    assert word in {w.lower() for w in queue.lists().site.allow}
    site("bob", DecisionKind.PHI)  # bob overrides with a deny ...
    assert word in {w.lower() for w in queue.lists().site.deny}
    queue.undo("bob")  # ... and takes it back: ana's allow again
    lists = queue.lists()
    assert word in {w.lower() for w in lists.site.allow} and not lists.site.deny
    queue.decide(Decision(twin.id, "cy", Role.EXPERT, DecisionKind.NOT_PHI))  # note scope
    queue.undo("cy")
    assert word in {w.lower() for w in queue.lists().site.allow}
    queue.undo("ana")  # the last live decision gone: so is the entry
    assert queue.lists().empty
    assert store.admin.verify_audit().ok


def test_every_decision_is_audited_without_text(store: EncryptedStore) -> None:
    queue, ids = _queue(store)
    item = _span_items(queue, ids)[0]
    queue.decide(Decision(item.id, "ana", Role.REVIEWER, DecisionKind.PHI, Category.NAME_OTHER))
    queue.undo("ana")
    lines = store.admin.audit_log()
    mine = [line for line in lines if line[1].startswith("review-")]
    assert [line[1] for line in mine] == ["review-decide", "review-undo"]
    assert mine[0][2] == "ana" and mine[0][4] == item.id
    assert store.admin.verify_audit().ok
    assert item.string not in repr(lines)


def _decide_all(queue: ReviewQueue, ids: list[str], whole: DecisionKind) -> None:
    for item_id in ids:
        item = queue.item(item_id)
        assert item is not None
        if item.status is ItemStatus.DECIDED:
            continue
        if item.candidate is None:
            queue.decide(
                Decision(
                    item_id,
                    "ana",
                    Role.REVIEWER,
                    whole,
                    Category.NAME_OTHER if whole is DecisionKind.PHI else None,
                )
            )
        else:
            queue.decide(
                Decision(
                    item_id,
                    "ana",
                    Role.REVIEWER,
                    DecisionKind.PHI,
                    Category.NAME_RELATIVE,
                    Scope.PATIENT,
                )
            )


def test_a_decided_held_document_is_released_once(store: EncryptedStore) -> None:
    queue, ids = _queue(store)
    released: list[DocRow] = []
    assert queue.settle(released.append) == []  # nothing decided yet
    _decide_all(queue, ids, DecisionKind.NOT_PHI)
    assert queue.settle(released.append) == [("in.hl7v2:0:7", DocStatus.RELEASED)]
    assert queue.settle(released.append) == []
    assert [d.coordinates for d in released] == ["in.hl7v2:0:7"]


def test_a_failed_release_is_tried_again(store: EncryptedStore) -> None:
    queue, ids = _queue(store)
    _decide_all(queue, ids, DecisionKind.NOT_PHI)

    def broken(doc: DocRow) -> None:
        raise OSError("broker down")

    with pytest.raises(OSError):
        queue.settle(broken)
    released: list[DocRow] = []
    assert queue.settle(released.append) == [("in.hl7v2:0:7", DocStatus.RELEASED)]


def test_phi_left_in_the_note_keeps_it_held_with_a_reason(store: EncryptedStore) -> None:
    queue, ids = _queue(store)
    _decide_all(queue, ids, DecisionKind.PHI)
    released: list[DocRow] = []
    assert queue.settle(released.append) == [("in.hl7v2:0:7", DocStatus.HELD)]
    assert released == []
    doc = queue.db.docs(DocStatus.HELD)[0]
    assert doc.reason.startswith("review:") and "Marbry" not in doc.reason


def test_two_reviewers_agreement(store: EncryptedStore) -> None:
    queue, ids = _queue(store, reviews_per_item=2)
    spans = _span_items(queue, ids)
    assert len(spans) >= 2
    a = spans[0]
    b = next(s for s in spans if s.string != a.string)
    n_a = sum(1 for s in spans if s.string == a.string)  # a note decision covers them all
    n_b = sum(1 for s in spans if s.string == b.string)
    for reviewer, kinds in (
        ("ana", [DecisionKind.NOT_PHI, DecisionKind.UNSURE]),
        ("bob", [DecisionKind.NOT_PHI, DecisionKind.NOT_PHI]),
    ):
        for item, kind in zip((a, b), kinds, strict=True):
            queue.decide(Decision(item.id, reviewer, Role.REVIEWER, kind))
    assert queue.item(a.id).status is ItemStatus.DECIDED  # type: ignore[union-attr]
    stats = queue.stats()
    assert stats.counts["ana"] == {"not_phi": n_a, "unsure": n_b}
    assert stats.counts["bob"] == {"not_phi": n_a + n_b}
    kappa, n = stats.cohen[("ana", "bob")]
    # bob always says not PHI: p_e = p_o (ana's not-PHI share), kappa 0 whatever the counts
    assert n == n_a + n_b and kappa == pytest.approx(0.0)
    assert stats.fleiss_items == n_a + n_b


def test_disagreements_are_names_and_places_one_side_misses() -> None:
    rules = [Span(0, 5, Category.DATE), Span(10, 15, Category.NAME_PATIENT)]
    learned = [
        Span(0, 5, Category.DATE, 0.9, "tagger"),
        Span(20, 26, Category.LOCATION_OTHER, 0.9, "tagger"),
        Span(30, 33, Category.DATE, 0.9, "tagger"),
    ]
    found = list(_disagreements(rules, learned))
    assert Span(20, 26, Category.LOCATION_OTHER, 0.9, "tagger") in found  # tagger only
    assert Span(10, 15, Category.NAME_PATIENT) in found  # rules only
    assert all(s.category is not Category.DATE for s in found)


def test_the_taggers_id_agrees_with_any_identifier_kind() -> None:
    rules = [Span(0, 9, Category.MRN), Span(20, 27, Category.LOCATION_ZIP)]
    learned = [
        Span(0, 9, Category.ID, 0.9, "tagger"),  # an MRN: the tagger has one class for codes
        Span(20, 27, Category.ID, 0.9, "tagger"),  # a ZIP to the rules: a real disagreement
    ]
    assert list(_disagreements(rules, learned)) == [learned[1]]


def test_decisions_validate_themselves() -> None:
    with pytest.raises(ReviewError):
        Decision("i", "ana", Role.REVIEWER, DecisionKind.PHI)  # no category
    with pytest.raises(ReviewError):
        Decision("i", "ana", Role.REVIEWER, DecisionKind.NOT_PHI, Category.DATE)
    with pytest.raises(ReviewError):
        Decision("i", "ana", Role.REVIEWER, DecisionKind.REFER, scope=Scope.SITE)


def test_a_reviewers_wide_decision_passes_referred_twins_over(store: EncryptedStore) -> None:
    queue, ids = _queue(store)
    spans = _span_items(queue, ids)
    first = spans[0]
    twin = next(s for s in spans if s.string == first.string and s.id != first.id)
    queue.decide(Decision(twin.id, "ana", Role.REVIEWER, DecisionKind.REFER))
    decided = queue.decide(
        Decision(
            first.id, "ana", Role.REVIEWER, DecisionKind.PHI, Category.NAME_RELATIVE, Scope.PATIENT
        )
    )
    assert twin.id not in decided
    assert queue.item(twin.id).status is ItemStatus.REFERRED  # type: ignore[union-attr]
