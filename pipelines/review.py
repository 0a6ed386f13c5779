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

import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import combinations
from typing import Any

import orjson

from keystore.envelope import Sealed
from keystore.forgetting import FORGOTTEN_DOC, REVIEW_LIST, REVIEW_PATIENT
from keystore.reviewdb import ITEM_BINDING as _ITEM_BINDING
from keystore.reviewdb import LIST_BINDING as _LIST_BINDING
from keystore.reviewdb import DecisionRow, DocRow, ItemRow, ListRow, ReviewDb
from keystore.store import EncryptedStore
from pipelines.agreement import cohen_kappa, fleiss_kappa
from pipelines.document import ClinicalDocument
from pipelines.errors import DeidstreamError
from pipelines.phi.base import Doc
from pipelines.phi.detector import Detector
from pipelines.phi.lists import ListScope, ReviewLists, normalise
from pipelines.policy import Policy
from pipelines.spans import Category, Span

_NAMES_AND_PLACES = frozenset({"NAME", "LOCATION"})


class DecisionKind(StrEnum):
    PHI = "phi"
    NOT_PHI = "not_phi"
    UNSURE = "unsure"
    REFER = "refer"  # to an expert: not a rating


class Scope(StrEnum):
    NOTE = "note"
    PATIENT = "patient"
    SITE = "site"


class ItemKind(StrEnum):
    HELD_DOCUMENT = "held_document"  # a held note without a candidate span: release it?
    BAND = "band"  # tagger confidence inside the policy band
    DISAGREEMENT = "disagreement"  # rules and tagger disagree
    HELD_SPAN = "held_span"  # a detected span of a held document


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

    @property
    def string(self) -> str:
        return self.candidate.text_of(self.text) if self.candidate else ""


@dataclass(frozen=True)
class Candidate:
    span: Span
    kind: ItemKind


def candidates(
    detector: Detector,
    document: ClinicalDocument | str,
    band: tuple[float, float],
    disagreement: bool = True,
) -> tuple[list[Candidate], list[Span]]:
    """The spans a person should look at, and every span the detector finds (the context)."""
    doc, rules, learned = detector.parts(document)
    return (
        candidates_from(rules, learned, band, disagreement),
        detector.finish(document, doc, rules, learned),
    )


def candidates_from(
    rules: Sequence[Span],
    learned: Sequence[Span],
    band: tuple[float, float],
    disagreement: bool = True,
) -> list[Candidate]:
    low, high = band
    found: dict[tuple[int, int], Candidate] = {}
    for span in learned:
        if low <= span.confidence <= high:
            found[(span.start, span.end)] = Candidate(span, ItemKind.BAND)
    if disagreement:
        for span in _disagreements(rules, learned):
            found.setdefault((span.start, span.end), Candidate(span, ItemKind.DISAGREEMENT))
    return sorted(found.values(), key=lambda c: c.span)


class QueueingDetector(Detector):
    """A detector that also queues each document's band and disagreement spans for review
    (the service with ``review_queue_spans``): one detection, the candidates read off the
    rules' and the tagger's spans before they are united. Idempotent per note text."""

    def __init__(self, policy: Policy, queue: ReviewQueue) -> None:
        super().__init__(policy, lists=queue.lists)
        self.queue = queue

    def detect(self, document: ClinicalDocument | Doc | str) -> list[Span]:
        doc, rules, learned = self.parts(document)
        spans = self.finish(document, doc, rules, learned)
        if isinstance(document, ClinicalDocument):
            found = candidates_from(
                rules, learned, self.policy.review_band, self.policy.review_disagreement
            )
            if found:
                self.queue.add_candidates(document, found, spans)
        return spans


def _known_left(
    document: ClinicalDocument, detector: Detector, spans: Sequence[Span], taken: set[Span]
) -> list[Candidate]:
    """Where a held note's known identifiers (its header's names, ids…: what the leak guard
    looks for) occur outside the detector's spans: the strings that held it."""
    from pipelines.leak_guard import known_terms

    text = document.text
    out: list[Candidate] = []
    for term in known_terms(document.identifiers, detector.policy, text):
        try:
            category = Category(term.category)
        except ValueError:
            category = Category.ID
        for m in re.finditer(term.pattern, text):
            if m.end() <= m.start() or any(
                s.start < m.end() and m.start() < s.end for s in (*spans, *taken)
            ):
                continue
            span = Span(m.start(), m.end(), category, 1.0, "known")
            taken.add(span)
            out.append(Candidate(span, ItemKind.HELD_SPAN))
    return out


