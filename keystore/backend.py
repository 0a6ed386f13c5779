"""The SQL both backends share: the statements on patient records, the store root, marks,
the audit log and the schema version.

Backends differ only in connection handling, transactions, placeholder style and column
types; the SQL is written once with ``?`` placeholders and ``{blob}``-style type slots.
The tables and migrations are in :mod:`keystore.schema`, the transaction primitives in
:mod:`keystore.sqlbase`, the master keys and instances in :mod:`keystore.masterkeys`; their
names are importable from here as before. Nothing stored here is plaintext PHI: patients are
addressed by HMAC, records are sealed, mark keys are HMACs and mark values AES-SIV
ciphertexts, pseudonyms are stored as HMACs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from keystore import auditdb
from keystore.audit import AuditAnchor, AuditKeys, AuditLine
from keystore.masterkeys import MasterKeys
from keystore.schema import (
    MIGRATIONS,
    REVIEW_GUARDED_AT_5,
    REVIEW_SEALED_TABLES,
    SCHEMA_VERSION,
    Dialect,
    Row,
)
from keystore.sqlbase import SqlBase

__all__ = [
    "MARKS_PER_QUERY",
    "MIGRATIONS",
    "REVIEW_GUARDED_AT_5",
    "REVIEW_SEALED_TABLES",
    "ROOT_NAME",
    "SCHEMA_VERSION",
    "Dialect",
    "MasterKeys",
    "Row",
    "SqlBackend",
    "SqlBase",
]

ROOT_NAME = "root"
MARKS_PER_QUERY = 500  # keys per SELECT ... IN (...) (SQLite's variable limit is >= 999)


class SqlBackend(MasterKeys):
    """Storage primitives for :class:`keystore.store.EncryptedStore`."""

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
