"""Safe key store timeouts by default, in code (issue 24, item 4): the documented store URL
sets no lock or statement timeout, and another session's ``LOCK TABLE`` held both workers
with nothing to show. Every PostgreSQL connection now gets lock, statement and idle-in-
transaction timeouts and TCP keepalives unless the URL sets its own; SQLite waits 5 s at
most for another connection's lock."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest

from keystore import Keyring, open_store
from keystore.errors import KeystoreError
from keystore.postgres import safe_connect_options
from keystore.sqlite import SqliteBackend

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/test"


def test_the_url_keeps_its_own_values_and_gets_the_rest() -> None:
    plain = safe_connect_options("postgresql://svc@db:5432/deid")
    assert plain["options"] == (
        "-c lock_timeout=5s -c statement_timeout=30s -c idle_in_transaction_session_timeout=60s"
    )
    assert plain["keepalives"] == "1" and plain["keepalives_idle"] == "10"
    own = safe_connect_options(
        "postgresql://svc@db/deid?options=-c%20lock_timeout%3D400&keepalives_idle=60"
    )
    assert "lock_timeout" not in own["options"].split("-c lock_timeout=400")[0]
    assert own["options"].endswith("-c lock_timeout=400")  # the URL's value, last: it wins
    assert "statement_timeout=30s" in own["options"]
    assert "keepalives_idle" not in own


def _setting(store: object, name: str) -> str:
    backend = store._backend  # type: ignore[attr-defined]
    with backend._transaction(write=False) as cur:
        cur.execute(f"SHOW {name}")
        return str(cur.fetchone()[0])


def test_a_postgres_store_opened_from_a_plain_url_has_the_timeouts(pg_url: str) -> None:
    keyring = Keyring.generate()
    with open_store(pg_url, keyring) as store:
        assert _setting(store, "lock_timeout") == "5s"
        assert _setting(store, "statement_timeout") == "30s"
        assert _setting(store, "idle_in_transaction_session_timeout") == "1min"
    with open_store(f"{pg_url}&options=-c%20lock_timeout%3D400", keyring) as store:
        assert _setting(store, "lock_timeout") == "400ms"


def test_a_table_locked_by_another_session_fails_in_seconds_not_never(pg_url: str) -> None:
    """LOCK TABLE from a second connection: the store's write fails after the default
    lock_timeout (a fault of the stream, retried by the runner) instead of waiting for as
    long as the other session likes."""
    keyring = Keyring.generate()
    schema = pg_url.split("schema=")[1]
    with open_store(pg_url, keyring) as store:
        store.get_or_create("AUTH", "P1", lambda: store.new_state(3, b"s" * 32))
        locker = psycopg.connect(PG_ADMIN)
        locker.execute(f'LOCK TABLE "{schema}".patients IN ACCESS EXCLUSIVE MODE')
        released = threading.Timer(20.0, locker.rollback)
        released.start()
        try:
            started = time.monotonic()
            with pytest.raises(KeystoreError) as caught:
                store.get_or_create("AUTH", "P2", lambda: store.new_state(4, b"t" * 32))
            waited = time.monotonic() - started
        finally:
            released.cancel()
            locker.rollback()
            locker.close()
    assert caught.value.reason_class == "keystore_contention"
    assert 4.0 < waited < 15.0


def test_sqlite_waits_five_seconds_at_most_by_default(tmp_path: Path) -> None:
    backend = SqliteBackend(tmp_path / "ks.db")
    try:
        assert backend._conn is not None
        [(timeout_ms,)] = backend._conn.execute("PRAGMA busy_timeout").fetchall()
        assert timeout_ms == 5000
    finally:
        backend.close()
