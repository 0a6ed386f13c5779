"""The ``Detector``: runs the recognizers the policy names and returns sorted, merged spans."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pipelines.deadline import check
from pipelines.document import ClinicalDocument
from pipelines.phi import lexicons, registry
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.combine import unite
from pipelines.phi.exclusions import veto
from pipelines.phi.lists import ReviewLists
from pipelines.phi.merge import merge_spans, without_inside_contact
from pipelines.phi.propagate import in_note
from pipelines.policy import Policy
from pipelines.spans import Category, Span


class Detector:
    def __init__(
        self, policy: Policy | None = None, lists: Callable[[], ReviewLists] | None = None
    ) -> None:
        self.policy = policy or Policy.load()
        # reviewers' allow / deny lists (pipelines.review): asked for on every document, so
        # a decision applies from the next document on
        self.lists = lists
        self._threshold: tuple[Policy | None, dict[Category, float]] = (None, {})
        self.recognizers: list[Recognizer] = [
            registry.get(name)(options) for name, options in self.policy.recognizers.items()
        ]

    def detect(self, document: ClinicalDocument | Doc | str) -> list[Span]:
        doc, kept, learned = self.parts(document)
        return self.finish(document, doc, kept, learned)

    def finish(
        self,
        document: ClinicalDocument | Doc | str,
        doc: Doc,
        kept: list[Span],
        learned: list[Span],
    ) -> list[Span]:
        """The detector's answer from :meth:`parts`: united, the lists applied, merged."""
        if not doc.text:
            return []
        # the rules' false alarms vetoed here, the tagger's in its recognizer (issue 26)
        spans = unite(veto(doc.text, kept), learned)
        lists = self.lists() if self.lists is not None else None
        if lists is not None and not lists.empty:
            patient = (
                (document.assigning_authority, document.patient_id)
                if isinstance(document, ClinicalDocument)
                else ("", "")
            )
            spans = lists.apply(doc.text, spans, *patient)
        return merge_spans(without_inside_contact(spans, doc.text))

    def parts(self, document: ClinicalDocument | Doc | str) -> tuple[Doc, list[Span], list[Span]]:
        """The document as analysed, the rules' spans above their thresholds and the learned
        recognizers' spans, before they are united (the review queue compares them)."""
        if isinstance(document, str):
            doc = Doc(document)
        elif isinstance(document, ClinicalDocument):
            doc = Doc.from_document(document)
        else:
            doc = document
        if not doc.text:
            return doc, [], []
        found: list[Span] = []
        learned: list[Span] = []
        for recognizer in self.recognizers:
            # a learned recognizer applies its own probability threshold
            (learned if recognizer.learned else found).extend(recognizer.detect(doc))
            check(recognizer.name)  # the per-document deadline, if the caller set one
        size = len(doc.text)
        threshold = self._thresholds()
        kept = [s for s in found if s.end <= size and s.confidence >= threshold[s.category]]
        learned = [s for s in learned if s.end <= size]
        rules, tagged = propagated(doc, kept, learned, self.recognizers)
        kept += [s for s in rules if s.confidence >= threshold[s.category]]
        return doc, kept, learned + tagged

    def _thresholds(self) -> dict[Category, float]:
        """The policy's threshold of each category, worked out once per policy."""
        policy, thresholds = self._threshold
        if policy is not self.policy:
            thresholds = {category: self.policy.threshold_for(category) for category in Category}
            self._threshold = (self.policy, thresholds)
        return thresholds


def propagated(
    doc: Doc, kept: list[Span], learned: list[Span], recognizers: Sequence[Recognizer] = ()
) -> tuple[list[Span], list[Span]]:
    """The one propagation step (``pipelines.phi.propagate``): the copies of the rules'
    spans, and those of the learned recognizers' judged by the recognizer of their seed
    (``Recognizer.keeps``) and vetoed as their own spans are."""
    if not kept and not learned:
        return [], []
    text = doc.text
    rules, tagged = in_note(text, lexicons.tokens(doc).mixed_case, kept, learned)
    if not tagged:
        return rules, tagged
    judges = {r.name: r for r in recognizers}
    tagged = [s for s in tagged if (j := judges.get(s.source)) is None or j.keeps(text, s)]
    return rules, veto(text, tagged) if tagged else tagged
