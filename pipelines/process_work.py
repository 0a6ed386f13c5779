"""One document's work in :class:`pipelines.process.Processor`, kept across a lost
compare-and-set so it de-identifies and renders only once: the outcome a verdict gives
(de-identify, leak guard, near-duplicate check, research rendering)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING

from keystore.api import PatientState
from pipelines.deadline import deadline
from pipelines.document import ClinicalDocument
from pipelines.errors import DeadlineExceeded
from pipelines.near_duplicates import NearDuplicates
from pipelines.outcome import EMPTY_COUNTS as _EMPTY_COUNTS
from pipelines.outcome import OutcomeKind, held_meta
from pipelines.research import MEDIA_TYPE, ResearchDocument, build_resource, render, system_uri
from pipelines.spans import Category, Span
from pipelines.stopwatch import stopwatch
from pipelines.versions import Decision, Fingerprint, State, Verdict

if TYPE_CHECKING:
    from pipelines.process import Deidentified, Processor

CORRECTION = "correction"  # a publish's reason class: a same-time re-send with another text
CORRECTION_REASON = "same filing time, status and version as the current version, other text"


def type_key(document: ClinicalDocument) -> str:
    """The report type part of the research key (and of the sketch key)."""
    rt = document.report_type
    if rt.code.strip():  # "LN" (HL7 v2) and "http://loinc.org" (FHIR) give one key
        return f"{system_uri(rt.system) or rt.system.strip()}|{rt.code.strip()}"
    return "|" + " ".join(rt.display.split()).casefold()


# An outcome's fields before its decision is settled: kind, research key, value, headers,
# reason class, reason, span counts, and the state its ack token acknowledges (None: none).
Draft = tuple[
    OutcomeKind,
    str | None,
    bytes | None,
    tuple[tuple[str, str], ...],
    str | None,
    str | None,
    Mapping[str, int],
    State | None,
]


def span_counts(spans: Sequence[Span]) -> Mapping[str, int]:
    """Spans per category value, in first-seen order: ``Counter(s.category.value for s in
    spans)`` without a trip through the enum's ``value`` descriptor per span."""
    counts: dict[Category, int] = {}
    for span in spans:
        category = span.category
        counts[category] = counts.get(category, 0) + 1
    return MappingProxyType({category.value: n for category, n in counts.items()})


class _Saver:
    """A work's patient state's saving and its sketch key, apart from the work: the
    near-duplicate bookkeeping calls these back, and bound methods of the work itself made a
    reference cycle per document (work -> near -> bound method -> work), so every
    document's work, parse and de-identification stayed alive until the garbage
    collector's next young collection, which then walked and freed hundreds of them at
    once (bench/README.md, "Session 23: ... (s23-gc)")."""

    __slots__ = ("document", "proc", "state", "unsaved")

    def __init__(self, proc: Processor, document: ClinicalDocument, state: PatientState) -> None:
        self.proc = proc
        self.document = document
        self.state = state
        # the state changed and no save carried it yet (the processor sets it when the
        # visit is new): ``Work.save_pending`` saves it once the document is decided
        self.unsaved = False

    def sketch_key(self) -> str:
        """The (patient, report type)'s sketch hashing key; the kind names the sketch format
        (``near_duplicates.sketch``), so sketches of an older format are never compared."""
        return self.proc._pseudonym("near-duplicate/2", self.state.seed, type_key(self.document))

    def save(self) -> None:
        doc = self.document
        self.proc.store.save(doc.assigning_authority, doc.patient_id, self.state)
        self.unsaved = False


