"""The SQL both backends share: tables, versioned migrations, and the few statements.

Backends differ only in connection handling, transactions, placeholder style and column
types; the SQL is written once here with ``?`` placeholders and ``{blob}``-style type slots.
Nothing stored here is plaintext PHI: patients are addressed by HMAC, records are sealed,
mark keys are HMACs and mark values AES-SIV ciphertexts, pseudonyms are stored as HMACs.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from keystore import auditdb
from keystore.audit import AuditAnchor, AuditKeys, AuditLine
from keystore.envelope import Sealed

ROOT_NAME = "root"
MARKS_PER_QUERY = 500  # keys per SELECT ... IN (...) (SQLite's variable limit is >= 999)


@dataclass(frozen=True)
class Row:
    """One sealed patient record as stored."""

    lookup: bytes
    key_id: str
    wrapped_key: bytes
    nonce: bytes
    ciphertext: bytes
    record_schema: int
    revision: int

    @classmethod
    def of(cls, lookup: bytes, sealed: Sealed, revision: int) -> Row:
        return cls(
            lookup,
            sealed.key_id,
            sealed.wrapped_key,
            sealed.nonce,
            sealed.ciphertext,
            sealed.envelope,
            revision,
        )

    def inserted_at(self, now: float) -> tuple[object, ...]:
        """The values of an INSERT into ``patients``: the row, created and updated ``now``."""
        return (
            self.lookup,
            self.key_id,
            self.wrapped_key,
            self.nonce,
            self.ciphertext,
            self.record_schema,
            self.revision,
            now,
            now,
        )

    def sealed(self) -> Sealed:
        return Sealed(
            self.key_id, self.wrapped_key, self.nonce, self.ciphertext, self.record_schema
        )


@dataclass(frozen=True)
class Dialect:
    blob: str
    real: str
    bigint: str
    serial: str
    placeholder: str


# Versioned migrations: (version, statements). Append only; never edit a shipped one.
MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            "CREATE TABLE store_keys (name TEXT PRIMARY KEY, key_id TEXT NOT NULL,"
            " wrapped {blob} NOT NULL, created_at {real} NOT NULL, updated_at {real} NOT NULL)",
            "CREATE TABLE patients (lookup {blob} PRIMARY KEY, key_id TEXT NOT NULL,"
            " wrapped_key {blob} NOT NULL, nonce {blob} NOT NULL, ciphertext {blob} NOT NULL,"
            " record_schema INTEGER NOT NULL, revision {bigint} NOT NULL,"
            " created_at {real} NOT NULL, updated_at {real} NOT NULL)",
            "CREATE INDEX patients_key_id ON patients (key_id)",
            "CREATE TABLE marks (key_hash {blob} PRIMARY KEY, value {blob} NOT NULL,"
            " updated_at {real} NOT NULL)",
            "CREATE TABLE pseudonyms (pseudonym_hash {blob} PRIMARY KEY, lookup {blob},"
            " created_at {real} NOT NULL, forgotten_at {real})",
            "CREATE INDEX pseudonyms_lookup ON pseudonyms (lookup)",
            "CREATE TABLE audit (id {serial}, at {real} NOT NULL, action TEXT NOT NULL,"
            " operator TEXT NOT NULL, reason TEXT NOT NULL, subject TEXT NOT NULL,"
            " outcome TEXT NOT NULL)",
            "@append_only_audit",
        ],
    ),
    (
        # marks that may be deleted once a time has passed (a dead letter's "sent" mark:
        # kept as long as a replay of its input can happen, not for good); NULL = kept
        2,
        [
            "ALTER TABLE marks ADD COLUMN expires_at {real}",
            "CREATE INDEX marks_expires_at ON marks (expires_at)",
        ],
    ),
    (
        # which master keys may wrap (registered, not retired), which were retired, and
        # which instances seal with which key (heartbeat): retiring a key is refused while a
        # live instance or any record (or the store root) still uses it
        3,
        [
            "CREATE TABLE master_keys (key_id TEXT PRIMARY KEY, added_at {real} NOT NULL)",
            "CREATE TABLE retired_keys (key_id TEXT PRIMARY KEY, retired_at {real} NOT NULL,"
            " operator TEXT NOT NULL)",
            "CREATE TABLE instances (instance_id TEXT PRIMARY KEY, key_id TEXT NOT NULL,"
            " key_ids TEXT NOT NULL, started_at {real} NOT NULL, heartbeat_at {real} NOT NULL)",
            "INSERT INTO master_keys (key_id, added_at)"
            " SELECT key_id, 0 FROM patients UNION SELECT key_id, 0 FROM store_keys",
            "@key_guard",
        ],
    ),
    (
        # the audit log as a hash chain (keystore/audit.py): a number and a mac per line;
        # older lines keep NULL in both and are covered by the first chained line; on
        # PostgreSQL a trigger refuses TRUNCATE (rules cannot)
        4,
        [
            "ALTER TABLE audit ADD COLUMN seq {bigint}",
            "ALTER TABLE audit ADD COLUMN mac {blob}",
            "CREATE UNIQUE INDEX audit_seq ON audit (seq)",
            "@audit_guard",
        ],
    ),
    (
        # the review queue (keystore/reviewdb.py): created here, not on first use, so a
        # DML-only service role can use it; IF NOT EXISTS because earlier releases created
        # the tables on first use. Its sealed blobs are re-wrapped by `keys rotate` and
        # guarded like patient records: a key they are wrapped under cannot be retired
        5,
        [
            "CREATE TABLE IF NOT EXISTS review_items (seq {serial}, id TEXT NOT NULL UNIQUE,"
            " doc_id TEXT NOT NULL, patient_ref TEXT NOT NULL, text_ref TEXT NOT NULL,"
            " kind TEXT NOT NULL, status TEXT NOT NULL, created_at {real} NOT NULL,"
            " key_id TEXT NOT NULL, wrapped_key {blob} NOT NULL, nonce {blob} NOT NULL,"
            " ciphertext {blob} NOT NULL, envelope INTEGER NOT NULL)",
            "CREATE INDEX IF NOT EXISTS review_items_status ON review_items (status, seq)",
            "CREATE INDEX IF NOT EXISTS review_items_doc ON review_items (doc_id)",
            "CREATE INDEX IF NOT EXISTS review_items_text ON review_items (text_ref, status)",
            "CREATE INDEX IF NOT EXISTS review_items_key_id ON review_items (key_id)",
            "CREATE TABLE IF NOT EXISTS review_docs (doc_id TEXT PRIMARY KEY,"
            " coordinates TEXT NOT NULL, reason_class TEXT NOT NULL, reason TEXT NOT NULL,"
            " status TEXT NOT NULL, created_at {real} NOT NULL, released_at {real})",
            "CREATE TABLE IF NOT EXISTS review_decisions (id {serial}, item_id TEXT NOT NULL,"
            " reviewer TEXT NOT NULL, role TEXT NOT NULL, kind TEXT NOT NULL,"
            " category TEXT NOT NULL, scope TEXT NOT NULL, at {real} NOT NULL,"
            " undone INTEGER NOT NULL DEFAULT 0)",
            "CREATE INDEX IF NOT EXISTS review_decisions_item ON review_decisions (item_id)",
            "CREATE TABLE IF NOT EXISTS review_lists (entry TEXT PRIMARY KEY, list TEXT NOT NULL,"
            " scope TEXT NOT NULL, patient_ref TEXT NOT NULL, category TEXT NOT NULL,"
            " created_at {real} NOT NULL, key_id TEXT NOT NULL, wrapped_key {blob} NOT NULL,"
            " nonce {blob} NOT NULL, ciphertext {blob} NOT NULL, envelope INTEGER NOT NULL)",
            "CREATE INDEX IF NOT EXISTS review_lists_key_id ON review_lists (key_id)",
            "CREATE TABLE IF NOT EXISTS review_accounts (username TEXT PRIMARY KEY,"
            " role TEXT NOT NULL, password_hash TEXT NOT NULL, created_at {real} NOT NULL)",
            "@review_key_guard",
        ],
    ),
    (
        # the audit log's sealed head anchor (keystore/auditdb.py): a cut tail is found
        # without the operator keeping anything
        6,
        [auditdb.ANCHOR_TABLE],
    ),
    (
        # whose version marks (keystore/forgetting.py): a keyed tag of the patient's seed
        # per mark key hash, so `keys forget` deletes the patient's marks; and the review
        # items of a patient found by index, not by a scan of the queue
        7,
        [
            "CREATE TABLE mark_owners (key_hash {blob} PRIMARY KEY, owner TEXT NOT NULL)",
            "CREATE INDEX mark_owners_owner ON mark_owners (owner)",
            "CREATE INDEX review_items_patient ON review_items (patient_ref)",
        ],
    ),
]
# The review tables migration 5 guards (``@review_key_guard``). A migration is frozen: its
# statements must not change with later code, so a sealed table added later needs a new
# migration with its own guard (tests/review/test_rotation.py checks every one is guarded).
REVIEW_GUARDED_AT_5 = ("review_items", "review_lists")
# the tables holding blobs sealed under a master key besides ``patients`` (key_id column)
REVIEW_SEALED_TABLES = REVIEW_GUARDED_AT_5
SCHEMA_VERSION = MIGRATIONS[-1][0]


class SqlBackend(ABC):
    """Storage primitives for :class:`keystore.store.EncryptedStore`."""

    dialect: Dialect
    name: str

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._in_group = False  # a group() transaction is open (on the thread holding _lock)

    # -- what a concrete backend provides -------------------------------------------------
    @abstractmethod
    def _transaction(self, write: bool = True) -> AbstractContextManager[Any]:
        """A cursor inside one transaction (lock held); ``write=False``: a plain read."""

    @abstractmethod
    def _append_only_audit(self) -> list[str]:
        """Statements that make the audit table refuse UPDATE and DELETE."""

    @abstractmethod
    def _begin_migration(self, cur: Any) -> None:
        """Serialize concurrent migrations (called first inside the migration transaction)."""

    @abstractmethod
    def _key_guard(self) -> list[str]:
        """Statements that refuse a record or root wrapped under a key not in
        ``master_keys``, and the deletion of a key that something is still wrapped under."""

    @abstractmethod
    def _review_key_guard(self) -> list[str]:
        """The key guard for the review queue's sealed blobs (as :meth:`_key_guard`)."""

    def grant_service(self, role: str) -> list[str]:
        """Grant a DML-only service role its privileges (PostgreSQL); here: none to grant."""
        from keystore.errors import KeystoreError

        raise KeystoreError("only a PostgreSQL key store has roles to grant", backend=self.name)

    def _create_namespace(self, cur: Any) -> None:
        """Create the schema the tables live in, if the backend has one (migrations only)."""
        return None

    @abstractmethod
    def close(self) -> None: ...

    @contextmanager
    def group(self) -> Iterator[None]:
        """Every statement made inside, on this thread, in ONE transaction: committed when the
        block ends, rolled back entirely when it raises (the lock is held throughout, so no
        other thread's statement joins it). Statements inside run without their own
        BEGIN/COMMIT; a group inside a group is part of the outer one."""
        with self._lock:
            if self._in_group:
                yield
                return
            with self._group_transaction():
                self._in_group = True
                try:
                    yield
                finally:
                    self._in_group = False

    def _group_transaction(self) -> AbstractContextManager[Any]:
        """The transaction a group() runs in. Default: an ordinary one; a backend whose
        transactions cost round trips may send its statements differently."""
        return self._transaction()

    def _single_write(self) -> AbstractContextManager[Any]:
        """A cursor for one write statement that is atomic on its own (a conditional UPDATE,
        an INSERT ... ON CONFLICT DO NOTHING). Default: a transaction; a backend whose
        transactions cost round trips may run it in autocommit instead."""
        return self._transaction()

    # -- helpers --------------------------------------------------------------------------
    def _sql(self, text: str) -> str:
        d = self.dialect
        text = text.format(blob=d.blob, real=d.real, bigint=d.bigint, serial=d.serial)
        return text.replace("?", d.placeholder) if d.placeholder != "?" else text

    def _exec(self, cur: Any, text: str, params: Sequence[Any] = ()) -> Any:
        cur.execute(self._sql(text), tuple(params))
        return cur

    # -- schema ---------------------------------------------------------------------------
    def migrate(self, now: float) -> int:
        """Apply every migration newer than the stored schema version; return the version.
        A store already current is only read (no DDL, no lock): a role without DDL rights
        may call this. Needs the tables' owner (and, on PostgreSQL, the schema's) otherwise."""
        current = self.schema_version()
        if current == SCHEMA_VERSION:
            return current
        self._newer_check(current)
        with self._transaction() as cur:
            self._begin_migration(cur)
            self._create_namespace(cur)
            self._exec(
                cur,
                "CREATE TABLE IF NOT EXISTS schema_version"
                " (version INTEGER PRIMARY KEY, applied_at {real} NOT NULL)",
            )
            current = self._exec(cur, "SELECT MAX(version) FROM schema_version").fetchone()[0]
            current = int(current or 0)
            self._newer_check(current)
            for version, statements in MIGRATIONS:
                if version <= current:
                    continue
                for statement in statements:
                    for text in self._expand(statement):
                        self._exec(cur, text)
                self._exec(
                    cur,
                    "INSERT INTO schema_version (version, applied_at) VALUES (?, ?)",
                    (version, now),
                )
                current = version
        return current

    def _expand(self, statement: str) -> list[str]:
        if statement == "@append_only_audit":
            return self._append_only_audit()
        if statement == "@key_guard":
            return self._key_guard()
        if statement == "@audit_guard":
            return self._audit_guard()
        if statement == "@review_key_guard":
            return self._review_key_guard()
        return [statement]

    def _audit_guard(self) -> list[str]:
        """Statements that further protect the audit table (none by default)."""
        return []

    def _lock_audit(self, cur: Any) -> None:
        """Serialize audit appends (inside their transaction). Default: the transaction
        itself is exclusive (SQLite's BEGIN IMMEDIATE)."""
        return None

    @staticmethod
    def _newer_check(current: int) -> None:
        if current > SCHEMA_VERSION:
            from keystore.errors import KeystoreError

            raise KeystoreError(
                "store schema is newer than this program",
                store_version=current,
                program_version=SCHEMA_VERSION,
            )

    def check_schema(self) -> int:
        """The stored schema version, if it is this program's; a ``KeystoreSchemaFault``
        (retriable: an operator runs ``deidstream keys migrate``) if it is older or absent."""
        from keystore.errors import KeystoreSchemaFault

        current = self.schema_version()
        self._newer_check(current)
        if current < SCHEMA_VERSION:
            raise KeystoreSchemaFault(
                "key store schema is not migrated: run `deidstream keys "
                "migrate` with an owner role",
                store_version=current,
                program_version=SCHEMA_VERSION,
            )
        return current

    def schema_version(self) -> int:
        """The stored schema version; 0 where there is no schema (or table) yet."""
        from keystore.errors import KeystoreSchemaFault

        try:
            with self._transaction(write=False) as cur:
                value = self._exec(cur, "SELECT MAX(version) FROM schema_version").fetchone()[0]
        except KeystoreSchemaFault:
            return 0
        return int(value or 0)

    # -- master keys and instances ---------------------------------------------------------
    def register_key(self, cur: Any, key_id: str, now: float) -> None:
        """Let ``key_id`` wrap (inside a transaction holding the migration lock): refused
        with ``KeyRetiredError`` if it was retired."""
        from keystore.errors import KeyRetiredError

        if (
            self._exec(cur, "SELECT 1 FROM retired_keys WHERE key_id = ?", (key_id,)).fetchone()
            is not None
        ):
            raise KeyRetiredError(
                "this master key was retired: configure the new key first", key_id=key_id
            )
        self._exec(
            cur,
            "INSERT INTO master_keys (key_id, added_at) VALUES (?, ?)"
            " ON CONFLICT (key_id) DO NOTHING",
            (key_id, now),
        )

    def register_instance(
        self, instance_id: str, key_id: str, key_ids: Sequence[str], now: float
    ) -> None:
        """Record that this instance seals with ``key_id`` (and can read ``key_ids``)."""
        with self._transaction() as cur:
            self._begin_migration(cur)  # serialized with retire_key
            self.register_key(cur, key_id, now)
            self._exec(
                cur,
                "INSERT INTO instances (instance_id, key_id, key_ids, started_at,"
                " heartbeat_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (instance_id)"
                " DO UPDATE SET key_id = excluded.key_id, key_ids = excluded.key_ids,"
                " heartbeat_at = excluded.heartbeat_at",
                (instance_id, key_id, ",".join(key_ids), now, now),
            )

    def heartbeat(self, instance_id: str, key_id: str, now: float) -> bool:
        """Refresh this instance's heartbeat; False if its row is gone or its key is no
        longer registered (retired): the caller registers again, which then refuses."""
        with self._transaction() as cur:
            self._exec(
                cur,
                "UPDATE instances SET heartbeat_at = ? WHERE instance_id = ? AND key_id = ?",
                (now, instance_id, key_id),
            )
            if cur.rowcount != 1:
                return False
            return (
                self._exec(cur, "SELECT 1 FROM master_keys WHERE key_id = ?", (key_id,)).fetchone()
                is not None
            )

    def deregister_instance(self, instance_id: str) -> None:
        with self._transaction() as cur:
            self._exec(cur, "DELETE FROM instances WHERE instance_id = ?", (instance_id,))

    def retire_key(
        self, key_id: str, now: float, live_since: float, instance_id: str, operator: str
    ) -> None:
        """Retire ``key_id`` — from now on nothing can be wrapped under it — unless an
        instance (other than ``instance_id``) sealing with it has a heartbeat at or after
        ``live_since``, or a record or the store root is wrapped under it (``RetireRefused``,
        nothing changed). The deletion of the registered key is guarded by the database as
        well (foreign keys / triggers), so a record written meanwhile also refuses it."""
        from keystore.errors import KeyRetiredError, RetireRefused

        try:
            with self._transaction() as cur:
                self._begin_migration(cur)
                live = int(
                    self._exec(
                        cur,
                        "SELECT COUNT(*) FROM instances WHERE key_id = ?"
                        " AND heartbeat_at >= ? AND instance_id <> ?",
                        (key_id, live_since, instance_id),
                    ).fetchone()[0]
                )
                if live:
                    raise RetireRefused(
                        "refused: live instances still seal with this key; restart them "
                        "with the new key first, then retire",
                        key_id=key_id,
                        live_instances=live,
                    )
                records = int(
                    self._exec(
                        cur, "SELECT COUNT(*) FROM patients WHERE key_id = ?", (key_id,)
                    ).fetchone()[0]
                )
                root = int(
                    self._exec(
                        cur, "SELECT COUNT(*) FROM store_keys WHERE key_id = ?", (key_id,)
                    ).fetchone()[0]
                )
                if records or root:
                    raise RetireRefused(
                        "refused: records are still wrapped under this key; run `keys "
                        "rotate` again (after every instance uses the new key)",
                        key_id=key_id,
                        records=records,
                        root=root,
                    )
                review = self._review_wrapped(cur, [key_id])
                if review:
                    raise RetireRefused(
                        "refused: review queue blobs are still wrapped under this key; run "
                        "`keys rotate` again",
                        key_id=key_id,
                        **review,
                    )
                self._exec(cur, "DELETE FROM instances WHERE key_id = ?", (key_id,))
                self._exec(
                    cur,
                    "INSERT INTO retired_keys (key_id, retired_at, operator)"
                    " VALUES (?, ?, ?) ON CONFLICT (key_id) DO NOTHING",
                    (key_id, now, operator),
                )
                self._exec(cur, "DELETE FROM master_keys WHERE key_id = ?", (key_id,))
        except KeyRetiredError:  # the guard: something was wrapped under it meanwhile
            raise RetireRefused(
                "refused: a record was wrapped under this key meanwhile; run `keys rotate` again",
                key_id=key_id,
            ) from None

    def _review_wrapped(self, cur: Any, key_ids: Sequence[str]) -> dict[str, int]:
        """How many review blobs each review table holds wrapped under any of ``key_ids``
        (tables with none left out)."""
        marks = ", ".join("?" * len(key_ids))
        found: dict[str, int] = {}
        for table in REVIEW_SEALED_TABLES:
            n = int(
                self._exec(
                    cur,
                    f"SELECT COUNT(*) FROM {table}"  # noqa: S608 - constant
                    f" WHERE key_id IN ({marks})",
                    key_ids,
                ).fetchone()[0]
            )
            if n:
                found[table] = n
        return found

    def review_wrapped(self, key_ids: Sequence[str]) -> dict[str, int]:
        """:meth:`_review_wrapped` in a read transaction (nothing when ``key_ids`` is empty)."""
        if not key_ids:
            return {}
        with self._transaction(write=False) as cur:
            return self._review_wrapped(cur, list(key_ids))

    def key_usage(self) -> dict[str, object]:
        """Registered and retired keys, and the instances with their key and heartbeat."""
        with self._transaction(write=False) as cur:
            active = [
                str(r[0])
                for r in self._exec(
                    cur, "SELECT key_id FROM master_keys ORDER BY key_id"
                ).fetchall()
            ]
            retired = [
                str(r[0])
                for r in self._exec(
                    cur, "SELECT key_id FROM retired_keys ORDER BY key_id"
                ).fetchall()
            ]
            instances = [
                {"instance": str(r[0]), "key_id": str(r[1]), "heartbeat_at": float(r[2])}
                for r in self._exec(
                    cur,
                    "SELECT instance_id, key_id, heartbeat_at FROM instances ORDER BY instance_id",
                )
            ]
        return {"active_keys": active, "retired_keys": retired, "instances": instances}

    # -- the store root key ---------------------------------------------------------------
    def get_root(self) -> tuple[str, bytes] | None:
        with self._transaction(write=False) as cur:
            row = self._exec(
                cur, "SELECT key_id, wrapped FROM store_keys WHERE name = ?", (ROOT_NAME,)
            ).fetchone()
        return (str(row[0]), bytes(row[1])) if row else None

    def insert_root(self, key_id: str, wrapped: bytes, now: float) -> bool:
        with self._transaction() as cur:
            self._exec(
                cur,
                "INSERT INTO store_keys (name, key_id, wrapped, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING",
                (ROOT_NAME, key_id, wrapped, now, now),
            )
            return bool(cur.rowcount == 1)

    def replace_root(self, key_id: str, wrapped: bytes, old_wrapped: bytes, now: float) -> bool:
        with self._transaction() as cur:
            self._exec(
                cur,
                "UPDATE store_keys SET key_id = ?, wrapped = ?, updated_at = ?"
                " WHERE name = ? AND wrapped = ?",
                (key_id, wrapped, now, ROOT_NAME, old_wrapped),
            )
            return bool(cur.rowcount == 1)

    # -- patient records ------------------------------------------------------------------
    @staticmethod
    def _row(raw: Sequence[Any]) -> Row:
        return Row(
            bytes(raw[0]),
            str(raw[1]),
            bytes(raw[2]),
            bytes(raw[3]),
            bytes(raw[4]),
            int(raw[5]),
            int(raw[6]),
        )

    def fetch(self, lookup: bytes) -> Row | None:
        with self._transaction(write=False) as cur:
            raw = self._exec(
                cur,
                "SELECT lookup, key_id, wrapped_key, nonce, ciphertext, record_schema, revision"
                " FROM patients WHERE lookup = ?",
                (lookup,),
            ).fetchone()
        return self._row(raw) if raw else None

    def fetch_many(self, lookups: Sequence[bytes]) -> dict[bytes, Row]:
        """Several records by lookup hash (absent ones left out), few statements."""
        unique = list(dict.fromkeys(lookups))
        found: dict[bytes, Row] = {}
        with self._transaction(write=False) as cur:
            for start in range(0, len(unique), MARKS_PER_QUERY):
                chunk = unique[start : start + MARKS_PER_QUERY]
                marks = ", ".join("?" * len(chunk))  # placeholders only: no value in the SQL
                query = (
                    "SELECT lookup, key_id, wrapped_key, nonce, ciphertext, record_schema,"  # noqa: S608
                    f" revision FROM patients WHERE lookup IN ({marks})"
                )
                for raw in self._exec(cur, query, chunk).fetchall():
                    row = self._row(raw)
                    found[row.lookup] = row
        return found

    def insert(self, row: Row, pseudonym_hash: bytes | None, now: float) -> bool:
        """Insert a new record unless one exists (first writer wins); index its pseudonym."""
        with self._transaction() as cur:
            self._exec(
                cur,
                "INSERT INTO patients (lookup, key_id, wrapped_key, nonce, ciphertext, record_schema, revision,"
                " created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (lookup) DO NOTHING",
                row.inserted_at(now),
            )
            inserted = bool(cur.rowcount == 1)
            if inserted and pseudonym_hash is not None:
                self._index(cur, pseudonym_hash, row.lookup, now)
        return inserted

    def _index(self, cur: Any, pseudonym_hash: bytes, lookup: bytes, now: float) -> None:
        self._exec(
            cur,
            "INSERT INTO pseudonyms (pseudonym_hash, lookup, created_at)"
            " VALUES (?, ?, ?) ON CONFLICT (pseudonym_hash) DO NOTHING",
            (pseudonym_hash, lookup, now),
        )

    def index_pseudonym(self, pseudonym_hash: bytes, lookup: bytes, now: float) -> None:
        with self._transaction() as cur:
            self._index(cur, pseudonym_hash, lookup, now)

    def update_many(self, rows: Sequence[tuple[Row, int]], now: float) -> list[bool]:
        """Write new revisions in one transaction; each only if its revision is unchanged."""
        results: list[bool] = []
        with self._transaction() as cur:
            for row, expected in rows:
                self._exec(
                    cur,
                    "UPDATE patients SET key_id = ?, wrapped_key = ?, nonce = ?,"
                    " ciphertext = ?, record_schema = ?, revision = ?, updated_at = ?"
                    " WHERE lookup = ? AND revision = ?",
                    (
                        row.key_id,
                        row.wrapped_key,
                        row.nonce,
                        row.ciphertext,
                        row.record_schema,
                        row.revision,
                        now,
                        row.lookup,
                        expected,
                    ),
                )
                results.append(cur.rowcount == 1)
        return results

    def rewrap(self, lookup: bytes, key_id: str, wrapped: bytes, old_wrapped: bytes) -> bool:
        """Swap in a re-wrapped data key unless the record changed meanwhile."""
        with self._transaction() as cur:
            self._exec(
                cur,
                "UPDATE patients SET key_id = ?, wrapped_key = ?"
                " WHERE lookup = ? AND wrapped_key = ?",
                (key_id, wrapped, lookup, old_wrapped),
            )
            return bool(cur.rowcount == 1)

    def iter_rows(self, batch: int = 500) -> Iterator[list[Row]]:
        """All records in lookup order, ``batch`` at a time (keyset pagination)."""
        last = b""
        while True:
            with self._transaction(write=False) as cur:
                raws = self._exec(
                    cur,
                    "SELECT lookup, key_id, wrapped_key, nonce, ciphertext, record_schema, revision"
                    " FROM patients"
                    " WHERE lookup > ? ORDER BY lookup LIMIT ?",
                    (last, batch),
                ).fetchall()
            if not raws:
                return
            rows = [self._row(r) for r in raws]
            last = rows[-1].lookup
            yield rows

    def delete(self, lookup: bytes, now: float) -> bool:
        """Crypto-shred: drop the sealed record and unlink its pseudonyms."""
        with self._transaction() as cur:
            self._exec(cur, "DELETE FROM patients WHERE lookup = ?", (lookup,))
            deleted = bool(cur.rowcount == 1)
            self._exec(
                cur,
                "UPDATE pseudonyms SET lookup = NULL, forgotten_at = ? WHERE lookup = ?",
                (now, lookup),
            )
        return deleted

    def scrub(self) -> bool | None:
        """Remove what deleted records left in the database's own files, where the engine
        allows it: True done, False could not complete now, None not possible (PostgreSQL:
        dead tuples until VACUUM, and the WAL and backups keep them regardless)."""
        return None

    def last_audit_at(self, action: str) -> float | None:
        """The time of the latest audit line of ``action`` (None: there is none)."""
        with self._transaction(write=False) as cur:
            raw = self._exec(
                cur, "SELECT MAX(at) FROM audit WHERE action = ?", (action,)
            ).fetchone()
        return None if raw is None or raw[0] is None else float(raw[0])

    def audit_count(self, action: str, outcome: str, after: float | None) -> int:
        """Audit lines of ``action`` with ``outcome`` written after ``after`` (None: all)."""
        with self._transaction(write=False) as cur:
            raw = self._exec(
                cur,
                "SELECT COUNT(*) FROM audit WHERE action = ? AND outcome = ? AND at > ?",
                (action, outcome, float("-inf") if after is None else after),
            ).fetchone()
        return int(raw[0])

    def pseudonym_target(self, pseudonym_hash: bytes) -> tuple[bytes | None, bool] | None:
        """(lookup, forgotten) for an indexed pseudonym, or None if never indexed."""
        with self._transaction(write=False) as cur:
            raw = self._exec(
                cur,
                "SELECT lookup, forgotten_at FROM pseudonyms WHERE pseudonym_hash = ?",
                (pseudonym_hash,),
            ).fetchone()
        if raw is None:
            return None
        return (bytes(raw[0]) if raw[0] is not None else None, raw[1] is not None)

    # -- marks ----------------------------------------------------------------------------
    def get_mark(self, key_hash: bytes) -> bytes | None:
        with self._transaction(write=False) as cur:
            raw = self._exec(
                cur, "SELECT value FROM marks WHERE key_hash = ?", (key_hash,)
            ).fetchone()
        return bytes(raw[0]) if raw else None

    def get_marks(self, key_hashes: Sequence[bytes]) -> dict[bytes, bytes]:
        """The stored marks of several keys (absent keys are left out), in as few statements
        as the placeholder limit allows."""
        unique = list(dict.fromkeys(key_hashes))
        found: dict[bytes, bytes] = {}
        if not unique:
            return found
        with self._transaction(write=False) as cur:
            for start in range(0, len(unique), MARKS_PER_QUERY):
                chunk = unique[start : start + MARKS_PER_QUERY]
                marks = ", ".join("?" * len(chunk))  # placeholders only: no value in the SQL
                query = f"SELECT key_hash, value FROM marks WHERE key_hash IN ({marks})"  # noqa: S608
                rows = self._exec(cur, query, chunk).fetchall()
                found.update((bytes(k), bytes(v)) for k, v in rows)
        return found

    def cas_mark(self, key_hash: bytes, expected: bytes | None, value: bytes, now: float) -> bool:
        with self._single_write() as cur:
            return self._cas(cur, key_hash, expected, value, now)

    def cas_marks(
        self,
        items: Sequence[tuple[bytes, bytes | None, bytes]],
        now: float,
        expires_at: float | None = None,
    ) -> list[bool]:
        """Several compare-and-sets in one transaction, in order, each decided on its own
        (one commit instead of one per mark: acknowledging a batch of outputs). The marks
        written get ``expires_at`` (None: kept until deleted)."""
        if not items:
            return []
        with self._transaction() as cur:
            return [
                self._cas(cur, key_hash, expected, value, now, expires_at)
                for key_hash, expected, value in items
            ]

    def _cas(
        self,
        cur: Any,
        key_hash: bytes,
        expected: bytes | None,
        value: bytes,
        now: float,
        expires_at: float | None = None,
    ) -> bool:
        if expected is None:
            self._exec(
                cur,
                "INSERT INTO marks (key_hash, value, updated_at, expires_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (key_hash) DO NOTHING",
                (key_hash, value, now, expires_at),
            )
        else:
            self._exec(
                cur,
                "UPDATE marks SET value = ?, updated_at = ?, expires_at = ?"
                " WHERE key_hash = ? AND value = ?",
                (value, now, expires_at, key_hash, expected),
            )
        return bool(cur.rowcount == 1)

    def prune_marks(self, now: float, limit: int) -> int:
        """Delete at most ``limit`` marks whose ``expires_at`` has passed; how many went.
        Bounded, so one call never holds the write lock for long on a large backlog."""
        with self._transaction() as cur:
            self._exec(
                cur,
                "DELETE FROM marks WHERE key_hash IN (SELECT key_hash FROM marks"
                " WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT ?)",
                (now, limit),
            )
            return max(int(cur.rowcount), 0)

    # -- audit and counts -----------------------------------------------------------------
    def append_audit(self, line: AuditLine, keys: AuditKeys, now: float = 0.0) -> AuditLine:
        """Append ``line`` as the next link of the chain (keystore/auditdb.py)."""
        return auditdb.append(self, line, keys, now or line.at)

    def audit_lines(self) -> list[AuditLine]:
        """Every audit line in insertion order, with its seq and mac."""
        with self._transaction(write=False) as cur:
            return auditdb.lines(self, cur)

    def audit_anchor(self) -> AuditAnchor | None:
        """The sealed head anchor as stored (None: there is none)."""
        with self._transaction(write=False) as cur:
            return auditdb.read_anchor(self, cur)

    def audit_rows(self) -> list[tuple[float, str, str, str, str, str]]:
        with self._transaction(write=False) as cur:
            raws = self._exec(
                cur, "SELECT at, action, operator, reason, subject, outcome FROM audit ORDER BY id"
            ).fetchall()
        return [(float(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5])) for r in raws]

    def counts(self) -> dict[str, object]:
        with self._transaction(write=False) as cur:

            def one(sql: str) -> int:
                return int(self._exec(cur, sql).fetchone()[0])

            by_key = {
                str(k): int(n)
                for k, n in self._exec(
                    cur, "SELECT key_id, COUNT(*) FROM patients GROUP BY key_id"
                ).fetchall()
            }
            return {
                "patients": one("SELECT COUNT(*) FROM patients"),
                "marks": one("SELECT COUNT(*) FROM marks"),
                "expiring_marks": one("SELECT COUNT(*) FROM marks WHERE expires_at IS NOT NULL"),
                "pseudonyms": one("SELECT COUNT(*) FROM pseudonyms WHERE lookup IS NOT NULL"),
                "forgotten": one("SELECT COUNT(*) FROM pseudonyms WHERE forgotten_at IS NOT NULL"),
                "audit_entries": one("SELECT COUNT(*) FROM audit"),
                "records_by_key": by_key,
            }
