"""Batched mark compare-and-set and the single-statement CAS, on SQLite and PostgreSQL:
each CAS decided on its own and in order; two store instances (separate caches) never
both win, and a stale expected value always loses."""

from __future__ import annotations

import pytest

from keystore import EncryptedStore, Keyring, open_store


def _check_batch(store: EncryptedStore) -> None:
    results = store.compare_and_set_marks(
        [("k", None, b"a"), ("k", b"a", b"b"), ("k", b"a", b"c"), ("j", b"x", b"y")]
    )
    assert results == [True, True, False, False]
    assert store.get_mark("k") == b"b" and store.get_mark("j") is None
    assert store.compare_and_set_marks([]) == []


def _check_two_instances(a: EncryptedStore, b: EncryptedStore) -> None:
    assert a.compare_and_set_mark("m", None, b"1")
    assert not b.compare_and_set_mark("m", None, b"2")  # exists: insert loses
    assert b.get_mark("m") == b"1"
    assert a.compare_and_set_mark("m", b"1", b"3")  # b's cached view (1) is now stale
    assert not b.compare_and_set_mark("m", b"1", b"4")
    assert b.compare_and_set_marks([("m", b"1", b"5"), ("m", b"3", b"6")]) == [False, True]
    assert a.get_mark("m") == b"6"


def test_sqlite_marks(sqlite_url: str, keyring: Keyring) -> None:
    a, b = open_store(sqlite_url, keyring), open_store(sqlite_url, keyring)
    try:
        _check_batch(a)
        _check_two_instances(a, b)
    finally:
        a.close()
        b.close()


@pytest.mark.integration
def test_postgres_marks(pg_url: str, keyring: Keyring) -> None:
    a, b = open_store(pg_url, keyring), open_store(pg_url, keyring)
    try:
        _check_batch(a)
        _check_two_instances(a, b)
    finally:
        a.close()
        b.close()
