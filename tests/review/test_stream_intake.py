"""Uncertain spans of streamed documents: one detection, candidates queued, idempotent."""

from __future__ import annotations

from typing import ClassVar

from keystore import EncryptedStore
from pipelines.document import ClinicalDocument
from pipelines.phi.base import Doc, Recognizer
from pipelines.review import ItemKind, QueueingDetector, ReviewQueue, Role
from pipelines.spans import Category, Span
from service.settings import Settings
from service.wiring import _reviewed_deidentifier

from .test_queue import BLIND

TEXT = "Seen with Warfarin RN. Admitted 2/2 from Harrowgate.\n"


class Learned(Recognizer):
    """Stands in for the CRF: fixed confidences, so the band test does not hang on a model."""

    name: ClassVar[str] = "learned-for-test"
    categories: ClassVar[frozenset[Category]] = frozenset(Category)
    learned: ClassVar[bool] = True
    calls = 0

    def detect(self, doc: Doc) -> list[Span]:
        Learned.calls += 1
        out = []
        for word, category, confidence in (
            ("Warfarin", Category.NAME_OTHER, 0.5),
            ("Harrowgate", Category.LOCATION_OTHER, 0.95),
            ("2/2", Category.DATE, 0.99),
        ):
            start = doc.text.find(word)
            if start >= 0:
                out.append(Span(start, start + len(word), category, confidence, "tagger"))
        return out


def test_streamed_document_queues_its_uncertain_spans_once(store: EncryptedStore) -> None:
    queue = ReviewQueue(store)
    detector = QueueingDetector(BLIND, queue)
    detector.recognizers = [Learned()]
    doc = ClinicalDocument(text=TEXT, patient_id="P1", assigning_authority="H")
    Learned.calls = 0
    spans = detector.detect(doc)
    assert Learned.calls == 1  # one detection for the answer and the candidates
    assert {s.text_of(TEXT) for s in spans} == {"Warfarin", "Harrowgate", "2/2"}
    items = queue.page(Role.REVIEWER, limit=10)
    assert {(i.string, i.kind) for i in items} == {
        ("Warfarin", ItemKind.BAND),
        ("Harrowgate", ItemKind.DISAGREEMENT),
    }
    assert all(len(i.others) == 2 for i in items)  # the context: the other spans
    detector.detect(doc)  # the same note again (a re-send): nothing new
    assert len(queue.page(Role.REVIEWER, limit=10)) == 2
    detector.detect(TEXT)  # no document identity (a bare string): not queued
    assert len(queue.page(Role.REVIEWER, limit=10)) == 2


def test_the_service_queues_spans_only_when_asked(store: EncryptedStore) -> None:
    on = Settings(review_enabled=True, review_queue_spans=True)
    plain = Settings(review_enabled=True)
    assert isinstance(_reviewed_deidentifier(on, BLIND, store).detector, QueueingDetector)
    detector = _reviewed_deidentifier(plain, BLIND, store).detector
    assert not isinstance(detector, QueueingDetector) and detector.lists is not None
    assert _reviewed_deidentifier(Settings(), BLIND, store) is None
