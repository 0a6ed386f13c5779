"""Marks with a time to live (a dead letter's "sent" mark): readable until pruned, pruned
only once their time has passed, never a version mark written without one; on SQLite,
PostgreSQL and the in-memory store, and across the schema migration that added them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import pytest

from keystore import Keyring, open_store
from keystore.backend import MIGRATIONS, SCHEMA_VERSION
from keystore.memory import InMemoryStore


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Expiring(Protocol):
    def get_mark(self, key: str) -> bytes | None: ...
    def compare_and_set_mark(self, key: str, expected: bytes | None, value: bytes) -> bool: ...
    def compare_and_set_marks(
        self, items: Any, *, ttl_seconds: float | None = None
    ) -> list[bool]: ...
    def prune_marks(self, limit: int = ...) -> int: ...


def _check_expiry(store: Expiring, clock: Clock) -> None:
    assert store.compare_and_set_marks([("keep", None, b"v")]) == [True]
    assert store.compare_and_set_marks(
        [("dl-1", None, b"s"), ("dl-2", None, b"s")], ttl_seconds=60
    ) == [True, True]
    assert store.compare_and_set_marks([("dl-3", None, b"s")], ttl_seconds=600) == [True]
    assert store.prune_marks() == 0  # nothing due yet
    clock.now += 59
    assert store.prune_marks() == 0
    assert store.get_mark("dl-1") == b"s"
    clock.now += 1  # exactly at the expiry time: due
    assert store.prune_marks(limit=1) == 1  # bounded
    assert store.prune_marks() == 1
    assert store.get_mark("dl-1") is None and store.get_mark("dl-2") is None
    assert store.get_mark("dl-3") == b"s"
    # a mark rewritten without a time to live is kept for good
    assert store.compare_and_set_mark("dl-3", b"s", b"t")
    clock.now += 10_000
    assert store.prune_marks() == 0
    assert store.get_mark("dl-3") == b"t" and store.get_mark("keep") == b"v"
    # a pruned mark can be written again (a new dead letter at the same coordinates)
    assert store.compare_and_set_marks([("dl-1", None, b"s")], ttl_seconds=1) == [True]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@contextmanager
def _opened(url: str, keyring: Keyring, clock: Clock) -> Iterator[Any]:
    store = open_store(url, keyring, clock=clock)
    try:
        yield store
    finally:
        store.close()


def test_memory_store_expiry(clock: Clock) -> None:
    _check_expiry(InMemoryStore(clock=clock), clock)


def test_sqlite_expiry(sqlite_url: str, keyring: Keyring, clock: Clock) -> None:
    with _opened(sqlite_url, keyring, clock) as store:
        _check_expiry(store, clock)


@pytest.mark.integration
def test_postgres_expiry(pg_url: str, keyring: Keyring, clock: Clock) -> None:
    with _opened(pg_url, keyring, clock) as store:
        _check_expiry(store, clock)
        # the single-statement batch path (distinct keys) and the ordered path (a repeat)
        assert store.compare_and_set_marks(
            [("a", None, b"1"), ("b", None, b"1")], ttl_seconds=5
        ) == [True, True]
        assert store.compare_and_set_marks(
            [("c", None, b"1"), ("c", b"1", b"2")], ttl_seconds=5
        ) == [True, True]
        clock.now += 5
        assert store.prune_marks() == 4  # a, b, c and dl-1 (ttl 1)


def test_counts_report_expiring_marks(sqlite_url: str, keyring: Keyring, clock: Clock) -> None:
    with _opened(sqlite_url, keyring, clock) as store:
        store.compare_and_set_marks([("x", None, b"1")], ttl_seconds=5)
        store.compare_and_set_marks([("y", None, b"1")])
        counts = store._backend.counts()
        assert counts["marks"] == 2 and counts["expiring_marks"] == 1


def test_a_version_1_store_migrates_and_keeps_its_marks(
    tmp_path: Path, keyring: Keyring, clock: Clock
) -> None:
    """A store written before marks could expire opens, migrates, and its marks stay."""
    assert SCHEMA_VERSION >= 2
    path = tmp_path / "old.sqlite3"
    url = f"sqlite:///{path}"
    with _opened(url, keyring, clock) as store:
        assert store.compare_and_set_marks([("old", None, b"v")]) == [True]
    # take the file back to schema 1: the marks table as version 1 created it, and
    conn = sqlite3.connect(path)
    conn.executescript(
        # without the review queue's tables (version 5; their triggers go with them, and
        # the key guard that counts them)
        "DROP TRIGGER master_keys_in_use;"
        "DROP TABLE mark_owners;"  # version 6: whose version marks
        "DROP TABLE review_items; DROP TABLE review_docs; DROP TABLE review_decisions;"
        "DROP TABLE review_lists; DROP TABLE review_accounts;"
        "DROP INDEX marks_expires_at;"
        "CREATE TABLE marks_v1 (key_hash BLOB PRIMARY KEY, value BLOB NOT NULL,"
        " updated_at REAL NOT NULL);"
        "INSERT INTO marks_v1 SELECT key_hash, value, updated_at FROM marks;"
        "DROP TABLE marks; ALTER TABLE marks_v1 RENAME TO marks;"
        "DELETE FROM schema_version WHERE version > 1;"
        # and without what version 3 added (master keys, instances, their guards)
        "DROP TRIGGER patients_key_active; DROP TRIGGER patients_key_active_update;"
        "DROP TRIGGER store_keys_key_active; DROP TRIGGER store_keys_key_active_update;"
        "DROP TABLE master_keys; DROP TABLE retired_keys; DROP TABLE instances;"
        # and without the audit chain's columns
        "DROP INDEX audit_seq; ALTER TABLE audit DROP COLUMN seq;"
        "ALTER TABLE audit DROP COLUMN mac;"
        "DROP TABLE audit_head;"  # and the audit anchor (version 6)
    )
    conn.close()
    with _opened(url, keyring, clock) as store:
        assert store._backend.schema_version() == SCHEMA_VERSION
        assert store.get_mark("old") == b"v"
        clock.now += 10**9
        assert store.prune_marks() == 0
        assert store.compare_and_set_marks([("new", None, b"v")], ttl_seconds=1) == [True]


def test_migrations_are_append_only_numbered() -> None:
    versions: list[int] = [v for v, _ in MIGRATIONS]
    assert versions == list(range(1, len(versions) + 1))