class Work:
    """Per-document work that survives a lost compare-and-set (de-identify only once)."""

    __slots__ = (
        "proc",
        "document",
        "state",
        "fp",
        "spent",
        "_deid",
        "_renders",
        "near",
        "_timeout",
        "_saver",
    )

    def __init__(
        self,
        proc: Processor,
        document: ClinicalDocument,
        state: PatientState,
        fp: Fingerprint,
        spent: float = 0.0,
    ) -> None:
        self.proc = proc
        self.spent = spent  # seconds of the budget its message's parse used
        self.document = document
        self.state = state
        self.fp = fp
        self._deid: Deidentified | None = None
        # the budget was used up: the input is dead-lettered (too_costly), never redone
        self._timeout: DeadlineExceeded | None = None
        self._renders: dict[tuple[str | None, str], ResearchDocument] = {}
        saver = self._saver = _Saver(proc, document, state)
        self.near = NearDuplicates(
            state.extra, document.text, fp.key, fp.order.filing_us, saver.sketch_key, saver.save
        )

    @property
    def unsaved(self) -> bool:
        """The state changed and no save carried it yet (the processor sets it when the
        visit is new): :meth:`save_pending` saves it once the document is decided."""
        return self._saver.unsaved

    @unsaved.setter
    def unsaved(self, value: bool) -> None:
        self._saver.unsaved = value

    def _base_headers(self, kind: str) -> list[tuple[str, str]]:
        return [
            ("source", self.document.source.value),
            ("decision", kind),
        ]

    def outcome(self, verdict: Verdict, times: dict[str, float]) -> tuple[Draft, bool]:
        """The outcome's fields but the ack token's mark and the stage times (``_settled``
        builds the one Outcome), and whether the leak guard held the document."""
        fp = self.fp
        headers = self._base_headers(verdict.decision.value)
        if verdict.decision is Decision.DUPLICATE:
            reason = "same text as a version already seen"
            return (
                OutcomeKind.DUPLICATE,
                None,
                None,
                tuple(headers),
                "duplicate",
                reason,
                _EMPTY_COUNTS,
                None,
            ), False
        if verdict.decision is Decision.SUPERSEDED:
            reason = "a newer version of this report was already seen"
            return (
                OutcomeKind.SUPERSEDED,
                None,
                None,
                tuple(headers),
                "superseded",
                reason,
                _EMPTY_COUNTS,
                None,
            ), False
        if verdict.decision is Decision.TOMBSTONE:
            headers.append(("reason", "entered-in-error"))
            return (
                OutcomeKind.TOMBSTONE,
                fp.key,
                None,
                tuple(headers),
                None,
                None,
                _EMPTY_COUNTS,
                State.TOMBSTONE,
            ), False
        deid = self._run_deidentify(times)  # DeadlineExceeded: the item's error, no mark
        counts = span_counts(deid.spans)
        if deid.held_reason is not None:
            headers = held_meta(self._base_headers("held"), deid.held_reason, self.state.pseudonym)
            held_class = deid.held_class
            return (
                OutcomeKind.HELD,
                fp.key,
                None,
                tuple(headers),
                held_class,
                deid.held_reason,
                counts,
                State.HELD,
            ), True
        with stopwatch(times, "near_duplicate", self.proc._timer):
            near = self._near_duplicate()
        doc = self._render(verdict.replaces, deid, near, times)
        headers += [
            ("version", doc.version_id),
            ("content-type", MEDIA_TYPE),
            ("fhir-version", "4.0.1"),
        ]
        if verdict.replaces:
            headers.append(("replaces", verdict.replaces))
        if near is not None:
            headers.append(("near-duplicate-score", f"{near[1]:.3f}"))
        return (
            OutcomeKind.PUBLISH,
            fp.key,
            doc.value,
            tuple(headers),
            CORRECTION if verdict.correction else None,  # the runner logs it (no PHI)
            CORRECTION_REASON if verdict.correction else None,
            counts,
            State.LIVE,
        ), False

    def _run_deidentify(self, times: dict[str, float]) -> Deidentified:
        if self._timeout is not None:
            raise self._timeout
        if self._deid is None:
            try:
                with deadline(self.proc.deadline_seconds, spent=self.spent):
                    self._deid = self.proc._deidentify(self.document, self.state)
            except DeadlineExceeded as exc:
                self._timeout = exc
                raise
            if self._deid.state_changed:
                self._save_state()
            for stage, seconds in self._deid.stage_seconds.items():
                times[stage] = times.get(stage, 0.0) + seconds
        return self._deid

    def _near_duplicate(self) -> tuple[str, float] | None:
        if not self.proc.near_duplicates:
            return None
        return self.near.nearest(self.proc.near_duplicate_threshold)

    def _save_state(self) -> None:
        self._saver.save()

    def save_pending(self) -> None:
        """Save the state if it changed since the work's last save (the new visit): one
        save per document where a later one carries it (the surrogate maps, the sketch)."""
        if self.unsaved:
            self._save_state()

    def _render(
        self,
        replaces: str | None,
        deid: Deidentified,
        near: tuple[str, float] | None,
        times: dict[str, float],
    ) -> ResearchDocument:
        cache_key = (replaces, "" if near is None else f"{near[0]}:{near[1]:.3f}")
        found = self._renders.get(cache_key)
        if found is not None:
            return found
        with stopwatch(times, "render", self.proc._timer):
            doc = self._render_now(replaces, deid, near)
        self._renders[cache_key] = doc
        return doc

    def _render_now(
        self, replaces: str | None, deid: Deidentified, near: tuple[str, float] | None
    ) -> ResearchDocument:
        document, state = self.document, self.state
        encounter = (
            self.proc._pseudonym("visit", state.seed, document.visit_id)
            if document.visit_id
            else None
        )
        resource = build_resource(
            document,
            text=deid.text,
            version_id=self.fp.version_id,
            patient_pseudonym=state.pseudonym,
            encounter_pseudonym=encounter,
            shift_days=state.shift_days,
            security=self.proc.security_codes(deid.spans),
            replaces=replaces,
            near_duplicate=near,
            annotations=deid.spans if self.proc.annotations else None,
        )
        return render(self.fp.key, resource)
