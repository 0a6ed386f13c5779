"""The ``Detector``: runs the recognizers the policy names and returns sorted, merged spans."""

from __future__ import annotations

from pipelines.deadline import check
from pipelines.document import ClinicalDocument
from pipelines.phi import registry
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.combine import unite
from pipelines.phi.merge import merge_spans
from pipelines.policy import Policy
from pipelines.spans import Span


class Detector:
    def __init__(self, policy: Policy | None = None) -> None:
        self.policy = policy or Policy.load()
        self.recognizers: list[Recognizer] = [
            registry.get(name)(options) for name, options in self.policy.recognizers.items()
        ]

    def detect(self, document: ClinicalDocument | Doc | str) -> list[Span]:
        if isinstance(document, str):
            doc = Doc(document)
        elif isinstance(document, ClinicalDocument):
            doc = Doc.from_document(document)
        else:
            doc = document
        if not doc.text:
            return []
        found: list[Span] = []
        learned: list[Span] = []
        for recognizer in self.recognizers:
            # a learned recognizer applies its own probability threshold
            (learned if recognizer.learned else found).extend(recognizer.detect(doc))
            check(recognizer.name)  # the per-document deadline, if the caller set one
        size = len(doc.text)
        kept = [
            s
            for s in found
            if s.end <= size and s.confidence >= self.policy.threshold_for(s.category)
        ]
        return merge_spans(unite(kept, [s for s in learned if s.end <= size]))
