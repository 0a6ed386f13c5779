"""PostgreSQL backend (psycopg 3) for several service instances sharing one state.

One connection per store object, serialized by a lock; a broken connection is reopened
on the next call. Every database error is classified by its SQLSTATE into a
:class:`keystore.errors.KeystoreFault` (retriable: permissions, missing schema or tables, a
read-only role, disk full, lock timeouts, a lost connection — never the record's fault), or
``KeyRetiredError`` when a write would seal under a retired master key. An optional
``schema`` keeps several stores (or test runs) apart in one database. Connecting never runs
DDL: the schema and tables are created by :meth:`migrate` (``deidstream keys migrate``),
under a role that owns them; the service may run with a DML-only role (docs/keystore.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any

import psycopg

from keystore.backend import REVIEW_GUARDED_AT_5, Dialect, Row, SqlBackend
from keystore.errors import (
    FaultKind,
    KeyRetiredError,
    KeystoreError,
    KeystoreFault,
    KeystoreUnavailable,
    fault,
)

POSTGRES = Dialect(
    blob="BYTEA",
    real="DOUBLE PRECISION",
    bigint="BIGINT",
    serial="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    placeholder="%s",
)
_SCHEMA_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_MIGRATION_LOCK = 0x6465_6964  # "deid": pg_advisory_xact_lock id for migrations
_AUDIT_LOCK = 0x6175_6474  # "audt": with the schema's hash, serializes audit appends
# SQLSTATE (or its two-character class) → why; the first match wins, exact codes first
_SQLSTATE_KINDS: dict[str, FaultKind] = {
    "42501": FaultKind.PERMISSION,  # insufficient_privilege
    "3F000": FaultKind.SCHEMA,  # invalid_schema_name
    "42P01": FaultKind.SCHEMA,  # undefined_table
    "42703": FaultKind.SCHEMA,  # undefined_column
    "42883": FaultKind.SCHEMA,  # undefined_function
    "25006": FaultKind.READ_ONLY,  # read_only_sql_transaction
    "55P03": FaultKind.CONTENTION,  # lock_not_available (lock_timeout)
    "57014": FaultKind.CONTENTION,  # query_canceled (statement_timeout)
    "55006": FaultKind.CONTENTION,  # object_in_use
    "57P01": FaultKind.CONNECTION,  # admin_shutdown
    "57P02": FaultKind.CONNECTION,  # crash_shutdown
    "57P03": FaultKind.CONNECTION,  # cannot_connect_now
    "XX001": FaultKind.CORRUPT,  # data_corrupted
    "XX002": FaultKind.CORRUPT,  # index_corrupted
    "08": FaultKind.CONNECTION,  # connection_exception
    "28": FaultKind.PERMISSION,  # invalid_authorization_specification
    "40": FaultKind.CONTENTION,  # transaction_rollback (deadlock, serialization)
    "53": FaultKind.RESOURCES,  # insufficient_resources (disk full, out of memory)
    "54": FaultKind.RESOURCES,  # program_limit_exceeded
}
# the constraints that keep records off retired master keys (migration 3)
KEY_GUARDS = (
    "patients_key_active",
    "store_keys_key_active",
    "review_items_key_active",
    "review_lists_key_active",
)
# Arrays of bytes go as binary parameters (%b): a text array of bytea is escaped element by
# element in Python (slow for a batch), binary is copied.
# Many mark compare-and-sets of distinct keys as ONE statement (autocommit: one round trip,
# one transaction, one commit). Each row is decided on its own exactly as the single-mark
# statements decide it: an absent key is inserted unless another writer got there first
# (ON CONFLICT DO NOTHING); a present one is updated only where its value still equals the
# expected one (under READ COMMITTED, the UPDATE re-checks that on the row it locked).
_CAS_MARKS = (
    "WITH input AS ("
    " SELECT * FROM unnest(%b::bytea[], %b::bytea[], %b::bytea[]) AS t(key_hash, expected, value)"
    "), inserted AS ("
    " INSERT INTO marks (key_hash, value, updated_at, expires_at)"
    " SELECT key_hash, value, %s, %s::double precision FROM input WHERE expected IS NULL"
    " ON CONFLICT (key_hash) DO NOTHING RETURNING key_hash"
    "), updated AS ("
    " UPDATE marks AS m SET value = input.value, updated_at = %s,"
    " expires_at = %s::double precision FROM input"
    " WHERE input.expected IS NOT NULL AND m.key_hash = input.key_hash"
    " AND m.value = input.expected RETURNING m.key_hash"
    ")"
    " SELECT key_hash FROM inserted UNION ALL SELECT key_hash FROM updated"
)
# A new patient record and its pseudonym index entry as ONE statement (one round trip
# instead of BEGIN, two INSERTs and COMMIT): the index entry only if the record was inserted.
_INSERT_INDEXED = (
    "WITH ins AS ("
    " INSERT INTO patients (lookup, key_id, wrapped_key, nonce, ciphertext, record_schema,"
    " revision, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (lookup) DO NOTHING RETURNING lookup"
    "), idx AS ("
    " INSERT INTO pseudonyms (pseudonym_hash, lookup, created_at)"
    " SELECT %s, lookup, %s FROM ins ON CONFLICT (pseudonym_hash) DO NOTHING"
    ")"
    " SELECT count(*) FROM ins"
)
# Several patient records' new revisions as ONE statement, each written only where its
# stored revision is still the expected one (the same check as the single UPDATE).
_UPDATE_MANY = (
    "UPDATE patients AS p SET key_id = i.key_id, wrapped_key = i.wrapped_key,"
    " nonce = i.nonce, ciphertext = i.ciphertext, record_schema = i.record_schema,"
    " revision = i.revision, updated_at = %s"
    " FROM unnest(%b::bytea[], %b::text[], %b::bytea[], %b::bytea[], %b::bytea[],"
    " %s::integer[], %s::bigint[], %s::bigint[])"
    " AS i(lookup, key_id, wrapped_key, nonce, ciphertext, record_schema, revision, expected)"
    " WHERE p.lookup = i.lookup AND p.revision = i.expected"
    " RETURNING p.lookup"
)


# Safe server-side timeouts for every connection, unless the store URL (its ``options``) or
# PGOPTIONS names them (issue 24, item 4): without them another session's LOCK TABLE, or a
# database that stops answering, held the worker forever with nothing to show for it. A
# statement that hits one fails with lock_not_available / query_canceled: a fault of the
# stream (retried with backoff, not ready, counted once), never the record's.
SAFE_TIMEOUTS = (
    ("lock_timeout", "5s"),
    ("statement_timeout", "30s"),
    ("idle_in_transaction_session_timeout", "60s"),
)
# TCP keepalives, unless the URL sets them: a peer that vanished is noticed in ~25 s
SAFE_KEEPALIVES = (
    ("keepalives", "1"),
    ("keepalives_idle", "10"),
    ("keepalives_interval", "5"),
    ("keepalives_count", "3"),
)


def safe_connect_options(conninfo: str) -> dict[str, Any]:
    """libpq keyword arguments adding :data:`SAFE_TIMEOUTS` and :data:`SAFE_KEEPALIVES` to
    ``conninfo`` where it does not set them itself (its own values win)."""
    params = psycopg.conninfo.conninfo_to_dict(conninfo)
    given = str(params.get("options") or os.environ.get("PGOPTIONS") or "")
    ours = " ".join(f"-c {name}={value}" for name, value in SAFE_TIMEOUTS if name not in given)
    out: dict[str, Any] = {key: value for key, value in SAFE_KEEPALIVES if key not in params}
    if ours:
        out["options"] = f"{ours} {given}".strip()  # later -c wins: the URL's own values
    return out


class PostgresBackend(SqlBackend):
    dialect = POSTGRES
    name = "postgresql"

    def __init__(
        self, conninfo: str, *, schema: str | None = None, connect_timeout_s: int = 5
    ) -> None:
        super().__init__()
        if schema is not None and not _SCHEMA_RE.match(schema):
            raise KeystoreError("invalid PostgreSQL schema name for the key store")
        self._conninfo = conninfo
        self._schema = schema
        self._timeout = connect_timeout_s
        self._conn: psycopg.Connection[Any] | None = None
        self._pipe: psycopg.Pipeline | None = None  # a group()'s pipeline, while open
        self._closed = False
        self._connect()

    def _connect(self) -> psycopg.Connection[Any]:
        """A new connection, its search path set to the schema — and nothing else: no DDL
        on a reconnect (a DML-only role must be able to connect, and a schema that is gone
        must show as a fault, not be created empty)."""
        if self._closed:
            raise KeystoreUnavailable("the key store is closed")
        try:
            conn = psycopg.connect(
                self._conninfo,
                autocommit=True,
                connect_timeout=self._timeout,
                **safe_connect_options(self._conninfo),
            )
        except psycopg.Error as exc:
            raise classify(exc, connecting=True) from None
        if self._schema:
            try:
                conn.execute(f'SET search_path TO "{self._schema}"')
            except psycopg.Error as exc:
                conn.close()
                raise classify(exc) from None
        self._conn = conn
        return conn

    @contextmanager
    def _transaction(self, write: bool = True) -> Iterator[Any]:
        with self._lock:
            conn = self._current()
            with self._mapped(conn):
                if write and not self._in_group:  # inside a group(): its transaction
                    with conn.transaction(), conn.cursor() as cur:
                        yield cur
                else:  # single autocommit statements: no BEGIN/COMMIT round trips
                    with conn.cursor() as cur:
                        yield cur

    def _current(self) -> psycopg.Connection[Any]:
        """The open connection, or a new one — never a new one inside a group()."""
        if self._in_group and (self._conn is None or self._conn.closed):
            # never run a group's statement on a new connection, outside its transaction
            raise KeystoreUnavailable("the PostgreSQL connection broke in a transaction")
        return self._conn if self._conn is not None and not self._conn.closed else self._connect()

    @contextmanager
    def _mapped(self, conn: psycopg.Connection[Any]) -> Iterator[None]:
        """psycopg errors as classified key store errors (:func:`classify`), carrying only
        the error class name and SQLSTATE; a broken connection is dropped."""
        try:
            yield
        except psycopg.Error as exc:
            if conn.broken or isinstance(exc, psycopg.OperationalError) and conn.closed:
                self._drop()
                raise fault(
                    FaultKind.CONNECTION, "PostgreSQL connection broke", error=type(exc).__name__
                ) from None
            raise classify(exc) from None

    @contextmanager
    def _group_transaction(self) -> Iterator[None]:
        """The group's transaction in pipeline mode: BEGIN goes out with the first
        statement and COMMIT with the closing Sync, instead of a round trip each. A
        statement whose result is read (fetch, rowcount) still waits for it."""
        with self._lock:
            conn = self._current()
            with self._mapped(conn), conn.pipeline() as pipe:
                self._pipe = pipe
                try:
                    conn.execute("BEGIN")
                    yield
                    conn.execute("COMMIT")  # its result: at the pipeline's exit
                except BaseException:
                    self._abort(conn, pipe)
                    raise
                finally:
                    self._pipe = None

    def _abort(self, conn: psycopg.Connection[Any], pipe: psycopg.Pipeline) -> None:
        """Roll back a failed group. A failed statement makes the pipeline skip the rest
        until a Sync, so sync first, then ROLLBACK (psycopg's rollback() also forgets the
        statements it prepared meanwhile); a connection that cannot is dropped (the server
        rolls back the transaction of a closed connection)."""
        if conn.closed:
            return
        with suppress(psycopg.Error):
            pipe.sync()  # an error here is the one the block raised, or a broken link
        try:
            conn.rollback()
        except psycopg.Error:
            self._drop()

    def _exec(self, cur: Any, text: str, params: Sequence[Any] = ()) -> Any:
        cur.execute(self._sql(text), tuple(params))
        if self._pipe is not None:
            self._pipe.sync()  # in a group: its rowcount is read next, wait for it
        return cur

    def _single_write(self) -> AbstractContextManager[Any]:
        # One statement in autocommit is atomic in PostgreSQL (an UPDATE re-checks its WHERE
        # on the row it locked, under READ COMMITTED): no BEGIN and COMMIT round trips.
        return self._transaction(write=False)

    def get_marks(self, key_hashes: Sequence[bytes]) -> dict[bytes, bytes]:
        """One statement, one round trip, whatever the number of keys."""
        unique = list(dict.fromkeys(key_hashes))
        if not unique:
            return {}
        with self._transaction(write=False) as cur:
            rows = cur.execute(
                "SELECT key_hash, value FROM marks WHERE key_hash = ANY(%b)", (unique,)
            ).fetchall()
        return {bytes(k): bytes(v) for k, v in rows}

    def cas_marks(
        self,
        items: Sequence[tuple[bytes, bytes | None, bytes]],
        now: float,
        expires_at: float | None = None,
    ) -> list[bool]:
        """Distinct keys: one statement (one round trip, one commit). A key repeated in the
        batch needs the in-order semantics of one statement after the other (a later item
        may expect what an earlier one wrote): then one transaction of single statements."""
        if not items:
            return []
        keys = [key_hash for key_hash, _, _ in items]
        if len(set(keys)) != len(keys):
            return super().cas_marks(items, now, expires_at)
        with self._transaction(write=False) as cur:
            rows = cur.execute(
                _CAS_MARKS,
                (
                    keys,
                    [e for _, e, _ in items],
                    [v for _, _, v in items],
                    now,
                    expires_at,
                    now,
                    expires_at,
                ),
            ).fetchall()
        won = {bytes(r[0]) for r in rows}
        return [key_hash in won for key_hash in keys]

    def fetch_many(self, lookups: Sequence[bytes]) -> dict[bytes, Row]:
        """One statement, one round trip, whatever the number of records."""
        unique = list(dict.fromkeys(lookups))
        if not unique:
            return {}
        with self._transaction(write=False) as cur:
            raws = cur.execute(
                "SELECT lookup, key_id, wrapped_key, nonce, ciphertext,"
                " record_schema, revision FROM patients WHERE lookup = ANY(%b)",
                (unique,),
            ).fetchall()
        return {row.lookup: row for row in map(self._row, raws)}

    def insert(self, row: Row, pseudonym_hash: bytes | None, now: float) -> bool:
        """First writer wins, the record and its pseudonym index entry in one statement."""
        if pseudonym_hash is None:
            return super().insert(row, pseudonym_hash, now)
        with self._transaction(write=False) as cur:
            found = cur.execute(
                _INSERT_INDEXED, (*row.inserted_at(now), pseudonym_hash, now)
            ).fetchone()
        return bool(found and found[0] == 1)

    def update_many(self, rows: Sequence[tuple[Row, int]], now: float) -> list[bool]:
        """Distinct records: one statement (one round trip, one commit) instead of a
        transaction of one UPDATE each; a record repeated in the batch: in order, as before."""
        if not rows:
            return []
        lookups = [row.lookup for row, _ in rows]
        if len(set(lookups)) != len(lookups):
            return super().update_many(rows, now)
        columns = (
            lookups,
            [row.key_id for row, _ in rows],
            [row.wrapped_key for row, _ in rows],
            [row.nonce for row, _ in rows],
            [row.ciphertext for row, _ in rows],
            [row.record_schema for row, _ in rows],
            [row.revision for row, _ in rows],
            [expected for _, expected in rows],
        )
        with self._transaction(write=False) as cur:
            written = {bytes(r[0]) for r in cur.execute(_UPDATE_MANY, (now, *columns)).fetchall()}
        return [lookup in written for lookup in lookups]

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    def _append_only_audit(self) -> list[str]:
        return [
            "CREATE RULE audit_no_update AS ON UPDATE TO audit DO INSTEAD NOTHING",
            "CREATE RULE audit_no_delete AS ON DELETE TO audit DO INSTEAD NOTHING",
        ]

    def _audit_guard(self) -> list[str]:
        # Rules cannot stop TRUNCATE; a statement trigger can (only the owner may drop it)
        return [
            "CREATE FUNCTION audit_refuse_truncate() RETURNS trigger LANGUAGE plpgsql AS"
            " $$ BEGIN RAISE EXCEPTION 'audit is append-only'; END $$",
            "CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit"
            " FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_truncate()",
        ]

    def _lock_audit(self, cur: Any) -> None:
        # one appender at a time per schema (no privilege needed, unlike LOCK TABLE)
        cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(current_schema()))", (_AUDIT_LOCK,))

    def _begin_migration(self, cur: Any) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))

    def _create_namespace(self, cur: Any) -> None:
        if self._schema:
            cur.execute(f'CREATE SCHEMA IF NOT EXISTS "{self._schema}"')

    def grant_service(self, role: str) -> list[str]:
        """Grant ``role`` what the service needs — data statements on the store's tables,
        no DDL, no ownership — and return the statements (docs/keystore.md lists them)."""
        statements = service_grants(self._schema or "public", role)
        with self._transaction() as cur:
            for statement in statements:
                cur.execute(statement)
        return statements

    def _key_guard(self) -> list[str]:
        """Records and the store root may only be wrapped under a registered (not retired)
        master key; a registered key may only be deleted (retired) while nothing is wrapped
        under it. Foreign keys do both atomically, under concurrent writers."""
        return [_key_active_fk("patients"), _key_active_fk("store_keys")]

    def _review_key_guard(self) -> list[str]:
        """The same foreign keys on the review queue's sealed blobs (NOT VALID: rows an
        earlier release wrote are not re-checked; new rows and retirements are)."""
        return [_key_active_fk(t, not_valid=True) for t in REVIEW_GUARDED_AT_5]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._drop()


def _key_active_fk(table: str, *, not_valid: bool = False) -> str:
    """The foreign key (one of ``KEY_GUARDS``) from ``table``'s key id to ``master_keys``
    (``not_valid``: existing rows are not checked, new rows and deletions are)."""
    return (
        f"ALTER TABLE {table} ADD CONSTRAINT {table}_key_active"
        " FOREIGN KEY (key_id) REFERENCES master_keys (key_id)"
        + (" NOT VALID" if not_valid else "")
    )


def service_grants(schema: str, role: str) -> list[str]:
    """The GRANTs for a DML-only service role: it reads every table, writes records, marks,
    pseudonyms and its own instance row, adds audit lines, the store root (first start) and
    its own master key id, and may delete marks (expired ones) and its instance row. It
    cannot create, alter or drop anything, nor retire keys or forget patients (the admin
    commands run as the owner)."""
    if not _SCHEMA_RE.match(schema) or not _SCHEMA_RE.match(role):
        raise KeystoreError("invalid PostgreSQL schema or role name")
    s, r = f'"{schema}"', f'"{role}"'
    return [
        f"GRANT USAGE ON SCHEMA {s} TO {r}",
        f"GRANT SELECT ON {s}.schema_version, {s}.retired_keys TO {r}",
        f"GRANT SELECT, INSERT ON {s}.store_keys, {s}.master_keys, {s}.audit TO {r}",
        f"GRANT SELECT, INSERT, UPDATE ON {s}.patients, {s}.pseudonyms TO {r}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {s}.marks, {s}.instances TO {r}",
        # the audit log's sealed head: rewritten with every audit line (keystore/auditdb.py)
        f"GRANT SELECT, INSERT, UPDATE ON {s}.audit_head TO {r}",
        f"GRANT SELECT, INSERT ON {s}.mark_owners TO {r}",
        # the review queue: items, documents and decisions are only added and updated
        # (status, undo); list entries are replaced and taken back; accounts are the
        # owner's (`review add-user`)
        f"GRANT SELECT, INSERT, UPDATE ON {s}.review_items, {s}.review_docs,"
        f" {s}.review_decisions TO {r}",
        f"GRANT SELECT, INSERT, DELETE ON {s}.review_lists TO {r}",
        f"GRANT SELECT ON {s}.review_accounts TO {r}",
    ]


def classify(exc: psycopg.Error, *, connecting: bool = False) -> KeystoreError:
    """The key store error for a psycopg error, by SQLSTATE: a fault of the stream (which
    kind), or ``KeyRetiredError`` for a write under a retired master key. Only the error's
    class name and SQLSTATE are kept: its message may quote stored bytes."""
    state = getattr(exc, "sqlstate", None) or ""
    name = type(exc).__name__
    if state == "23503":
        constraint = getattr(getattr(exc, "diag", None), "constraint_name", None)
        if constraint in KEY_GUARDS:
            return KeyRetiredError(
                "refused to seal under a master key that is retired (or "
                "was never registered in this store)",
                sqlstate=state,
            )
    kind = _SQLSTATE_KINDS.get(state) or _SQLSTATE_KINDS.get(state[:2])
    if kind is None:
        connection_lost = connecting or (isinstance(exc, psycopg.OperationalError) and not state)
        kind = FaultKind.CONNECTION if connection_lost else FaultKind.DATABASE
    reason = (
        "cannot connect to the PostgreSQL key store"
        if connecting
        else "PostgreSQL key store operation failed"
    )
    made: KeystoreFault = fault(kind, reason, error=name, sqlstate=state or None)
    return made
