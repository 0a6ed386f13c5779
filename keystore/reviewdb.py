"""The review queue's tables, in the key store's database (SQLite or PostgreSQL).

Only sealed bytes and PHI-free metadata are stored: an item's text (the candidate string and
its note) is a sealed blob (:meth:`EncryptedStore.seal_blob`, the patient records' envelope
encryption, bound to the row's id); the patient and the candidate string are addressed by
keyed HMACs (``patient_ref``, ``text_ref``) so "the same string in this patient / site" is an
indexed look-up, never a decryption of the whole queue. Decisions name an item id, a
reviewer, a kind, a category and a scope: no text.

The tables are created by the key store's numbered migration 5 (``keystore/schema.py``,
``deidstream keys migrate``), so a DML-only service role can use them
(``keystore.postgres.service_grants``). ``keys rotate`` re-wraps the sealed blobs
(:func:`rewrap_blobs`) and a master key they are still wrapped under cannot be retired
(``SqlBackend.retire_key``, the key guard triggers / foreign keys).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from keystore.backend import SqlBackend
from keystore.envelope import Sealed, rewrap
from keystore.errors import IntegrityError, KeystoreError
from keystore.keyring import Keyring, fingerprint

# what a blob is bound to (its associated data): the row's address in its table
ITEM_BINDING = b"deidstream/review/item\x00"
LIST_BINDING = b"deidstream/review/list\x00"
_ITEM_COLUMNS = (
    "seq, id, doc_id, patient_ref, text_ref, kind, status, created_at, key_id,"
    " wrapped_key, nonce, ciphertext, envelope"
)


@dataclass(frozen=True, slots=True)
class ItemRow:
    seq: int
    id: str
    doc_id: str
    patient_ref: str
    text_ref: str
    kind: str
    status: str
    created_at: float
    sealed: Sealed


@dataclass(frozen=True, slots=True)
class DecisionRow:
    id: int
    item_id: str
    reviewer: str
    role: str
    kind: str
    category: str
    scope: str
    at: float
    undone: bool

    @classmethod
    def of(cls, r: Sequence[Any]) -> DecisionRow:
        """From a selected row: id, item_id, reviewer, role, kind, category, scope, at, undone."""
        return cls(
            int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5]), str(r[6]),
            float(r[7]), bool(r[8]),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class DocRow:
    doc_id: str
    coordinates: str
    reason_class: str
    reason: str
    status: str
    created_at: float
    released_at: float | None


@dataclass(frozen=True, slots=True)
class ListRow:
    entry: str
    list: str
    scope: str
    patient_ref: str
    category: str
    sealed: Sealed


def _sealed(raw: Sequence[Any]) -> Sealed:
    return Sealed(str(raw[0]), bytes(raw[1]), bytes(raw[2]), bytes(raw[3]), int(raw[4]))


def _item(raw: Sequence[Any]) -> ItemRow:
    return ItemRow(
        int(raw[0]),
        str(raw[1]),
        str(raw[2]),
        str(raw[3]),
        str(raw[4]),
        str(raw[5]),
        str(raw[6]),
        float(raw[7]),
        _sealed(raw[8:13]),
    )


class ReviewDb:
    """SQL of the review queue over a key store backend (thread-safe as the backend is)."""

    def __init__(self, backend: SqlBackend) -> None:
        self._b = backend

    def _write(self, sql: str, params: Sequence[Any] = ()) -> int:
        with self._b._transaction() as cur:  # noqa: SLF001
            self._b._exec(cur, sql, params)  # noqa: SLF001
            return int(cur.rowcount)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._b._transaction(write=False) as cur:  # noqa: SLF001
            return list(self._b._exec(cur, sql, params).fetchall())  # noqa: SLF001

    # -- documents ------------------------------------------------------------------------
    def add_doc(self, doc: DocRow) -> bool:
        """Insert a held document unless it is already queued; True when inserted."""
        return (
            self._write(
                "INSERT INTO review_docs (doc_id, coordinates, reason_class, reason, status,"
                " created_at, released_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (doc_id) DO NOTHING",
                (
                    doc.doc_id,
                    doc.coordinates,
                    doc.reason_class,
                    doc.reason,
                    doc.status,
                    doc.created_at,
                    doc.released_at,
                ),
            )
            == 1
        )

    def doc(self, doc_id: str) -> DocRow | None:
        rows = self._read(
            "SELECT doc_id, coordinates, reason_class, reason, status, created_at,"
            " released_at FROM review_docs WHERE doc_id = ?",
            (doc_id,),
        )
        return DocRow(*rows[0]) if rows else None

    def docs(self, status: str) -> list[DocRow]:
        return [
            DocRow(*r)
            for r in self._read(
                "SELECT doc_id, coordinates, reason_class, reason, status, created_at, released_at"
                " FROM review_docs WHERE status = ? ORDER BY created_at",
                (status,),
            )
        ]

    def decided_docs(self, doc_ids: Sequence[str] | None = None) -> list[DocRow]:
        """Open held documents none of whose items is still open or referred (one query;
        only ``doc_ids`` when given)."""
        sql = (
            "SELECT d.doc_id, d.coordinates, d.reason_class, d.reason, d.status,"
            " d.created_at, d.released_at FROM review_docs d WHERE d.status = 'open'"
            " AND NOT EXISTS (SELECT 1 FROM review_items i WHERE i.doc_id = d.doc_id"
            " AND i.status <> 'decided')"
        )
        params: list[Any] = []
        if doc_ids is not None:
            if not doc_ids:
                return []
            sql += f" AND d.doc_id IN ({', '.join('?' * len(doc_ids))})"
            params = list(doc_ids)
        return [DocRow(*r) for r in self._read(sql + " ORDER BY d.created_at", params)]

    def doc_counts(self) -> dict[str, int]:
        return {
            str(s): int(n)
            for s, n in self._read("SELECT status, COUNT(*) FROM review_docs GROUP BY status")
        }

    def set_doc_status(
        self, doc_id: str, expected: str, status: str, now: float, reason: str | None = None
    ) -> bool:
        """Compare-and-set a document's status (two reviewers finishing at once release it
        once); True when this call changed it."""
        if reason is None:
            return (
                self._write(
                    "UPDATE review_docs SET status = ?, released_at = ?"
                    " WHERE doc_id = ? AND status = ?",
                    (status, now, doc_id, expected),
                )
                == 1
            )
        return (
            self._write(
                "UPDATE review_docs SET status = ?, released_at = ?, reason = ?"
                " WHERE doc_id = ? AND status = ?",
                (status, now, reason, doc_id, expected),
            )
            == 1
        )

    # -- items ----------------------------------------------------------------------------
    def add_items(self, items: Sequence[ItemRow]) -> int:
        """Insert items (an id already queued is skipped); how many were new."""
        added = 0
        with self._b._transaction() as cur:  # noqa: SLF001
            for it in items:
                s = it.sealed
                self._b._exec(  # noqa: SLF001
                    cur,
                    "INSERT INTO review_items (id, doc_id, patient_ref, text_ref, kind,"
                    " status, created_at, key_id, wrapped_key, nonce, ciphertext, envelope)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                    (
                        it.id,
                        it.doc_id,
                        it.patient_ref,
                        it.text_ref,
                        it.kind,
                        it.status,
                        it.created_at,
                        s.key_id,
                        s.wrapped_key,
                        s.nonce,
                        s.ciphertext,
                        s.envelope,
                    ),
                )
                added += max(int(cur.rowcount), 0)
        return added

    def item(self, item_id: str) -> ItemRow | None:
        rows = self._read(
            f"SELECT {_ITEM_COLUMNS} FROM review_items WHERE id = ?",  # noqa: S608
            (item_id,),
        )
        return _item(rows[0]) if rows else None

    def page(
        self, statuses: Sequence[str], after_seq: int, limit: int, before: bool = False
    ) -> list[ItemRow]:
        """Up to ``limit`` items in one of ``statuses`` after (or before) ``after_seq``, in
        queue order — an index range scan, whatever the queue's length."""
        marks = ", ".join("?" * len(statuses))
        op, order = ("<", "DESC") if before else (">", "ASC")
        rows = self._read(
            f"SELECT {_ITEM_COLUMNS} FROM review_items WHERE status IN ({marks})"  # noqa: S608
            f" AND seq {op} ? ORDER BY seq {order} LIMIT ?",
            (*statuses, after_seq, limit),
        )
        return [_item(r) for r in rows]

    def items_of_doc(self, doc_id: str) -> list[ItemRow]:
        return [
            _item(r)
            for r in self._read(
                f"SELECT {_ITEM_COLUMNS} FROM review_items WHERE doc_id = ? ORDER BY seq",  # noqa: S608
                (doc_id,),
            )
        ]

    def open_items_with_text(self, text_ref: str) -> list[ItemRow]:
        return [
            _item(r)
            for r in self._read(
                f"SELECT {_ITEM_COLUMNS} FROM review_items WHERE text_ref = ?"  # noqa: S608
                " AND status IN ('open', 'referred') ORDER BY seq",
                (text_ref,),
            )
        ]

    def set_status(self, item_ids: Sequence[str], status: str) -> None:
        with self._b._transaction() as cur:  # noqa: SLF001
            for item_id in item_ids:
                self._b._exec(
                    cur,
                    "UPDATE review_items SET status = ? WHERE id = ?",  # noqa: SLF001
                    (status, item_id),
                )

    def counts(self) -> dict[str, int]:
        return {
            str(s): int(n)
            for s, n in self._read("SELECT status, COUNT(*) FROM review_items GROUP BY status")
        }

    def position(self, seq: int) -> int:
        """How many items come before ``seq`` in the queue."""
        return int(self._read("SELECT COUNT(*) FROM review_items WHERE seq < ?", (seq,))[0][0])

    def count(self, statuses: Sequence[str], before_seq: int | None = None) -> int:
        """How many items in one of ``statuses`` (before ``before_seq`` when given)."""
        sql = (
            f"SELECT COUNT(*) FROM review_items WHERE status IN ({', '.join('?' * len(statuses))})"  # noqa: S608
        )
        params: list[Any] = list(statuses)
        if before_seq is not None:
            sql += " AND seq < ?"
            params.append(before_seq)
        return int(self._read(sql, params)[0][0])

    # -- decisions ------------------------------------------------------------------------
    def add_decision(self, d: DecisionRow) -> None:
        self._write(
            "INSERT INTO review_decisions (item_id, reviewer, role, kind, category,"
            " scope, at, undone) VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
            (d.item_id, d.reviewer, d.role, d.kind, d.category, d.scope, d.at),
        )

    def decisions(
        self, *, include_undone: bool = False, item_id: str | None = None
    ) -> list[DecisionRow]:
        where = [] if include_undone else ["undone = 0"]
        params: list[Any] = []
        if item_id is not None:
            where.append("item_id = ?")
            params.append(item_id)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._read(
            "SELECT id, item_id, reviewer, role, kind, category, scope, at, undone"  # noqa: S608
            f" FROM review_decisions{clause} ORDER BY id",
            params,
        )
        return [DecisionRow.of(r) for r in rows]

    def last_decision_at(self, reviewer: str) -> float | None:
        rows = self._read(
            "SELECT MAX(at) FROM review_decisions WHERE reviewer = ? AND undone = 0", (reviewer,)
        )
        return None if not rows or rows[0][0] is None else float(rows[0][0])

    def undo(self, reviewer: str, at: float) -> list[str]:
        """Mark ``reviewer``'s decisions taken at ``at`` (one key press) undone; their items."""
        rows = self._read(
            "SELECT item_id FROM review_decisions WHERE reviewer = ? AND at = ? AND undone = 0",
            (reviewer, at),
        )
        self._write(
            "UPDATE review_decisions SET undone = 1 WHERE reviewer = ? AND at = ? AND undone = 0",
            (reviewer, at),
        )
        return [str(r[0]) for r in rows]

    def live_list_decision(
        self, text_ref: str, scope: str, patient_ref: str | None
    ) -> DecisionRow | None:
        """The latest live (not undone) decision of ``scope`` that makes a list entry (PHI
        or not PHI) on an item of the string ``text_ref`` — of the patient ``patient_ref``
        when given; None if there is none left."""
        sql = (
            "SELECT d.id, d.item_id, d.reviewer, d.role, d.kind, d.category, d.scope, d.at,"
            " d.undone FROM review_decisions d JOIN review_items i ON i.id = d.item_id"
            " WHERE d.undone = 0 AND d.scope = ? AND d.kind IN ('phi', 'not_phi')"
            " AND i.text_ref = ?"
        )
        params: list[Any] = [scope, text_ref]
        if patient_ref is not None:
            sql += " AND i.patient_ref = ?"
            params.append(patient_ref)
        # an expert's decision outranks any reviewer's, whenever it was taken
        order = " ORDER BY CASE WHEN d.role = 'expert' THEN 1 ELSE 0 END DESC, d.id DESC LIMIT 1"
        rows = self._read(sql + order, params)
        if not rows:
            return None
        return DecisionRow.of(rows[0])

    # -- allow / deny lists ---------------------------------------------------------------
    def put_list_entry(self, row: ListRow, now: float) -> None:
        s = row.sealed
        with self._b._transaction() as cur:  # noqa: SLF001
            self._b._exec(cur, "DELETE FROM review_lists WHERE entry = ?", (row.entry,))  # noqa: SLF001
            self._b._exec(  # noqa: SLF001
                cur,
                "INSERT INTO review_lists (entry, list, scope, patient_ref, category,"
                " created_at, key_id, wrapped_key, nonce, ciphertext, envelope)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    row.entry,
                    row.list,
                    row.scope,
                    row.patient_ref,
                    row.category,
                    now,
                    s.key_id,
                    s.wrapped_key,
                    s.nonce,
                    s.ciphertext,
                    s.envelope,
                ),
            )

    def list_entry(self, entry: str) -> ListRow | None:
        rows = self._read(
            "SELECT entry, list, scope, patient_ref, category, key_id,"
            " wrapped_key, nonce, ciphertext, envelope FROM review_lists WHERE entry = ?",
            (entry,),
        )
        if not rows:
            return None
        r = rows[0]
        return ListRow(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), _sealed(r[5:10]))

    def existing_entries(self, entries: Sequence[str]) -> set[str]:
        """Which of ``entries`` are on the lists (one query per 500)."""
        found: set[str] = set()
        unique = sorted(set(entries))
        for k in range(0, len(unique), 500):
            part = unique[k : k + 500]
            found.update(
                str(r[0])
                for r in self._read(
                    f"SELECT entry FROM review_lists WHERE entry IN ({', '.join('?' * len(part))})",  # noqa: S608
                    part,
                )
            )
        return found

    def delete_list_entry(self, entry: str) -> None:
        self._write("DELETE FROM review_lists WHERE entry = ?", (entry,))

    def list_entries(self) -> list[ListRow]:
        return [
            ListRow(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), _sealed(r[5:10]))
            for r in self._read(
                "SELECT entry, list, scope, patient_ref, category, key_id,"
                " wrapped_key, nonce, ciphertext, envelope FROM review_lists"
                " ORDER BY entry"
            )
        ]

    # -- reviewer accounts ----------------------------------------------------------------
    def put_account(self, username: str, role: str, password_hash: str, now: float) -> None:
        with self._b._transaction() as cur:  # noqa: SLF001
            self._b._exec(
                cur,
                "DELETE FROM review_accounts WHERE username = ?",  # noqa: SLF001
                (username,),
            )
            self._b._exec(
                cur,
                "INSERT INTO review_accounts (username, role, password_hash,"  # noqa: SLF001
                " created_at) VALUES (?, ?, ?, ?)",
                (username, role, password_hash, now),
            )

    def account(self, username: str) -> tuple[str, str] | None:
        """(role, password hash) of ``username``, or None."""
        rows = self._read(
            "SELECT role, password_hash FROM review_accounts WHERE username = ?", (username,)
        )
        return (str(rows[0][0]), str(rows[0][1])) if rows else None


