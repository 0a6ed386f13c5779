"""SQLite backend: the default, one file, WAL mode so readers never block the writer."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from keystore.backend import REVIEW_GUARDED_AT_5, Dialect, SqlBackend
from keystore.errors import FaultKind, KeyRetiredError, KeystoreError, KeystoreUnavailable, fault

SQLITE = Dialect(
    blob="BLOB",
    real="REAL",
    bigint="INTEGER",
    serial="INTEGER PRIMARY KEY AUTOINCREMENT",
    placeholder="?",
)
# sqlite3 binds an int, float, str or bytearray as it is, but any other value only after its
# adapter registry, the protocol's ``__adapt__`` and the value's ``__conform__`` were asked
# (two failed attribute look-ups, each formatting an AttributeError message): for every bytes
# and None parameter of every statement (lookup hashes, sealed blobs, NULLs). Identity
# adapters answer at the first step, and the very same value is bound (tests check it).
_NO_VALUE: dict[object, None] = {}
sqlite3.register_adapter(bytes, bytes)  # bytes(b) is b for a bytes object
sqlite3.register_adapter(type(None), _NO_VALUE.get)  # None for None
_GUARD = "deidstream: master key"  # our triggers' messages start with this (no data in them)
# SQLite result code names (extended codes start with the primary one) → why
_CODE_KINDS: tuple[tuple[str, FaultKind], ...] = (
    ("SQLITE_BUSY", FaultKind.CONTENTION),
    ("SQLITE_LOCKED", FaultKind.CONTENTION),
    ("SQLITE_READONLY", FaultKind.READ_ONLY),
    ("SQLITE_FULL", FaultKind.RESOURCES),
    ("SQLITE_NOMEM", FaultKind.RESOURCES),
    ("SQLITE_IOERR", FaultKind.RESOURCES),
    ("SQLITE_PERM", FaultKind.PERMISSION),
    ("SQLITE_AUTH", FaultKind.PERMISSION),
    ("SQLITE_CANTOPEN", FaultKind.PERMISSION),
    ("SQLITE_CORRUPT", FaultKind.CORRUPT),
    ("SQLITE_NOTADB", FaultKind.CORRUPT),
)


class SqliteBackend(SqlBackend):
    dialect = SQLITE
    name = "sqlite"

    # a write waits at most this long for another connection's lock, then fails (a fault of
    # the stream: retried with backoff, not ready), instead of holding the worker
    def __init__(self, path: str | Path, *, busy_timeout_s: float = 5.0) -> None:
        super().__init__()
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            if not Path(self.path).exists():
                # Sealed content only, but no reason to let other users read it either.
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves.
            self._conn: sqlite3.Connection | None = sqlite3.connect(
                self.path,
                timeout=busy_timeout_s,
                isolation_level=None,
                check_same_thread=False,
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            # deleted and overwritten content is zeroed in the file, not left in free space
            self._conn.execute("PRAGMA secure_delete=ON")
        except sqlite3.Error as exc:
            raise classify(exc) from None

    @contextmanager
    def _transaction(self, write: bool = True) -> Iterator[Any]:
        with self._lock:
            if self._conn is None:
                raise KeystoreUnavailable("the key store is closed")
            cur = self._conn.cursor()
            try:
                if not write or self._in_group:  # autocommit reads: never take the write
                    yield cur  # lock; inside a group(): part of its transaction
                    return
                cur.execute("BEGIN IMMEDIATE")
                try:
                    yield cur
                except BaseException:
                    cur.execute("ROLLBACK")
                    raise
                cur.execute("COMMIT")
            except sqlite3.Error as exc:
                if not self._in_group and self._conn.in_transaction:
                    with suppress(sqlite3.Error):  # e.g. a COMMIT that failed: not open
                        self._conn.execute("ROLLBACK")
                raise classify(exc) from None
            finally:
                cur.close()

    def _append_only_audit(self) -> list[str]:
        return [
            "CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit"
            " BEGIN SELECT RAISE(ABORT, 'audit is append-only'); END",
            "CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit"
            " BEGIN SELECT RAISE(ABORT, 'audit is append-only'); END",
        ]

    def scrub(self) -> bool | None:
        """Checkpoint the WAL into the (secure_delete) database file and truncate it to
        zero bytes: the pages that still held deleted records are gone from both files.
        False if readers kept the checkpoint from completing (the busy timeout passed)."""
        with self._transaction(write=False) as cur:
            if self._in_group:  # not inside a transaction: the next forget does it
                return False
            busy, _, _ = cur.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return not busy

    def _begin_migration(self, cur: Any) -> None:
        return None  # BEGIN IMMEDIATE already holds the write lock

    def _key_guard(self) -> list[str]:
        """Triggers (SQLite cannot add a foreign key to a table): writers are serialized by
        BEGIN IMMEDIATE, so the check and the write cannot interleave with a retirement."""
        return [
            *_key_active_triggers("patients"),
            *_key_active_triggers("store_keys"),
            _in_use_trigger(("patients", "store_keys")),
        ]

    def _review_key_guard(self) -> list[str]:
        """The same triggers on the review queue's sealed blobs; the guard on retiring a key
        is replaced by one that also counts them."""
        return [
            *(s for table in REVIEW_GUARDED_AT_5 for s in _key_active_triggers(table)),
            "DROP TRIGGER master_keys_in_use",
            _in_use_trigger(("patients", "store_keys", *REVIEW_GUARDED_AT_5)),
        ]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _key_active_triggers(table: str) -> list[str]:
    """Refuse a row of ``table`` inserted, or re-keyed, under a key not in ``master_keys``."""
    active = "NOT EXISTS (SELECT 1 FROM master_keys WHERE key_id = NEW.key_id)"
    refuse = f"BEGIN SELECT RAISE(ABORT, '{_GUARD} not active'); END"
    return [
        f"CREATE TRIGGER {table}_key_active BEFORE INSERT ON {table} WHEN {active} {refuse}",
        f"CREATE TRIGGER {table}_key_active_update BEFORE UPDATE OF key_id ON {table}"
        f" WHEN {active} {refuse}",
    ]


def _in_use_trigger(tables: tuple[str, ...]) -> str:
    """Refuse deleting (retiring) a master key any row of ``tables`` is wrapped under."""
    in_use = " OR ".join(
        f"EXISTS (SELECT 1 FROM {t} WHERE key_id = OLD.key_id)"  # noqa: S608 - our tables
        for t in tables
    )
    return (
        f"CREATE TRIGGER master_keys_in_use BEFORE DELETE ON master_keys WHEN {in_use}"
        f" BEGIN SELECT RAISE(ABORT, '{_GUARD} in use'); END"
    )


def classify(exc: sqlite3.Error) -> KeystoreError:
    """The key store error for a sqlite3 error: a fault of the stream (which kind, by
    SQLite's result code), or ``KeyRetiredError`` from our key guard triggers. Only SQLite's
    error name is kept: a message may quote stored bytes."""
    name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
    text = str(exc)
    if text.startswith(_GUARD):
        return KeyRetiredError(
            "refused to seal under a master key that is retired (or was "
            "never registered in this store)",
            error=name,
        )
    kind = next((k for prefix, k in _CODE_KINDS if name.startswith(prefix)), None)
    if kind is None:
        if text.startswith(("no such table", "no such column")):
            kind = FaultKind.SCHEMA
        else:
            kind = FaultKind.DATABASE
    return fault(kind, "SQLite key store operation failed", error=name)
