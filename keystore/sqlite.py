"""SQLite backend: the default, one file, WAL mode so readers never block the writer."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from keystore.backend import Dialect, SqlBackend
from keystore.errors import KeystoreError, KeystoreUnavailable

SQLITE = Dialect(blob="BLOB", real="REAL", bigint="INTEGER",
                 serial="INTEGER PRIMARY KEY AUTOINCREMENT", placeholder="?")


class SqliteBackend(SqlBackend):
    dialect = SQLITE
    name = "sqlite"

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 10.0) -> None:
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
                self.path, timeout=busy_timeout_s, isolation_level=None,
                check_same_thread=False,
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            # deleted and overwritten content is zeroed in the file, not left in free space
            self._conn.execute("PRAGMA secure_delete=ON")
        except sqlite3.OperationalError as exc:
            raise KeystoreUnavailable("cannot open the SQLite key store",
                                      error=type(exc).__name__) from None
        except sqlite3.DatabaseError as exc:
            raise KeystoreError("the SQLite key store file is not a usable database",
                                error=type(exc).__name__) from None

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
            except sqlite3.OperationalError as exc:
                # "database is locked", disk I/O errors: another try may succeed.
                # The message may quote stored bytes: report only SQLite's error name.
                raise KeystoreUnavailable("SQLite key store operation failed",
                                          error=getattr(exc, "sqlite_errorname",
                                                        type(exc).__name__)) from None
            except sqlite3.DatabaseError as exc:
                raise KeystoreError("SQLite key store statement failed",
                                    error=getattr(exc, "sqlite_errorname",
                                                  type(exc).__name__)) from None
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

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
