"""The processing facade the service calls: raw bytes in, decided outcomes out.

``Processor.process(raw, content_hint=..., now=...)`` parses the input (one message may hold
several documents), and for each document: finds the patient's state, computes the research
key, decides the version rule (:mod:`pipelines.versions`), de-identifies (detect → replace →
leak guard), renders the research DocumentReference (:mod:`pipelines.research`) and records
the decision in the key's mark with compare-and-set (so two instances agree; on a lost race
the decision is taken again against the new mark).

``Processor.process_many(items)`` does the same for a batch of ``(raw, content_hint, now)``
items — one result per item, in order: its outcomes, or the exception ``process`` would
have raised for it (returned, not raised) — as if ``process`` had been called on the items
one after the other (later items see earlier items' decisions), with the batch's marks read
in one store call and written in one compare-and-set transaction. ``process`` is
``process_many`` of one item.

Delivery contract (at-least-once in, effectively-once out):

1. ``process()`` / ``process_many()`` write every decided mark **unacknowledged** before
   returning.
2. The caller publishes the ``publish``/``tombstone`` outcomes (and ``held`` ones wherever
   held documents go), waits for the broker's acknowledgement, then calls
   ``processor.commit(outcomes)`` — which flushes the patient store and marks those versions
   acknowledged — and only then commits its input offsets.
3. A crash before ``commit``: the replay meets unacknowledged marks with the same text and
   produces the same outcomes again (same research key, same bytes) instead of dropping them
   as duplicates. A crash after ``commit``: the replay yields ``duplicate`` and publishes
   nothing. The only double publish possible is a crash between the broker's ack and
   ``commit`` (the same key and value again: harmless on a compacted topic).

Outcomes: ``publish`` (key + DocumentReference JSON), ``tombstone`` (key, value None: the
report was entered in error), ``duplicate`` / ``superseded`` (nothing to send), ``held``
(the leak guard kept it back: key and a PHI-free reason, value None — route the *input*
wherever held documents go; its mark is recorded so older versions stay superseded, but it
consumes nothing: a re-send of the same text is decided again — published once the cause is
fixed, held again while it is not), ``context`` (an ADT message: its identifiers are
kept in the patient's sealed state and added to later reports' known identifiers, so the
detector and the leak guard know e.g. next-of-kin names that an ORU does not repeat).

Input errors (:class:`pipelines.errors.InputError`) and retriable errors propagate. A
:class:`~pipelines.errors.PartialInput` (some entries of a batch failed) is re-raised after
its good documents were processed, with their outcomes attached as ``exc.outcomes``.

This module is the facade; its parts live beside it: :mod:`pipelines.outcome` (what is
decided), :mod:`pipelines.version_marks` (a batch's marks, and their acknowledgement),
:mod:`pipelines.patient_context` (ADT identifiers kept in the patient's state),
:mod:`pipelines.near_duplicates` (the visits' sketches), :mod:`pipelines.stopwatch`
(the per-document stage times) and :mod:`pipelines.process_work` (one document's work:
de-identify, render, the outcome a verdict gives).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Protocol

from keystore.api import MarkStore, PatientState, PatientStore, StateMinter
from keystore.api import Pseudonymizer as PseudonymSource
from pipelines import process_defaults as defaults
from pipelines.deadline import exceeded
from pipelines.document import ClinicalDocument
from pipelines.errors import MissingPatientId, PartialInput, TransientError
from pipelines.outcome import AckToken, Outcome, OutcomeKind
from pipelines.patient_context import remember_context, remember_visit, with_context
from pipelines.policy import Action, Policy
from pipelines.process_work import Draft, Work, type_key
from pipelines.spans import Span
from pipelines.stopwatch import stopwatch
from pipelines.version_marks import MarkBatch
from pipelines.version_marks import acknowledge as acknowledge_tokens
from pipelines.versions import (
    Decision,
    Fingerprint,
    Mark,
    Verdict,
    as_confirmed,
    decide,
    fingerprint,
    settle,
)

NEAR_DUPLICATE_THRESHOLD = 0.8
PSEUDONYM_CACHE = 4096  # (kind, parts) → pseudonym, most recently used kept


class Store(PatientStore, MarkStore, PseudonymSource, StateMinter, Protocol):
    """The keystore as the processor uses it: patient states, version marks, pseudonyms and
    new patients' states (``EncryptedStore``, ``InMemoryStore``)."""