def _disagreements(rules: Sequence[Span], learned: Sequence[Span]) -> Iterable[Span]:
    """Names and places one side finds and the other does not, and overlaps of two groups."""
    for span in learned:
        overlapping = [r for r in rules if r.overlaps(span)]
        if not overlapping:
            if span.category.group in _NAMES_AND_PLACES:
                yield span
        elif all(r.category.group != span.category.group for r in overlapping):
            yield span
    for rule in rules:
        if rule.category.group in _NAMES_AND_PLACES and not any(s.overlaps(rule) for s in learned):
            yield rule


@dataclass
class Stats:
    counts: dict[str, Counter[str]] = field(default_factory=dict)  # reviewer → kind → n
    cohen: dict[tuple[str, str], tuple[float | None, int]] = field(default_factory=dict)
    fleiss: float | None = None
    fleiss_items: int = 0


class ReviewQueue:
    """The queue over one key store (thread-safe as the store is)."""

    def __init__(
        self,
        store: EncryptedStore,
        *,
        reviews_per_item: int = 1,
        clock: Callable[[], float] = time.time,
        lists_ttl_s: float = 2.0,
    ) -> None:
        self.store = store
        self.db = ReviewDb(store.backend)
        self.reviews_per_item = reviews_per_item
        self._clock = clock
        self._lists_ttl = lists_ttl_s
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

    def enqueue(
        self,
        document: ClinicalDocument,
        detector: Detector,
        *,
        coordinates: str = "",
        held_reason: tuple[str, str] | None = None,
    ) -> list[str]:
        """Queue ``document``'s candidates (and, if held — ``(reason_class, reason)`` —
        the document itself, keyed by its input ``coordinates``); the new item ids."""
        policy = detector.policy
        found, spans = candidates(
            detector, document, policy.review_band, policy.review_disagreement
        )
        if held_reason is None:
            return self.add_candidates(document, found, spans)
        doc_id = self.store.pseudonym("review-doc", coordinates or document.text)
        now = self._clock()
        rows = [self._item_row(document, doc_id, c, spans, now) for c in found]
        self.db.add_doc(
            DocRow(doc_id, coordinates, held_reason[0], held_reason[1], DocStatus.OPEN, now, None)
        )
        left = _known_left(document, detector, spans, {c.span for c in found})
        rows += [self._item_row(document, doc_id, c, spans, now) for c in left]
        rows.append(self._item_row(document, doc_id, None, spans, now))
        self.db.add_items(rows)
        return [r.id for r in rows]

    def add_candidates(
        self, document: ClinicalDocument, found: Sequence[Candidate], spans: Sequence[Span]
    ) -> list[str]:
        """Queue a (not held) document's candidate spans; the item ids."""
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
    ) -> ItemRow:
        span = cand.span if cand else None
        item_id = self.store.pseudonym(
            "review-item", doc_id, f"{span.start}:{span.end}" if span else "document"
        )
        payload = orjson.dumps(
            {
                "text": document.text,
                "span": _span_json(span) if span else None,
                "others": [_span_json(s) for s in spans if s != span],
                "who": [document.assigning_authority, document.patient_id],
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
            _span_of(raw["span"]) if raw["span"] else None,
            tuple(_span_of(s) for s in raw["others"]),
            str(who[0]),
            str(who[1]),
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

    def progress(self) -> dict[str, int]:
        counts = self.db.counts()
        return {s.value: counts.get(s.value, 0) for s in ItemStatus}

    # -- deciding -----------------------------------------------------------------------
    def decide(self, decision: Decision) -> list[str]:
        """Record ``decision`` (and its scope's); the item ids it decided."""
        row = self.db.item(decision.item_id)
        if row is None:
            raise ReviewError("no such item in the review queue")
        if row.status == ItemStatus.REFERRED and decision.role is not Role.EXPERT:
            raise ReviewError("this item was referred to an expert")
        now = self._clock()
        if decision.kind is DecisionKind.REFER:
            self.db.add_decision(_decision_row(decision, row.id, now))
            self.db.set_status([row.id], ItemStatus.REFERRED)
            self.store.audit("review-refer", decision.reviewer, row.id, "referred")
            return [row.id]
        targets = [
            t
            for t in self._targets(row, decision.scope)
            if t.id == row.id or t.status != ItemStatus.REFERRED or decision.role is Role.EXPERT
        ]
        for target in targets:
            self.db.add_decision(_decision_row(decision, target.id, now))
        done = [t.id for t in targets if self._reviewed_enough(t.id)]
        self.db.set_status(done, ItemStatus.DECIDED)
        if (
            decision.scope is not Scope.NOTE
            and row.text_ref
            and decision.kind in (DecisionKind.PHI, DecisionKind.NOT_PHI)
        ):
            self._list_entry(row, decision, now)
        self.store.audit(
            "review-decide",
            decision.reviewer,
            row.id,
            f"{decision.kind.value}/{decision.scope.value}/{len(targets)}",
            reason=decision.category.value if decision.category else "",
        )
        return [t.id for t in targets]

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
        for row in self.db.list_entries():
            value = self.store.open_blob(_LIST_BINDING + row.entry.encode(), row.sealed)
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
        return ReviewLists(site, scopes, self.patient_ref)

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
                release(doc)
            except BaseException:
                self.db.set_doc_status(doc.doc_id, DocStatus.RELEASING, DocStatus.OPEN, now)
                raise
            self.db.set_doc_status(doc.doc_id, DocStatus.RELEASING, DocStatus.RELEASED, now)
            self.store.audit("review-settle", "review", doc.doc_id, "released")
            done.append((doc.coordinates, DocStatus.RELEASED))
        return done

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
        wanted = set(item_ids)
        best: dict[str, tuple[int, int, DecisionKind]] = {}
        for d in self.db.decisions():
            if d.item_id not in wanted or d.kind == DecisionKind.REFER:
                continue
            rank = (1 if d.role == Role.EXPERT else 0, d.id)
            if d.item_id not in best or rank > best[d.item_id][:2]:
                best[d.item_id] = (*rank, DecisionKind(d.kind))
        return {k: v[2] for k, v in best.items()}

    # -- learning and agreement ---------------------------------------------------------
    def decided_notes(self) -> list[tuple[str, list[tuple[int, int, Category]]]]:
        """Each decided note's text and its PHI phrases for training (in memory only): the
        spans decided PHI, plus the detector's other spans not decided not-PHI."""
        final = self._final_kinds([d.item_id for d in self.db.decisions()])
        by_doc: dict[str, list[tuple[QueueItem, DecisionKind, Category | None]]] = defaultdict(list)
        categories = {d.item_id: d.category for d in self.db.decisions() if d.category}
        for item_id, kind in final.items():
            row = self.db.item(item_id)
            if row is None or kind not in (DecisionKind.PHI, DecisionKind.NOT_PHI):
                continue
            cat = categories.get(item_id)
            by_doc[row.doc_id].append((self.open_item(row), kind, Category(cat) if cat else None))
        notes = []
        for decided in by_doc.values():
            text = decided[0][0].text
            rejected = {
                (i.candidate.start, i.candidate.end)
                for i, k, _ in decided
                if i.candidate and k is DecisionKind.NOT_PHI
            }
            phrases = {
                (i.candidate.start, i.candidate.end): c or i.candidate.category
                for i, k, c in decided
                if i.candidate and k is DecisionKind.PHI
            }
            for s in decided[0][0].others:
                if (s.start, s.end) not in rejected and not any(
                    s.start < e and b < s.end for b, e in rejected
                ):
                    phrases.setdefault((s.start, s.end), s.category)
            notes.append((text, sorted((b, e, c) for (b, e), c in phrases.items())))
        return notes

    def training_examples(self) -> list[Any]:
        """:meth:`decided_notes` as the tagger's training examples (in memory only)."""
        from pipelines.phi.tagger.augment import Example, Phrase
        from pipelines.phi.tagger.model import label_of

        out = []
        for text, spans in self.decided_notes():
            phrases = []
            for start, end, category in spans:
                label = label_of(category.value)
                if label is not None:
                    phrases.append(Phrase(start, end, label))
            out.append(Example(text, tuple(phrases)))
        return out

    def stats(self) -> Stats:
        """Per-reviewer counts, Cohen's kappa per pair, Fleiss' kappa across all."""
        latest: dict[tuple[str, str], str] = {}
        out = Stats()
        for d in self.db.decisions():
            out.counts.setdefault(d.reviewer, Counter())[d.kind] += 1
            if d.kind != DecisionKind.REFER:
                latest[(d.item_id, d.reviewer)] = d.kind
        return _agreement(latest, out)


def _agreement(latest: dict[tuple[str, str], str], out: Stats) -> Stats:
    by_item: dict[str, dict[str, str]] = defaultdict(dict)
    for (item, reviewer), kind in latest.items():
        by_item[item][reviewer] = kind
    reviewers = sorted(out.counts)
    for a, b in combinations(reviewers, 2):
        pairs = [(r[a], r[b]) for r in by_item.values() if a in r and b in r]
        if pairs:
            out.cohen[(a, b)] = (cohen_kappa(pairs), len(pairs))
    table: list[Mapping[Hashable, int]] = [
        Counter(r.values()) for r in by_item.values() if len(r) >= 2
    ]
    out.fleiss = fleiss_kappa(table)
    out.fleiss_items = len(table)
    return out


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


def _span_json(span: Span) -> list[object]:
    return [span.start, span.end, span.category.value, span.confidence, span.source]


def _span_of(raw: Sequence[object]) -> Span:
    start, end, category, confidence, source = raw
    return Span(
        int(str(start)), int(str(end)), Category(str(category)), float(str(confidence)), str(source)
    )


__all__ = [
    "Candidate",
    "Decision",
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
