"""What a forget removes beside the patient's record: every review queue row that carries or
points to the patient.

The review queue (:mod:`keystore.reviewdb`) keeps, per patient, sealed items (the whole note,
the authority and the patient id), patient-scope allow / deny list entries (a sealed string),
decisions on those items, and held documents (coordinates of the raw input). Sealed rows are
re-wrapped by ``keys rotate``, so leaving them would keep them readable under the key that
makes a forget final. :func:`forget_review_rows` runs inside the forget's transaction
(``SqlBackend.group``) and:

- deletes the patient's items and every decision on them;
- deletes the patient-scope list entries;
- for each string one of those items carried: a site-scope list entry that no other
  patient's live decision still backs is deleted; one still backed takes that decision's
  list and category (its sealed string is the same: the entry is addressed by the string);
- keeps a held document's row (so a replay of the held topic does not queue it again) with
  its coordinates and reason blanked and status ``forgotten`` — it is never released.

Only keyed addresses are used (``patient_ref``, ``text_ref``, entry ids): nothing is unsealed.

The patient's version marks go too. A mark is addressed by a research key, a pseudonym of
kind :data:`MARK_KEY_KIND` derived from the patient's sealed seed, and holds the real filing
time of the key's current version: the store notes whose seed keyed each research key it
derives (:class:`MarkOwners`) and writes, with the mark, a keyed tag of that seed in
``mark_owners``; the forget opens the record, tags its seed and deletes those marks.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from keystore.backend import SqlBackend

FORGOTTEN_DOC = "forgotten"  # review_docs.status of a held document whose patient was forgotten
REVIEW_PATIENT = "review-patient"  # the pseudonym kind of an item's patient_ref
REVIEW_LIST = "review-list"  # the pseudonym kind of a list entry's id
# the pseudonym kind of a research key (pipelines/process.py: seed, visit, report type), which
# addresses the version marks; and of the tag of a seed that owns marks
MARK_KEY_KIND = "research-key"
MARK_OWNER_KIND = "mark-owner"
_OWNERS_PENDING = 65_536  # research keys noted and not yet written with a mark
_TAGS_KEPT = 4096  # seeds whose owner tag is kept, the latest used
_SITE = "site"


@dataclass(frozen=True)
class ReviewForget:
    """How many review rows a forget removed (counts only: no ids)."""

    items: int = 0
    decisions: int = 0
    list_entries: int = 0
    site_entries: int = 0  # site-scope entries deleted (no other patient backs them)
    documents: int = 0  # held documents marked forgotten
    marks: int = 0  # version marks (set by the forget, see :func:`forget_marks`)

    def total(self) -> int:
        return (
            self.items
            + self.decisions
            + self.list_entries
            + self.site_entries
            + self.documents
            + self.marks
        )


def _chunks(values: Sequence[str], size: int = 500) -> list[Sequence[str]]:
    return [values[i : i + size] for i in range(0, len(values), size)]


def forget_review_rows(
    backend: SqlBackend, patient_ref: str, entry_id: Callable[[str, str, str], str]
) -> ReviewForget:
    """Remove the review rows of the patient ``patient_ref`` (see the module docstring).
    ``entry_id(scope, patient_ref, text_ref)`` is a list entry's address (the store's
    ``pseudonym(REVIEW_LIST, …)``). Idempotent: a second call finds nothing."""
    with backend._transaction() as cur:  # noqa: SLF001 - a statement group of the store
        ex = backend._exec  # noqa: SLF001
        rows = ex(
            cur,
            "SELECT id, doc_id, text_ref FROM review_items WHERE patient_ref = ?",
            (patient_ref,),
        ).fetchall()
        item_ids = [str(r[0]) for r in rows]
        doc_ids = sorted({str(r[1]) for r in rows})
        text_refs = sorted({str(r[2]) for r in rows if r[2]})
        decisions = 0
        for chunk in _chunks(item_ids):
            marks = ", ".join("?" * len(chunk))
            ex(cur, f"DELETE FROM review_decisions WHERE item_id IN ({marks})", chunk)  # noqa: S608
            decisions += max(int(cur.rowcount), 0)
        ex(cur, "DELETE FROM review_items WHERE patient_ref = ?", (patient_ref,))
        items = max(int(cur.rowcount), 0)
        ex(cur, "DELETE FROM review_lists WHERE patient_ref = ?", (patient_ref,))
        entries = max(int(cur.rowcount), 0)
        site = sum(_settle_site_entry(ex, cur, entry_id(_SITE, "", t), t) for t in text_refs)
        documents = 0
        for chunk in _chunks(doc_ids):
            marks = ", ".join("?" * len(chunk))
            ex(
                cur,
                "UPDATE review_docs SET status = ?, coordinates = '', reason = ''"  # noqa: S608
                f" WHERE doc_id IN ({marks}) AND NOT EXISTS (SELECT 1 FROM review_items i"
                " WHERE i.doc_id = review_docs.doc_id)",
                (FORGOTTEN_DOC, *chunk),
            )
            documents += max(int(cur.rowcount), 0)
    return ReviewForget(items, decisions, entries, site, documents)


def _settle_site_entry(ex: Callable[..., Any], cur: Any, entry: str, text_ref: str) -> int:
    """The site entry of ``text_ref`` after the patient's decisions went: as the latest live
    site decision left (of another patient's item) makes it, or deleted (returns 1)."""
    live = ex(
        cur,
        "SELECT d.kind, d.category FROM review_decisions d JOIN review_items i"
        " ON i.id = d.item_id WHERE d.undone = 0 AND d.scope = ?"
        " AND d.kind IN ('phi', 'not_phi') AND i.text_ref = ? ORDER BY d.id DESC LIMIT 1",
        (_SITE, text_ref),
    ).fetchone()
    if live is None:
        ex(cur, "DELETE FROM review_lists WHERE entry = ?", (entry,))
        return max(int(cur.rowcount), 0)
    kind = "deny" if str(live[0]) == "phi" else "allow"
    ex(
        cur,
        "UPDATE review_lists SET list = ?, category = ? WHERE entry = ?",
        (kind, str(live[1]), entry),
    )
    return 0


class MarkOwners:
    """The research keys this process derived and the tag of the seed that keyed each, until
    written beside their mark (bounded: the oldest go first). The tags of the seeds seen
    last are kept (``_TAGS_KEPT``: a patient's every visit asks for the same one) until
    :meth:`drop_tags` — the forget calls it, as it drops the patient's cached state."""

    def __init__(self, tag: Callable[[bytes], str], limit: int = _OWNERS_PENDING) -> None:
        self._tag = tag
        self._limit = limit
        self._pending: OrderedDict[str, str] = OrderedDict()
        self._tags: OrderedDict[bytes, str] = OrderedDict()  # seed → its tag
        self._lock = threading.Lock()

    def note(self, key: str, seed: bytes) -> None:
        with self._lock:
            if key in self._pending:
                return
            owner = self._tags.get(seed)
        if owner is None:
            owner = self._tag(seed)
        with self._lock:
            self._tags[seed] = owner
            self._tags.move_to_end(seed)
            if len(self._tags) > _TAGS_KEPT:
                self._tags.popitem(last=False)
            self._pending[key] = owner
            while len(self._pending) > self._limit:
                self._pending.popitem(last=False)

    def drop_tags(self) -> None:
        """Forget every seed's tag kept (a patient is being forgotten)."""
        with self._lock:
            self._tags.clear()

    def find(self, keys: Iterable[str]) -> list[tuple[str, str]]:
        """(key, owner) of the ``keys`` noted and not written yet."""
        with self._lock:
            return [(k, o) for k in keys if (o := self._pending.get(k)) is not None]

    def written(self, found: Iterable[tuple[str, str]]) -> None:
        with self._lock:
            for key, _ in found:
                self._pending.pop(key, None)


def add_mark_owners(backend: SqlBackend, rows: Sequence[tuple[bytes, str]]) -> None:
    """Record the owner tag of each mark key hash (a key already owned keeps its owner), the
    rows with one ``executemany`` (a statement per row cost a driver call each, and on
    PostgreSQL inside a group a round trip each)."""
    if not rows:
        return
    with backend._transaction() as cur:  # noqa: SLF001
        backend._exec_many(  # noqa: SLF001
            cur,
            "INSERT INTO mark_owners (key_hash, owner) VALUES (?, ?)"
            " ON CONFLICT (key_hash) DO NOTHING",
            rows,
        )


def forget_marks(backend: SqlBackend, owner: str) -> int:
    """Delete the marks owned by ``owner`` (and their owner rows); how many marks went."""
    with backend._transaction() as cur:  # noqa: SLF001
        ex = backend._exec  # noqa: SLF001
        ex(
            cur,
            "DELETE FROM marks WHERE key_hash IN"
            " (SELECT key_hash FROM mark_owners WHERE owner = ?)",
            (owner,),
        )
        removed = max(int(cur.rowcount), 0)
        ex(cur, "DELETE FROM mark_owners WHERE owner = ?", (owner,))
    return removed