# -- key rotation: re-wrap every sealed blob under the primary key -------------------------
@dataclass
class BlobRewrap:
    rewrapped: int = 0
    already_current: int = 0
    failed: list[str] = field(default_factory=list)  # fingerprints of bindings, no ids

    def fail(self, binding: bytes) -> None:
        self.failed.append(fingerprint(binding))


# (table, its key column, the binding prefix)
_SEALED_TABLES = (("review_items", "id", ITEM_BINDING), ("review_lists", "entry", LIST_BINDING))
_MAX_TRIES = 5


def rewrap_blobs(backend: SqlBackend, keyring: Keyring, batch: int = 500) -> BlobRewrap:
    """Re-wrap the data key of every review blob not yet under ``keyring.primary`` (the
    ciphertexts are untouched); a row changed meanwhile is read again and retried."""
    report = BlobRewrap()
    primary = keyring.primary.key_id
    for table, column, prefix in _SEALED_TABLES:
        report.already_current += _count(backend, table, primary)
        last = ""
        while rows := _stale(backend, table, column, primary, last, batch):
            for address in _rewrap_batch(backend, keyring, (table, column, prefix), rows, report):
                _rewrap_one(
                    backend,
                    keyring,
                    (table, column, prefix),
                    address,
                    _reread(backend, table, column, address),
                    report,
                )
            last = rows[-1][0]
    return report


