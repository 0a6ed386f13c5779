"""The review queue: people decide what the machine is unsure of (docs/review.md).

What enters: every held-back document (its reason, its coordinates on the input topic) with
its candidate spans, and — from any document — tagger spans whose confidence lies in the
policy's ``[review] band`` or where the rules and the tagger disagree (:func:`candidates`).
Items live in the key store's database (:mod:`keystore.reviewdb`), their text sealed with the
patient records' envelope encryption; ids, statuses and decisions carry no text.

A decision (:class:`Decision`) is PHI (with a category), not PHI, unsure, or a referral to an
expert. It applies to the item and, by scope, to the same string elsewhere in the note, in
the patient's queued notes, or in the whole site's; a patient or site decision of PHI / not
PHI also becomes a deny / allow list entry (sealed) that the detector uses from then on
(:meth:`ReviewQueue.lists` → :class:`pipelines.phi.lists.ReviewLists`). Every decision and
undo is audited in the key store's chained audit log: who, which item id, what — no text.

When every item of a held document is decided, :meth:`ReviewQueue.settle` releases it (the
caller re-sends its input through the held-release path: the service decides it again, now
with the lists, and the version marks make the research topic get it once) or keeps it held
with a reason (a reviewer said PHI remains, or was unsure).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from keystore.envelope import Sealed
from keystore.forgetting import REVIEW_LIST, REVIEW_PATIENT
from keystore.reviewdb import ITEM_BINDING as _ITEM_BINDING
from keystore.reviewdb import LIST_BINDING as _LIST_BINDING
from keystore.reviewdb import DecisionRow, DocRow, ItemRow, ListRow, ReviewDb
from keystore.store import EncryptedStore
from pipelines.document import ClinicalDocument
from pipelines.phi.detector import Detector
from pipelines.phi.lists import ListScope, NoteMarks, ReviewLists, normalise
from pipelines.review_candidates import (
    Candidate,
    ItemKind,
    QueueingDetector,
    candidates,
    candidates_from,
)
from pipelines.review_held import dump_marks, load_marks, note_marks, surviving
from pipelines.review_learning import Stats
from pipelines.review_model import (
    Decision,
    DecisionKind,
    DocStatus,
    ItemStatus,
    QueueItem,
    ReviewError,
    Role,
    Scope,
    StaleItem,
    span_json,
    span_of,
)
from pipelines.spans import Category, Span

MARK_LIST = "mark"  # review_lists.list of a note's marked places (one entry per note)
MAX_MARK_CHARS = 200


class ReviewQueue:
    """The queue over one key store (thread-safe as the store is)."""

    def __init__(
        self,
        store: EncryptedStore,
        *,
        reviews_per_item: int = 1,
        clock: Callable[[], float] = time.time,
        lists_ttl_s: float = 2.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.store = store
        self.db = ReviewDb(store.backend)
        self.reviews_per_item = reviews_per_item
        self._clock = clock
        self._lists_ttl = lists_ttl_s
        self._sleep = sleep
        self._lists: tuple[float, ReviewLists] | None = None
        self._lock = threading.Lock()

    # -- refs ---------------------------------------------------------------------------
    def patient_ref(self, authority: str, patient_id: str) -> str:
        return self.store.pseudonym(REVIEW_PATIENT, authority, patient_id)

    def text_ref(self, text: str) -> str:
        return self.store.pseudonym("review-text", normalise(text))

    # -- what enters --------------------------------------------------------------------
    def has_document(self, coordinates: str) -> bool:
        """A held input at ``coordinates`` is queued already (any document of it)."""
        for where in (coordinates, f"{coordinates}#0"):
            if self.db.doc(self.store.pseudonym("review-doc", where)) is not None:
                return True
        return False

    def note_ref(self, text: str) -> str:
        return self.store.pseudonym("review-note", text)

    def enqueue(
        self,
        document: ClinicalDocument,
        detector: Detector,
        *,
        coordinates: str = "",
        held_reason: tuple[str, str] | None = None,
    ) -> list[str]:
        """Queue ``document``'s candidates (and, if held — ``(reason_class, reason)`` —
        the places where its identifiers survive and the document itself, keyed by its
        input ``coordinates``); the new item ids. A place reviewers already decided in this
        note, and a string already decided for the patient or the site, is not queued again."""
        policy = detector.policy
        found, spans = candidates(
            detector, document, policy.review_band, policy.review_disagreement
        )
        if held_reason is None:
            return self.add_candidates(document, found, spans)
        found = self.undecided(document, found)
        doc_id = self.store.pseudonym("review-doc", coordinates or document.text)
        now = self._clock()
        left = tuple(surviving(document, policy, spans))
        marks = self.marks_of(self.note_ref(document.text))
        decided = {(s, e) for s, e, _ in marks.deny} | set(marks.allow)
        found += [
            Candidate(span, ItemKind.HELD_SPAN)
            for span in left
            if not any(span.overlaps(c.span) for c in found)
        ]
        found = [c for c in found if (c.span.start, c.span.end) not in decided]
        self.db.add_doc(
            DocRow(doc_id, coordinates, held_reason[0], held_reason[1], DocStatus.OPEN, now, None)
        )
        rows = [self._item_row(document, doc_id, c, spans, now, left) for c in found]
        rows.append(self._item_row(document, doc_id, None, spans, now, left))
        self.db.add_items(rows)
        return [r.id for r in rows]

    def undecided(self, document: ClinicalDocument, found: Sequence[Candidate]) -> list[Candidate]:
        """``found`` less the strings a patient or site decision already settled for this
        patient (their list entry exists)."""
        if not found:
            return []
        patient = self.patient_ref(document.assigning_authority, document.patient_id)
        refs = {c: self.text_ref(c.span.text_of(document.text)) for c in found}
        entries = {
            c: (
                self._entry_id(Scope.SITE, "", ref),
                self._entry_id(Scope.PATIENT, patient, ref),
            )
            for c, ref in refs.items()
        }
        have = self.db.existing_entries([e for pair in entries.values() for e in pair])
        return [c for c in found if not have.intersection(entries[c])]

    def add_candidates(
        self, document: ClinicalDocument, found: Sequence[Candidate], spans: Sequence[Span]
    ) -> list[str]:
        """Queue a (not held) document's candidate spans, less those already decided for the
        patient or the site; the item ids."""
        found = self.undecided(document, found)
        if not found:
            return []
        doc_id = self.store.pseudonym("review-doc", "text", document.text)
        now = self._clock()
        rows = [self._item_row(document, doc_id, c, spans, now) for c in found]
        self.db.add_items(rows)
        return [r.id for r in rows]

    def _item_row(
        self,
        document: ClinicalDocument,
        doc_id: str,
        cand: Candidate | None,
        spans: Sequence[Span],
        now: float,
        left: Sequence[Span] = (),
    ) -> ItemRow:
        span = cand.span if cand else None
        item_id = self.store.pseudonym(
            "review-item", doc_id, f"{span.start}:{span.end}" if span else "document"
        )
        payload = orjson.dumps(
            {
                "text": document.text,
                "span": span_json(span) if span else None,
                "others": [span_json(s) for s in spans if s != span],
                "who": [document.assigning_authority, document.patient_id],
                "left": [span_json(s) for s in left],
            }
        )
        sealed = self.store.seal_blob(_ITEM_BINDING + item_id.encode(), payload)
        text_ref = self.text_ref(span.text_of(document.text)) if span else ""
        kind = cand.kind if cand else ItemKind.HELD_DOCUMENT
        return ItemRow(
            0,
            item_id,
            doc_id,
            self.patient_ref(document.assigning_authority, document.patient_id),
            text_ref,
            kind,
            ItemStatus.OPEN,
            now,
            sealed,
        )

    # -- reading ------------------------------------------------------------------------
    def open_item(self, row: ItemRow) -> QueueItem:
        raw = orjson.loads(self.store.open_blob(_ITEM_BINDING + row.id.encode(), row.sealed))
        who = raw.get("who") or ["", ""]
        return QueueItem(
            row.id,
            row.seq,
            row.doc_id,
            ItemKind(row.kind),
            ItemStatus(row.status),
            raw["text"],
            span_of(raw["span"]) if raw["span"] else None,
            tuple(span_of(s) for s in raw["others"]),
            str(who[0]),
            str(who[1]),
            tuple(span_of(s) for s in raw.get("left") or ()),
        )

    def item(self, item_id: str) -> QueueItem | None:
        row = self.db.item(item_id)
        return self.open_item(row) if row else None

    def page(
        self, role: Role, after_seq: int = 0, limit: int = 1, before: bool = False
    ) -> list[QueueItem]:
        """The next (previous) items a person in ``role`` decides: reviewers the open ones,
        experts the referred ones first, then the open ones."""
        rows = []
        if role is Role.EXPERT:
            rows = self.db.page([ItemStatus.REFERRED], after_seq, limit, before)
        if len(rows) < limit:
            rows += self.db.page([ItemStatus.OPEN], after_seq, limit - len(rows), before)
        return [self.open_item(r) for r in rows]

    def place(self, role: Role, item: QueueItem) -> tuple[int, int]:
        """(n, m): ``item`` is the n-th of the m items ``role`` has to decide, in the order
        the page walks them (referred first for experts, then open, by queue number)."""
        if role is Role.EXPERT:
            referred = self.db.count([ItemStatus.REFERRED])
            total = referred + self.db.count([ItemStatus.OPEN])
            if item.status is ItemStatus.REFERRED:
                return self.db.count([ItemStatus.REFERRED], item.seq) + 1, total
            return referred + self.db.count([ItemStatus.OPEN], item.seq) + 1, total
        return self.db.count([ItemStatus.OPEN], item.seq) + 1, self.db.count([ItemStatus.OPEN])

    def progress(self) -> dict[str, int]:
        counts = self.db.counts()
        return {s.value: counts.get(s.value, 0) for s in ItemStatus}

    # -- deciding -----------------------------------------------------------------------
    def decide(self, decision: Decision) -> list[str]:
        """Record ``decision`` (and its scope's); the item ids it decided."""
        row = self.db.item(decision.item_id)
        if row is None:
            raise ReviewError("no such item in the review queue")
        if decision.role is not Role.EXPERT:
            self._reviewer_may(row, decision)
        now = self._clock()
        if decision.kind is DecisionKind.REFER:
            self.db.add_decision(_decision_row(decision, row.id, now))
            self.db.set_status([row.id], ItemStatus.REFERRED)
            self.store.audit("review-refer", decision.reviewer, row.id, "referred")
            return [row.id]
        targets = self._decided_targets(row, decision)
        for target in targets:
            self.db.add_decision(_decision_row(decision, target.id, now))
        done = [t.id for t in targets if self._reviewed_enough(t.id)]
        self.db.set_status(done, ItemStatus.DECIDED)
        if _makes_list_entry(row, decision):
            self._list_entry(row, decision, now)
        self.store.audit(
            "review-decide",
            decision.reviewer,
            row.id,
            f"{decision.kind.value}/{decision.scope.value}/{len(targets)}",
            reason=decision.category.value if decision.category else "",
        )
        return [t.id for t in targets]

    def _decided_targets(self, row: ItemRow, decision: Decision) -> list[ItemRow]:
        """The item and its scope's others (a referred one only by an expert)."""
        return [
            t
            for t in self._targets(row, decision.scope)
            if t.id == row.id or t.status != ItemStatus.REFERRED or decision.role is Role.EXPERT
        ]

    def _reviewer_may(self, row: ItemRow, decision: Decision) -> None:
        """Refuse what only an expert may do: decide a referred item or one an expert
        decided, allow a string for the whole site, or change a patient / site entry an
        expert made. An item decided meanwhile is refused as stale."""
        if row.status == ItemStatus.REFERRED:
            raise ReviewError("this item was referred to an expert")
        if any(d.role == Role.EXPERT for d in self.db.decisions(item_id=row.id)):
            raise ReviewError("an expert decided this item; an expert's decision is final")
        if row.status == ItemStatus.DECIDED:
            raise StaleItem("this item was decided meanwhile")
        if decision.scope is Scope.SITE and decision.kind is DecisionKind.NOT_PHI:
            raise ReviewError("a not-PHI decision for the whole site needs the expert role")
        if decision.scope is not Scope.NOTE and row.text_ref:
            live = self.db.live_list_decision(
                row.text_ref,
                decision.scope.value,
                row.patient_ref if decision.scope is Scope.PATIENT else None,
            )
            if live is not None and live.role == Role.EXPERT:
                raise ReviewError(
                    f"an expert decided this string for the {decision.scope.value};"
                    " an expert's decision is final"
                )

    def mark(self, item_id: str, start: int, end: int, decision: Decision) -> tuple[str, list[str]]:
        """A string the machine did not propose, marked by a person in the note of
        ``item_id`` (characters ``start``–``end``): queued as a ``marked`` item of the same
        document and decided at once with ``decision`` (PHI or not, of its scope). Returns the
        new item's id and the items the decision decided."""
        row = self.db.item(item_id)
        if row is None:
            raise ReviewError("no such item in the review queue")
        if decision.kind not in (DecisionKind.PHI, DecisionKind.NOT_PHI):
            raise ReviewError("a marked string is decided PHI or not PHI")
        item = self.open_item(row)
        if not 0 <= start < end <= len(item.text) or end - start > MAX_MARK_CHARS:
            raise ReviewError(f"a marked string is 1-{MAX_MARK_CHARS} characters of the note")
        if not item.text[start:end].strip():
            raise ReviewError("a marked string is not only white space")
        category = decision.category or (item.candidate.category if item.candidate else None)
        span = Span(start, end, category or Category.NAME_OTHER, 1.0, "reviewer")
        document = ClinicalDocument(
            text=item.text, patient_id=item.patient_id, assigning_authority=item.authority
        )
        new = self._item_row(
            document, row.doc_id, Candidate(span, ItemKind.MARKED), item.others, self._clock()
        )
        if decision.role is not Role.EXPERT:
            self._reviewer_may(new, decision)
        self.db.add_items([new])
        self.store.audit("review-mark", decision.reviewer, new.id, "marked", reason=row.id)
        return new.id, self.decide(Decision(new.id, *_rest(decision)))

    def _reviewed_enough(self, item_id: str) -> bool:
        decided = {
            d.reviewer for d in self.db.decisions(item_id=item_id) if d.kind != DecisionKind.REFER
        }
        return len(decided) >= self.reviews_per_item

    def _targets(self, row: ItemRow, scope: Scope) -> list[ItemRow]:
        if scope is Scope.NOTE or not row.text_ref:
            same = (
                [
                    r
                    for r in self.db.items_of_doc(row.doc_id)
                    if r.text_ref == row.text_ref and r.text_ref and r.status != ItemStatus.DECIDED
                ]
                if scope is Scope.NOTE
                else []
            )
            return [row, *[r for r in same if r.id != row.id]]
        same = [r for r in self.db.open_items_with_text(row.text_ref) if r.id != row.id]
        if scope is Scope.PATIENT:
            same = [r for r in same if r.patient_ref == row.patient_ref]
        return [row, *same]

    def _list_entry(self, row: ItemRow, decision: Decision, now: float) -> None:
        item = self.open_item(row)
        patient_ref = row.patient_ref if decision.scope is Scope.PATIENT else ""
        entry = self._entry_id(decision.scope, patient_ref, row.text_ref)
        sealed = self.store.seal_blob(
            _LIST_BINDING + entry.encode(), normalise(item.string).encode("utf-8")
        )
        kind = "deny" if decision.kind is DecisionKind.PHI else "allow"
        category = decision.category.value if decision.category else ""
        self.db.put_list_entry(
            ListRow(entry, kind, decision.scope, patient_ref, category, sealed), now
        )
        self._lists = None

    def _entry_id(self, scope: Scope, patient_ref: str, text_ref: str) -> str:
        return self.store.pseudonym(REVIEW_LIST, scope.value, patient_ref, text_ref)

    def undo(self, reviewer: str) -> list[str]:
        """Take back ``reviewer``'s last decision (all the items one key press decided)."""
        at = self.db.last_decision_at(reviewer)
        if at is None:
            return []
        items = self.db.undo(reviewer, at)
        entries: set[tuple[Scope, str, str]] = set()
        for item_id in items:
            row = self.db.item(item_id)
            if row is None:
                continue
            left = self.db.decisions(item_id=item_id)
            referred = any(d.kind == DecisionKind.REFER for d in left)
            status = (
                ItemStatus.REFERRED
                if referred and not self._reviewed_enough(item_id)
                else ItemStatus.DECIDED
                if self._reviewed_enough(item_id)
                else ItemStatus.OPEN
            )
            self.db.set_status([item_id], status)
            if row.text_ref:
                entries |= {
                    (Scope.SITE, "", row.text_ref),
                    (Scope.PATIENT, row.patient_ref, row.text_ref),
                }
        for scope, ref, text_ref in sorted(entries):
            self._restore_entry(scope, ref, text_ref)
        self._lists = None
        self.store.audit("review-undo", reviewer, items[0] if items else "", f"undone/{len(items)}")
        return items

    def _restore_entry(self, scope: Scope, patient_ref: str, text_ref: str) -> None:
        """After an undo: the list entry of (scope, patient, string) as the latest decision
        still live made it (another reviewer's, or an earlier one), or none."""
        live = self.db.live_list_decision(
            text_ref, scope.value, patient_ref if scope is Scope.PATIENT else None
        )
        row = self.db.item(live.item_id) if live is not None else None
        if live is None or row is None:
            self.db.delete_list_entry(self._entry_id(scope, patient_ref, text_ref))
            return
        self._list_entry(
            row,
            Decision(
                row.id,
                live.reviewer,
                Role(live.role),
                DecisionKind(live.kind),
                Category(live.category) if live.category else None,
                scope,
            ),
            live.at,
        )

    # -- what the detector uses ---------------------------------------------------------
    def lists(self) -> ReviewLists:
        """The allow / deny lists, unsealed (cached for ``lists_ttl_s``)."""
        with self._lock:
            now = time.monotonic()
            if self._lists is not None and now - self._lists[0] < self._lists_ttl:
                return self._lists[1]
            lists = self._load_lists()
            self._lists = (now, lists)
            return lists

    def _load_lists(self) -> ReviewLists:
        deny: dict[str, dict[str, Category]] = defaultdict(dict)
        allow: dict[str, set[str]] = defaultdict(set)
        notes: dict[str, NoteMarks] = {}
        for row in self.db.list_entries():
            value = self.store.open_blob(_LIST_BINDING + row.entry.encode(), row.sealed)
            if row.list == MARK_LIST:
                ref, marks = load_marks(value)
                notes[ref] = marks
                continue
            text = value.decode("utf-8")
            if row.list == "deny":
                deny[row.patient_ref][text] = Category(row.category)
            else:
                allow[row.patient_ref].add(text)
        refs = set(deny) | set(allow)
        scopes = {
            ref: ListScope(deny.get(ref, {}), frozenset(allow.get(ref, set()))) for ref in refs
        }
        site = scopes.pop("", ListScope())
        return ReviewLists(site, scopes, self.patient_ref, notes, self.note_ref)

    # -- held documents -----------------------------------------------------------------
    def settle(
        self, release: Callable[[DocRow], None], doc_ids: Sequence[str] | None = None
    ) -> list[tuple[str, DocStatus]]:
        """Every open held document whose items are all decided (of ``doc_ids`` when given):
        released through ``release`` (once: a compare-and-set on its status claims it) or
        kept held with a reason. Returns (coordinates, new status) — no text."""
        done: list[tuple[str, DocStatus]] = []
        for doc in self.db.decided_docs(doc_ids):
            items = self.db.items_of_doc(doc.doc_id)
            verdict = self._verdict(items)
            now = self._clock()
            if verdict:
                if self.db.set_doc_status(
                    doc.doc_id, DocStatus.OPEN, DocStatus.HELD, now, reason=verdict
                ):
                    done.append((doc.coordinates, DocStatus.HELD))
                    self.store.audit("review-settle", "review", doc.doc_id, "held", verdict)
                continue
            if not self.db.set_doc_status(doc.doc_id, DocStatus.OPEN, DocStatus.RELEASING, now):
                continue  # another instance claimed it
            try:
                if self._write_marks(items):
                    # the service's detectors re-read the lists every lists_ttl_s: the
                    # note's marks must be there when it comes back
                    self._sleep(self._lists_ttl + 0.5)
                release(doc)
            except BaseException:
                self.db.set_doc_status(doc.doc_id, DocStatus.RELEASING, DocStatus.OPEN, now)
                raise
            self.db.set_doc_status(doc.doc_id, DocStatus.RELEASING, DocStatus.RELEASED, now)
            self.store.audit("review-settle", "review", doc.doc_id, "released")
            done.append((doc.coordinates, DocStatus.RELEASED))
        return done

    def _write_marks(self, items: Sequence[ItemRow]) -> bool:
        """Record the places decided PHI / not PHI in this note (added to the note's earlier
        marks) for the detector; False when there are none."""
        final = self._final([r.id for r in items])
        decided: list[tuple[Span, bool]] = []
        note: QueueItem | None = None
        for row in items:
            d = final.get(row.id)
            if not row.text_ref or d is None or d.kind not in ("phi", "not_phi"):
                continue
            item = self.open_item(row)
            note = note or item
            if item.candidate is not None:
                phi = d.kind == DecisionKind.PHI
                category = Category(d.category) if phi and d.category else item.candidate.category
                c = item.candidate
                decided.append((Span(c.start, c.end, category, 1.0, c.source), phi))
        if note is None or not decided:
            return False
        ref = self.note_ref(note.text)
        marks = note_marks(decided, self.marks_of(ref))
        entry = self._entry_id(Scope.NOTE, "note", ref)
        sealed = self.store.seal_blob(_LIST_BINDING + entry.encode(), dump_marks(ref, marks))
        patient = items[0].patient_ref
        self.db.put_list_entry(ListRow(entry, MARK_LIST, Scope.NOTE, patient, "", sealed), 0.0)
        self._lists = None
        return True

    def marks_of(self, note_ref: str) -> NoteMarks:
        """The places reviewers decided in the note ``note_ref`` (none: empty marks)."""
        entry = self._entry_id(Scope.NOTE, "note", note_ref)
        row = self.db.list_entry(entry)
        if row is None:
            return NoteMarks()
        return load_marks(self.store.open_blob(_LIST_BINDING + entry.encode(), row.sealed))[1]

    def _verdict(self, items: Sequence[ItemRow]) -> str:
        """'' to release; else why the document stays held (no text)."""
        final = self._final_kinds([r.id for r in items])
        unsure = sum(1 for k in final.values() if k == DecisionKind.UNSURE)
        whole = [r.id for r in items if r.kind == ItemKind.HELD_DOCUMENT]
        if any(final.get(i) == DecisionKind.PHI for i in whole):
            return "review: a reviewer found PHI left in the note"
        if unsure:
            return f"review: {unsure} item(s) decided unsure"
        return ""

    def _final_kinds(self, item_ids: Sequence[str]) -> dict[str, DecisionKind]:
        """Each item's latest rating (an expert's outranks a reviewer's)."""
        return {k: DecisionKind(d.kind) for k, d in self._final(item_ids).items()}

    def _final(self, item_ids: Sequence[str]) -> dict[str, DecisionRow]:
        """Each item's latest rating (an expert's outranks a reviewer's)."""
        wanted = set(item_ids)
        best: dict[str, tuple[int, int, DecisionRow]] = {}
        for d in self.db.decisions():
            if d.item_id not in wanted or d.kind == DecisionKind.REFER:
                continue
            rank = (1 if d.role == Role.EXPERT else 0, d.id)
            if d.item_id not in best or rank > best[d.item_id][:2]:
                best[d.item_id] = (*rank, d)
        return {k: v[2] for k, v in best.items()}

    # -- learning and agreement (pipelines/review_learning.py) ---------------------------
    def decided_notes(self) -> list[tuple[str, list[tuple[int, int, Category]]]]:
        """Each decided note's text and its PHI phrases for training (in memory only)."""
        from pipelines.review_learning import decided_notes

        return decided_notes(self)

    def training_examples(self) -> list[Any]:
        from pipelines.review_learning import training_examples

        return training_examples(self)

    def stats(self) -> Stats:
        """Per-reviewer counts, Cohen's kappa per pair, Fleiss' kappa across all."""
        from pipelines.review_learning import stats

        return stats(self)


def _makes_list_entry(row: ItemRow, decision: Decision) -> bool:
    """A patient or site decision of PHI / not PHI on a string: a deny / allow entry."""
    return bool(
        decision.scope is not Scope.NOTE
        and row.text_ref
        and decision.kind in (DecisionKind.PHI, DecisionKind.NOT_PHI)
    )


def _rest(decision: Decision) -> tuple[str, Role, DecisionKind, Category | None, Scope]:
    return (decision.reviewer, decision.role, decision.kind, decision.category, decision.scope)


def _decision_row(decision: Decision, item_id: str, at: float) -> DecisionRow:
    return DecisionRow(
        0,
        item_id,
        decision.reviewer,
        decision.role.value,
        decision.kind.value,
        decision.category.value if decision.category else "",
        decision.scope.value,
        at,
        False,
    )


__all__ = [
    "Candidate",
    "Decision",
    "QueueingDetector",
    "StaleItem",
    "candidates_from",
    "DecisionKind",
    "DocStatus",
    "ItemKind",
    "ItemStatus",
    "QueueItem",
    "ReviewError",
    "ReviewQueue",
    "Role",
    "Scope",
    "Sealed",
    "Stats",
    "candidates",
]