class Pseudonymizer(Protocol):
    def __call__(self, kind: str, *parts: str | bytes) -> str: ...


class Deidentified(Protocol):
    """What the processor reads from the de-identification pipeline's result
    (:class:`pipelines.deidentify.DeidResult`)."""

    @property
    def text(self) -> str: ...

    @property
    def spans(self) -> tuple[Span, ...]:  # surrogate / tag spans, offsets in ``text``
        ...

    @property
    def held_reason(self) -> str | None:  # set when the leak guard held the document back
        ...

    @property
    def stage_seconds(self) -> Mapping[str, float]: ...

    @property
    def state_changed(self) -> bool:  # the patient's maps grew: save the state
        ...

    @property
    def held_class(self) -> str:  # why it was held: leak_guard | oversize_note
        ...


DeidentifyFn = Callable[[ClinicalDocument, PatientState], Deidentified]
ParseFn = Callable[..., list[ClinicalDocument]]


def _grouping(document: ClinicalDocument) -> str:
    """The 'visit' part of the research key. Without a visit number, versions are grouped by
    the document they revise (the id they replace, else their own id) instead of merging
    every visit-less report of a patient into one key; with neither, by the patient alone."""
    if document.visit_id:
        return document.visit_id
    anchor = document.version.replaces_id or document.document_id
    return f"\x1fdocument\x1f{anchor}" if anchor else ""