def _rewrap_batch(
    backend: SqlBackend,
    keyring: Keyring,
    where: tuple[str, str, bytes],
    rows: Sequence[tuple[str, Sealed]],
    report: BlobRewrap,
) -> list[str]:
    """Re-wrap ``rows`` in one transaction (one commit per batch, not per blob); the
    addresses whose row changed meanwhile, to be retried one by one."""
    table, column, prefix = where
    new: list[tuple[str, Sealed, Sealed]] = []
    for address, sealed in rows:
        try:
            new.append((address, sealed, rewrap(keyring, prefix + address.encode(), sealed)))
        except (IntegrityError, KeystoreError):
            report.fail(prefix + address.encode())
    missed: list[str] = []
    with backend._transaction() as cur:  # noqa: SLF001
        for address, old, fresh in new:
            backend._exec(
                cur,
                f"UPDATE {table} SET key_id = ?, wrapped_key = ?"  # noqa: SLF001, S608
                f" WHERE {column} = ? AND wrapped_key = ?",
                (fresh.key_id, fresh.wrapped_key, address, old.wrapped_key),
            )
            if cur.rowcount == 1:
                report.rewrapped += 1
            else:
                missed.append(address)
    return missed


def _count(backend: SqlBackend, table: str, primary: str) -> int:
    with backend._transaction(write=False) as cur:  # noqa: SLF001
        return int(
            backend._exec(
                cur,
                f"SELECT COUNT(*) FROM {table}"  # noqa: SLF001, S608
                " WHERE key_id = ?",
                (primary,),
            ).fetchone()[0]
        )


