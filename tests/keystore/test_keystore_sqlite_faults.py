"""SQLite faults are classified, retriable and lose nothing (issue 14, item 1): a full disk
(the database's page limit), a read-only connection, a lock held by another writer."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from keystore import EncryptedStore, Keyring
from keystore.errors import (
    FaultKind,
    KeystoreContentionFault,
    KeystoreReadOnlyFault,
    KeystoreResourcesFault,
)
from keystore.sqlite import SqliteBackend


def _store(path: Path, keyring: Keyring, busy_timeout_s: float = 10.0) -> EncryptedStore:
    return EncryptedStore(SqliteBackend(path, busy_timeout_s=busy_timeout_s), keyring)


def test_a_full_disk_is_a_resources_fault_and_nothing_is_lost(
    tmp_path: Path, keyring: Keyring
) -> None:
    store = _store(tmp_path / "ks.sqlite3", keyring)
    conn = store._backend._conn  # type: ignore[attr-defined]  # noqa: SLF001
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full now
    made = []
    with pytest.raises(KeystoreResourcesFault) as info:
        for n in range(10_000):
            store.get_or_create("H", f"p{n}", lambda n=n: store.new_state(n % 300))
            made.append(n)
    assert info.value.retriable and info.value.kind is FaultKind.RESOURCES
    assert "SQLITE_FULL" in str(info.value)
    conn.execute("PRAGMA max_page_count = 1073741823")  # space again: the retry succeeds
    failed = len(made)
    state = store.get_or_create("H", f"p{failed}", lambda: store.new_state(failed % 300))
    assert state.shift_days == failed % 300
    store.close()
    reader = _store(tmp_path / "ks.sqlite3", keyring)
    assert all(reader.get("H", f"p{n}") is not None for n in [*made, failed])
    reader.close()


def test_a_read_only_connection_is_a_read_only_fault(tmp_path: Path, keyring: Keyring) -> None:
    store = _store(tmp_path / "ks.sqlite3", keyring)
    conn = store._backend._conn  # type: ignore[attr-defined]  # noqa: SLF001
    conn.execute("PRAGMA query_only = 1")
    with pytest.raises(KeystoreReadOnlyFault):
        store.compare_and_set_marks([("m", None, b"1")])
    conn.execute("PRAGMA query_only = 0")
    assert store.compare_and_set_marks([("m", None, b"1")]) == [True]
    store.close()


def test_a_lock_held_by_another_writer_is_contention(tmp_path: Path, keyring: Keyring) -> None:
    path = tmp_path / "ks.sqlite3"
    _store(path, keyring).close()
    store = _store(path, keyring, busy_timeout_s=0.05)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(KeystoreContentionFault):
            store.compare_and_set_marks([("m", None, b"1")])
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert store.compare_and_set_marks([("m", None, b"1")]) == [True]  # usable again
    store.close()
