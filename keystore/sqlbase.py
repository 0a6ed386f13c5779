"""The base of the SQL key store backends: the primitives a concrete backend provides
(transactions, guards, the namespace), ``group()`` transactions, and running a statement
written with ``?`` placeholders and ``{blob}``-style type slots in the backend's dialect.

Split from :mod:`keystore.backend`; :class:`keystore.backend.SqlBackend` builds on it.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from keystore.schema import Dialect

_DIALECTED_KEPT = 1024  # statements kept translated (IN lists of every length included)


class SqlBase(ABC):
    """What every SQL backend rests on: the primitives a concrete backend provides, one
    transaction per group of statements, and running a statement in the dialect."""

    dialect: Dialect
    name: str

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._in_group = False  # a group() transaction is open (on the thread holding _lock)
        self._dialected: dict[str, str] = {}  # statement → its text in the dialect (_sql)

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
        """``text`` in the backend's dialect; each statement translated once (the same few
        statements run for every mark and record)."""
        found = self._dialected.get(text)
        if found is None:
            if len(self._dialected) >= _DIALECTED_KEPT:
                self._dialected.clear()
            found = self._dialected[text] = self._translate(text)
        return found

    def _translate(self, text: str) -> str:
        d = self.dialect
        text = text.format(blob=d.blob, real=d.real, bigint=d.bigint, serial=d.serial)
        return text.replace("?", d.placeholder) if d.placeholder != "?" else text

    def _exec(self, cur: Any, text: str, params: Sequence[Any] = ()) -> Any:
        cur.execute(self._sql(text), tuple(params))
        return cur

    def _exec_many(self, cur: Any, text: str, rows: Sequence[Sequence[Any]]) -> Any:
        """One statement run for each row of parameters (``executemany``: one call into the
        driver instead of one per row; no result is read)."""
        cur.executemany(self._sql(text), [tuple(r) for r in rows])
        return cur

    def _audit_guard(self) -> list[str]:
        """Statements that further protect the audit table (none by default)."""
        return []

    def _lock_audit(self, cur: Any) -> None:
        """Serialize audit appends (inside their transaction). Default: the transaction
        itself is exclusive (SQLite's BEGIN IMMEDIATE)."""
        return None