def _stale(
    backend: SqlBackend, table: str, column: str, primary: str, after: str, batch: int
) -> list[tuple[str, Sealed]]:
    """Up to ``batch`` rows after ``after`` not wrapped under ``primary`` (keyset order)."""
    with backend._transaction(write=False) as cur:  # noqa: SLF001
        raws = backend._exec(  # noqa: SLF001
            cur,
            f"SELECT {column}, key_id, wrapped_key, nonce, ciphertext, envelope"  # noqa: S608
            f" FROM {table} WHERE key_id <> ? AND {column} > ? ORDER BY {column} LIMIT ?",
            (primary, after, batch),
        ).fetchall()
    return [(str(r[0]), _sealed(r[1:6])) for r in raws]


def _rewrap_one(
    backend: SqlBackend,
    keyring: Keyring,
    where: tuple[str, str, bytes],
    address: str,
    sealed: Sealed | None,
    report: BlobRewrap,
) -> None:
    table, column, prefix = where
    binding = prefix + address.encode()
    for _ in range(_MAX_TRIES):
        if sealed is None:
            return  # deleted meanwhile (a list entry taken back)
        if sealed.key_id == keyring.primary.key_id:
            report.already_current += 1
            return
        try:
            new = rewrap(keyring, binding, sealed)
        except (IntegrityError, KeystoreError):
            report.fail(binding)
            return
        with backend._transaction() as cur:  # noqa: SLF001
            backend._exec(
                cur,
                f"UPDATE {table} SET key_id = ?, wrapped_key = ?"  # noqa: SLF001, S608
                f" WHERE {column} = ? AND wrapped_key = ?",
                (new.key_id, new.wrapped_key, address, sealed.wrapped_key),
            )
            done = cur.rowcount == 1
        if done:
            report.rewrapped += 1
            return
        sealed = _reread(backend, table, column, address)  # replaced meanwhile: again
    report.fail(binding)


def _reread(backend: SqlBackend, table: str, column: str, address: str) -> Sealed | None:
    with backend._transaction(write=False) as cur:  # noqa: SLF001
        raw = backend._exec(
            cur,
            "SELECT key_id, wrapped_key, nonce, ciphertext, envelope"  # noqa: SLF001, S608
            f" FROM {table} WHERE {column} = ?",
            (address,),
        ).fetchone()
    return _sealed(raw) if raw else None
