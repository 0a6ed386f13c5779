"""Issue 23.7 (the workbench part) on the queue, over SQLite and PostgreSQL, with the
default policy's detector: a held note whose surviving identifier the detector did not
propose (an MRN glued to a word) is queued with that place; once decided, the same note
de-identified again is published (its decided places applied), and queued again it would not
repeat the decided places; a reviewer can mark a string the machine did not propose."""

from __future__ import annotations

import copy
from functools import cache

from keystore import EncryptedStore
from pipelines.deidentify import Deidentifier
from pipelines.document import ClinicalDocument, Identifier, Identifiers, PersonName
from pipelines.phi.detector import Detector
from pipelines.policy import Policy
from pipelines.review import (
    Decision,
    DecisionKind,
    DocStatus,
    ItemKind,
    QueueItem,
    ReviewQueue,
    Role,
    Scope,
)
from pipelines.spans import Category
from surrogates import SurrogateSettings, new_patient_state

# invented: a patient, an MRN glued to the family name, a nickname no recognizer knows
MRN = "700003"
TEXT = "Tessaly Dunmore seen today. Chart Dunmore700003 reviewed; Tezzy to call back.\n"


def _doc() -> ClinicalDocument:
    return ClinicalDocument(
        text=TEXT,
        patient_id=MRN,
        assigning_authority="HOSP",
        identifiers=Identifiers(
            patient_names=(PersonName(family="Dunmore", given=("Tessaly",)),),
            patient_ids=(Identifier(MRN, "HOSP", "MR"),),
        ),
    )


@cache
def _base() -> Detector:
    return Detector(Policy.load())


def _detector(queue: ReviewQueue) -> Detector:
    found = copy.copy(_base())
    found.lists = queue.lists
    return found


def _deidentify(queue: ReviewQueue) -> tuple[str | None, str]:
    base = _base()
    result = Deidentifier(base.policy, detector=_detector(queue)).deidentify(
        _doc(), new_patient_state(SurrogateSettings())
    )
    return result.held_reason, result.text


def _names_phi(queue: ReviewQueue, items: list[QueueItem]) -> None:
    """The detector's names (queued where the rules and the tagger disagree): PHI."""
    for i in items:
        now = queue.item(i.id)
        if i.candidate and i.kind is ItemKind.DISAGREEMENT and now and now.status.value == "open":
            category = i.candidate.category
            queue.decide(Decision(i.id, "ana", Role.REVIEWER, DecisionKind.PHI, category))


def _items(queue: ReviewQueue, ids: list[str]) -> list[QueueItem]:
    return [i for i in (queue.item(x) for x in ids) if i is not None]


def _enqueue(queue: ReviewQueue, where: str) -> list[QueueItem]:
    held, _ = _deidentify(queue)
    assert held is not None
    return _items(
        queue,
        queue.enqueue(
            _doc(), _detector(queue), coordinates=where, held_reason=("leak_guard", held)
        ),
    )


def test_a_glued_identifier_is_queued_where_it_survives_then_published(
    store: EncryptedStore,
) -> None:
    queue = ReviewQueue(store, lists_ttl_s=0.0, sleep=lambda _s: None)
    held, _ = _deidentify(queue)
    assert held == "leak guard: MRN=1"
    items = _enqueue(queue, "in.hl7v2:0:4")
    glued = [i for i in items if i.kind is ItemKind.HELD_SPAN]
    assert [i.string for i in glued] == [MRN]
    whole = next(i for i in items if i.kind is ItemKind.HELD_DOCUMENT)
    assert [s.text_of(TEXT) for s in whole.left] == [MRN]  # the page shows its place
    assert queue.db.doc(whole.doc_id).reason == held  # type: ignore[union-attr]
    _names_phi(queue, items)
    queue.decide(Decision(glued[0].id, "ana", Role.REVIEWER, DecisionKind.PHI, Category.MRN))
    queue.decide(Decision(whole.id, "ana", Role.REVIEWER, DecisionKind.NOT_PHI))
    released: list[str] = []
    assert queue.settle(lambda doc: released.append(doc.coordinates)) == [
        ("in.hl7v2:0:4", DocStatus.RELEASED)
    ]
    # the service decides the released note again: published, the MRN replaced
    held, out = _deidentify(queue)
    assert held is None and MRN not in out
    # were it held again for another reason, the decided place is not queued again
    again = _enqueue_anyway(queue, "in.hl7v2:0:9")
    assert [i.kind for i in again] == [ItemKind.HELD_DOCUMENT]


def _enqueue_anyway(queue: ReviewQueue, where: str) -> list[QueueItem]:
    return _items(
        queue,
        queue.enqueue(
            _doc(), _detector(queue), coordinates=where, held_reason=("leak_guard", "other")
        ),
    )


def test_a_reviewer_marks_a_string_the_machine_did_not_propose(store: EncryptedStore) -> None:
    queue = ReviewQueue(store, lists_ttl_s=0.0, sleep=lambda _s: None)
    items = _enqueue(queue, "in.hl7v2:0:5")
    whole = next(i for i in items if i.kind is ItemKind.HELD_DOCUMENT)
    start = TEXT.index("Tezzy")
    assert not any(s.overlaps(s.with_bounds(start, start + 5)) for s in whole.others)
    decision = Decision(
        whole.id, "ana", Role.REVIEWER, DecisionKind.PHI, Category.NAME_PATIENT, Scope.NOTE
    )
    marked, decided = queue.mark(whole.id, start, start + 5, decision)
    item = queue.item(marked)
    assert item is not None and item.kind is ItemKind.MARKED and item.string == "Tezzy"
    assert decided == [marked] and item.doc_id == whole.doc_id
    _names_phi(queue, items)
    for i in items:
        if i.kind is ItemKind.HELD_SPAN:
            queue.decide(Decision(i.id, "ana", Role.REVIEWER, DecisionKind.PHI, Category.MRN))
    queue.decide(Decision(whole.id, "ana", Role.REVIEWER, DecisionKind.NOT_PHI))
    assert queue.settle(lambda _doc: None)[0][1] is DocStatus.RELEASED
    held, out = _deidentify(queue)
    assert held is None and "Tezzy" not in out and MRN not in out
    assert "Tezzy" not in repr(queue.db.list_entries())  # sealed
    # a site-wide allow of a marked string still needs the expert role
    refused = Decision(whole.id, "bob", Role.REVIEWER, DecisionKind.NOT_PHI, scope=Scope.SITE)
    try:
        queue.mark(whole.id, 0, 7, refused)
    except Exception as exc:  # noqa: BLE001 - the class is checked below
        assert "expert" in str(exc)
    else:
        raise AssertionError("a reviewer's site allow was accepted")