class Processor:
    """Turns one input message into outcomes; see the module docstring for the contract."""

    def __init__(
        self,
        *,
        policy: Policy,
        store: Store,
        pseudonyms: Pseudonymizer | None = None,
        deidentify: DeidentifyFn | None = None,
        parse: ParseFn | None = None,
        state_factory: Callable[[], PatientState] | None = None,
        annotations: bool = False,
        max_bytes: int | None = None,
        near_duplicates: bool = True,
        near_duplicate_threshold: float = NEAR_DUPLICATE_THRESHOLD,
        timer: Callable[[], float] = time.perf_counter,
        deadline_seconds: float | None = None,
    ) -> None:
        self.policy = policy
        # one document's budget: its message's parse and its de-identification together;
        # past it the input is dead-lettered, reason class "too_costly" (never retried)
        self.deadline_seconds = deadline_seconds
        self.store = store
        self._pseudonym_of: Pseudonymizer = pseudonyms or store.pseudonym
        # Pseudonyms are pure functions of (kind, parts): the versions of one report, and
        # every report of a patient's type (near-duplicate key), ask for the same ones.
        self._pseudonyms: OrderedDict[tuple[str | bytes, ...], str] = OrderedDict()
        self._pseudonyms_lock = threading.Lock()
        self._deidentify = deidentify or defaults.deidentify(policy, timer)
        self._parse = parse or defaults.parse(max_bytes)
        self._state_factory = state_factory or defaults.state_factory(policy, store)
        self.annotations = annotations
        self.near_duplicates = near_duplicates  # off: no sketch, no cross-visit flag
        self.near_duplicate_threshold = near_duplicate_threshold
        self._timer = timer

    def _pseudonym(self, kind: str, *parts: str | bytes) -> str:
        key = (kind, *parts)
        cache = self._pseudonyms  # least recently used first
        with self._pseudonyms_lock:
            found = cache.get(key)
            if found is not None:
                cache.move_to_end(key)
                return found
        made = self._pseudonym_of(kind, *parts)
        with self._pseudonyms_lock:
            cache[key] = made
            cache.move_to_end(key)
            if len(cache) > PSEUDONYM_CACHE:
                cache.popitem(last=False)
        return made

    # -- the facade -------------------------------------------------------------------
    def process(
        self, raw: bytes, *, content_hint: str | None = None, now: datetime
    ) -> list[Outcome]:
        result = self.process_many([(raw, content_hint, now)])[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def process_many(
        self, items: Sequence[Item], in_flight: Collection[str] = frozenset()
    ) -> list[list[Outcome] | BaseException]:
        """Several inputs ``(raw, content_hint, now)`` at once, with few store round trips.

        Each result is what ``process(raw, content_hint=..., now=...)`` would have returned
        for that item, called on the items one after the other with each item's outputs
        confirmed (``commit``) before the next — or the exception it would have raised (a
        :class:`PartialInput` with ``.outcomes`` attached, an :class:`InputError`, a
        retriable store error…), returned, not raised: one bad item never affects the
        others. Later items see earlier items' decisions (several versions or repeats of
        one report in a batch are decided as one by one). ``in_flight``: research keys
        whose outputs the caller decided earlier and has not confirmed yet; a repeat of
        them, like a repeat within the batch, is decided as if those were confirmed
        (:func:`pipelines.versions.as_confirmed`), so batch cuts and acknowledgement
        timing never change a verdict.

        The batch's patients are read with one store call (``prefetch``: their states are
        then cache hits). The marks of every document are read with ONE
        store call, decided in order against
        an in-batch overlay, and the changed ones written with ONE ``compare_and_set_marks``
        transaction (from the value read to the value after the last decision). A key whose
        compare-and-set lost (another instance wrote it meanwhile) has its documents decided
        again, in order, the one-by-one way (read, decide, compare-and-set, retry) — their
        de-identification is kept, not redone. The delivery contract is unchanged: every
        decided mark is written unacknowledged before this returns; ``commit`` after the ack.
        """
        jobs = [self._parse_item(raw, content_hint) for raw, content_hint, _now in items]
        self._prefetch(jobs)
        for job in jobs:
            self._prepare_item(job)
        docs = [d for job in jobs for d in job.docs if isinstance(d, _Doc) and d.key is not None]
        batch = MarkBatch(self.store, docs, self._timer, in_flight)
        for job in jobs:
            self._decide_job(job, batch)
        lost = batch.write()
        if lost:
            self._redo([d for d in batch.docs if d.key in lost], in_flight)
        return [job.result() for job in jobs]

    def _redo(self, docs: Sequence[_Doc], in_flight: Collection[str]) -> None:
        """Documents whose key lost the batch's compare-and-set: decided again, in order, the
        one-by-one way (their de-identification is kept, not redone)."""
        again = [(d, d.work) for d in docs if d.work is not None]
        for _, work in reversed(again):  # newest first: each entry back to its first value
            work.near.undo()
        flying = set(in_flight)  # and the keys decided again here with an output
        for doc, work in again:
            try:
                doc.outcome = self._decide(work, doc.times, flying)
            except Exception as exc:  # noqa: BLE001 - as process() raising at this document
                doc.outcome, doc.error = None, exc
            else:
                if doc.outcome.ack is not None:
                    flying.add(work.fp.key)
            finally:
                work.save_pending()

    def _parse_item(self, raw: bytes, content_hint: str | None) -> _Job:
        times: dict[str, float] = {}
        incomplete: PartialInput | None = None
        started = time.monotonic()
        with stopwatch(times, "parse", self._timer):
            try:
                documents = self._parse(raw, content_hint=content_hint)
            except PartialInput as exc:
                incomplete = exc
                documents = [d for d in exc.documents if isinstance(d, ClinicalDocument)]
            except Exception as exc:  # noqa: BLE001 - the item's result, as process() raises it
                return _Job(error=exc)
        spent = time.monotonic() - started
        too_costly = exceeded("parse", spent, self.deadline_seconds)
        if too_costly is not None:  # the parse alone used up the budget
            return _Job(error=too_costly)
        return _Job(
            incomplete=incomplete, parsed=documents, parse_seconds=times["parse"], spent=spent
        )

    def _prefetch(self, jobs: Sequence[_Job]) -> None:
        """The batch's patients read with one store call (a cache warm-up: each document
        still asks ``get_or_create`` in its turn); a failure is left to them."""
        patients = [
            (d.assigning_authority, d.patient_id)
            for job in jobs
            for d in job.parsed
            if d.patient_id
        ]
        if len(patients) < 2:
            return
        with contextlib.suppress(Exception):  # get_or_create meets a fault in its turn
            self.store.prefetch(patients)

    def _prepare_item(self, job: _Job) -> None:
        for i, document in enumerate(job.parsed):
            # the message's parse time goes with its first document
            times = {"parse": job.parse_seconds} if i == 0 else {}
            try:
                prepared = self._prepare(document, times)
                prepared.spent = job.spent
                job.docs.append(prepared)
            except Exception as exc:  # noqa: BLE001 - raised when this document's turn comes
                job.docs.append(exc)
                break  # one by one, nothing after it would have been looked at

    def _decide_job(self, job: _Job, batch: MarkBatch[_Doc]) -> None:
        """The item's documents in order; the first failure ends the item (as in process())."""
        for doc in job.docs:
            if isinstance(doc, BaseException):
                job.error = doc
                return
            try:
                if doc.key is None:
                    doc.outcome = self._context(doc)
                elif batch.usable:
                    doc.outcome = self._decide_in_batch(doc, batch)
                else:  # the batch read failed: this document the one-by-one way
                    work = self._work(doc)
                    doc.outcome = self._decide(work, doc.times, batch.flying.union(batch.in_flight))
                    if doc.outcome.ack is not None:
                        batch.flying.add(work.fp.key)
            except Exception as exc:  # noqa: BLE001 - the item's result
                job.error = exc
                return
            finally:
                if doc.work is not None:  # decided or failed: its state changes saved
                    doc.work.save_pending()
            job.outs.append(doc)

    def commit(self, outcomes: Iterable[Outcome]) -> None:
        """Call after the outcomes' outputs were acknowledged, before committing offsets:
        every state change (ADT context, visits, surrogate maps) is made durable even when
        no output was sent, then the versions are marked acknowledged."""
        self.store.flush()
        tokens = [o.ack for o in outcomes if o.ack is not None]
        if tokens:
            acknowledge_tokens(self.store, tokens)

    # -- one document -----------------------------------------------------------------
    def process_document(self, document: ClinicalDocument, *, now: datetime) -> Outcome:
        del now  # documents carry their own dates; kept in the signature for the service
        return self._process_document(document, {})

    def _process_document(self, document: ClinicalDocument, times: dict[str, float]) -> Outcome:
        doc = self._prepare(document, times)
        if doc.key is None:
            return self._context(doc)
        work = self._work(doc)
        try:
            return self._decide(work, doc.times, frozenset())
        finally:
            work.save_pending()

    def _prepare(self, document: ClinicalDocument, times: dict[str, float]) -> _Doc:
        """The patient's state, the research key and the version fingerprint: everything a
        decision needs besides the mark (context-only documents: key None)."""
        if not document.patient_id:
            raise MissingPatientId("document has no patient id", message=document.message_id)
        state = self.store.get_or_create(
            document.assigning_authority, document.patient_id, self._state_factory
        )
        if document.context_only:
            return _Doc(document, state, times)
        with stopwatch(times, "dedup", self._timer):
            key = self._pseudonym(
                "research-key", state.seed, _grouping(document), type_key(document)
            )
            fp = fingerprint(document, key)
        return _Doc(document, state, times, key, fp)

    def _context(self, doc: _Doc) -> Outcome:
        document, state = doc.document, doc.state
        # the visit (`keys reveal Encounter/...` finds it) and the context: one save
        visit = remember_visit(state, document.visit_id)
        if remember_context(state, document.identifiers) or visit:
            self.store.save(document.assigning_authority, document.patient_id, state)
        return Outcome(
            kind=OutcomeKind.CONTEXT,
            headers=(("source", document.source.value),),
            stage_seconds=MappingProxyType(doc.times),
        )

    def _work(self, doc: _Doc) -> Work:
        if doc.work is None:
            if doc.fp is None:
                raise TypeError("a context-only document has no version decision")
            document = with_context(doc.document, doc.state)
            doc.work = Work(self, document, doc.state, doc.fp, doc.spent)
            # the visit (`keys reveal Encounter/...` finds it), saved once the document is
            # decided (Work.save_pending) unless a save of the work already carried it
            doc.work.unsaved = remember_visit(doc.state, doc.document.visit_id)
        return doc.work

    def _decide_in_batch(self, doc: _Doc, batch: MarkBatch[_Doc]) -> Outcome:
        """Decide against the batch's view of the mark (what the store held, after the
        batch's earlier decisions); the write happens once, in ``MarkBatch.write``."""
        work, times = self._work(doc), doc.times
        key = work.fp.key
        with stopwatch(times, "dedup", self._timer):
            raw = batch.current(key)
            mark = Mark.decode(raw)
            verdict = decide(batch.view(key, mark), work.fp)
        draft, held = work.outcome(verdict, times)
        with stopwatch(times, "dedup", self._timer):
            new = settle(mark, work.fp, verdict, held=held)
            written = raw if new == mark else new.encode()
            batch.decided(doc, key, written, output=draft[7] is not None)
        return self._settled(work, verdict, held, draft, written, new, times)

    def _decide(self, work: Work, times: dict[str, float], in_flight: Collection[str]) -> Outcome:
        """Read the mark, decide, compare-and-set; on a lost race decide again."""
        key = work.fp.key
        for _ in range(32):
            with stopwatch(times, "dedup", self._timer):
                raw = self.store.get_mark(key)
                mark = Mark.decode(raw)
                verdict = decide(as_confirmed(mark) if key in in_flight else mark, work.fp)
            draft, held = work.outcome(verdict, times)
            with stopwatch(times, "dedup", self._timer):
                new = settle(mark, work.fp, verdict, held=held)
                written = raw if new == mark else new.encode()
                won = new == mark or (
                    written is not None and self.store.compare_and_set_mark(key, raw, written)
                )
            if won:
                return self._settled(work, verdict, held, draft, written, new, times)
        raise TransientError("version mark contention: compare-and-set kept losing", key=key)

    def _settled(
        self,
        work: Work,
        verdict: Verdict,
        held: bool,
        draft: Draft,
        written: bytes | None,
        new: Mark,
        times: dict[str, float],
    ) -> Outcome:
        """The decided outcome (its ack token carrying the mark as written); the visit's
        near-duplicate sketch follows the decision."""
        kind, key, value, headers, reason_class, reason, counts, ack_state = draft
        ack = None
        if ack_state is not None:
            fp = work.fp
            ack = AckToken(fp.key, fp.text_hash, ack_state, written, new, fp.version_id)
        if verdict.decision is Decision.PUBLISH:
            with stopwatch(times, "near_duplicate", self._timer):
                if not held:
                    work.near.remember()
        elif verdict.decision is Decision.TOMBSTONE:
            with stopwatch(times, "near_duplicate", self._timer):
                work.near.forget()
        # the document's one Outcome, all fields given (dataclasses.replace costs more)
        return Outcome(
            kind=kind,
            research_key=key,
            value=value,
            headers=headers,
            reason_class=reason_class,
            reason=reason,
            span_counts=counts,
            stage_seconds=MappingProxyType(times),
            ack=ack,
        )

    # -- helpers used by Work ----------------------------------------------------------
    def security_codes(self, spans: Sequence[Span]) -> list[str]:
        """PSEUDED always (the subject is a pseudonym); REDACTED if any text was tagged."""
        codes = ["PSEUDED"]
        if any(self.policy.action_for(s.category) is Action.REDACT for s in spans):
            codes.append("REDACTED")
        return codes


# -- batches ------------------------------------------------------------------------------

Item = tuple[bytes, str | None, datetime]  # (raw, content_hint, now)


@dataclass(slots=True)
class _Doc:
    """One parsed document of a batch item, prepared for its decision."""

    document: ClinicalDocument
    state: PatientState
    times: dict[str, float]
    key: str | None = None  # research key; None: a context-only (ADT) document
    fp: Fingerprint | None = None
    work: Work | None = None
    outcome: Outcome | None = None
    error: BaseException | None = None  # deciding it again (a lost race) failed
    spent: float = 0.0  # seconds of its budget its message's parse used


@dataclass(slots=True)
class _Job:
    """One batch item: its documents in order, and how it ended."""

    docs: list[_Doc | BaseException] = field(default_factory=list)
    outs: list[_Doc] = field(default_factory=list)  # decided, in order
    incomplete: PartialInput | None = None
    error: BaseException | None = None
    parsed: list[ClinicalDocument] = field(default_factory=list)
    parse_seconds: float = 0.0
    spent: float = 0.0  # the parse's wall time (monotonic): part of each document's budget

    def result(self) -> list[Outcome] | BaseException:
        for doc in self.outs:  # one by one, process() would have raised at that document,
            if doc.error is not None:  # before any later document's failure
                return doc.error
        if self.error is not None:
            return self.error
        outcomes = [d.outcome for d in self.outs if d.outcome is not None]
        if self.incomplete is not None:
            self.incomplete.outcomes = outcomes
            return self.incomplete
        return outcomes


__all__ = ["Deidentified", "Item", "Processor"]
