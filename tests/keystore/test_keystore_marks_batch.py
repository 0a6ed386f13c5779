"""Batched mark compare-and-set and the single-statement CAS, on SQLite and PostgreSQL:
each CAS decided on its own and in order; two store instances (separate caches) never
both win, and a stale expected value always loses."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from keystore import EncryptedStore, Keyring, open_store


@contextmanager
def _two_stores(url: str, keyring: Keyring) -> Iterator[tuple[EncryptedStore, EncryptedStore]]:
    """Two instances of one store (separate caches), as two service replicas have."""
    a, b = open_store(url, keyring), open_store(url, keyring)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


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
    with _two_stores(sqlite_url, keyring) as (a, b):
        _check_batch(a)
        _check_two_instances(a, b)


@pytest.mark.integration
def test_postgres_marks(pg_url: str, keyring: Keyring) -> None:
    with _two_stores(pg_url, keyring) as (a, b):
        _check_batch(a)
        _check_two_instances(a, b)


def _check_get_marks_and_distinct_batch(a: EncryptedStore, b: EncryptedStore) -> None:
    assert a.get_marks([]) == {}
    assert a.compare_and_set_marks([("p", None, b"1"), ("q", None, b"2")]) == [True, True]
    assert b.get_marks(["p", "q", "absent", "p"]) == {"p": b"1", "q": b"2", "absent": None}
    # distinct keys: insert, insert that loses, update, update with a stale expected value
    results = b.compare_and_set_marks(
        [("r", None, b"3"), ("p", None, b"x"), ("q", b"2", b"4"), ("s", b"0", b"y")]
    )
    assert results == [True, False, True, False]
    assert a.get_marks(["p", "q", "r", "s"]) == {"p": b"1", "q": b"4", "r": b"3", "s": None}
    # only updates, one of them stale because the other instance moved the mark on
    assert a.compare_and_set_mark("p", b"1", b"5")
    assert b.compare_and_set_marks([("p", b"1", b"6"), ("q", b"4", b"7")]) == [False, True]
    assert b.get_marks(["p", "q"]) == {"p": b"5", "q": b"7"}
    many = [f"m{i}" for i in range(1203)]  # more keys than one SELECT ... IN takes
    assert all(a.compare_and_set_marks([(k, None, k.encode()) for k in many]))
    got = b.get_marks(many + ["none"])
    assert got == {**{k: k.encode() for k in many}, "none": None}


def test_sqlite_get_marks_and_distinct_batch(sqlite_url: str, keyring: Keyring) -> None:
    with _two_stores(sqlite_url, keyring) as (a, b):
        _check_get_marks_and_distinct_batch(a, b)


@pytest.mark.integration
def test_postgres_get_marks_and_distinct_batch(pg_url: str, keyring: Keyring) -> None:
    with _two_stores(pg_url, keyring) as (a, b):
        _check_get_marks_and_distinct_batch(a, b)


@pytest.mark.integration
def test_postgres_batch_of_distinct_keys_is_one_statement(pg_url: str, keyring: Keyring) -> None:
    """One round trip each: get_marks and a compare-and-set batch of distinct keys."""
    store = open_store(pg_url, keyring)
    try:
        backend = store._backend
        statements: list[str] = []
        conn = backend._conn  # type: ignore[attr-defined]
        real_cursor = conn.cursor

        class Counting:
            def __init__(self, cur: object) -> None:
                self._cur = cur

            def execute(self, query: object, *args: object, **kwargs: object) -> object:
                statements.append(str(query))
                self._cur.execute(query, *args, **kwargs)  # type: ignore[attr-defined]
                return self

            def __getattr__(self, name: str) -> object:
                return getattr(self._cur, name)

            def __enter__(self) -> Counting:
                return self

            def __exit__(self, *exc: object) -> None:
                self._cur.close()  # type: ignore[attr-defined]

        conn.cursor = lambda *a, **k: Counting(real_cursor(*a, **k))
        assert (
            store.compare_and_set_marks([(f"k{i}", None, b"v") for i in range(50)]) == [True] * 50
        )
        assert len(statements) == 1
        statements.clear()
        assert store.get_marks([f"k{i}" for i in range(60)])["k0"] == b"v"
        assert len(statements) == 1
        statements.clear()
        assert store.compare_and_set_marks(
            [(f"k{i}", b"v", b"w") for i in range(40)] + [("k40", b"stale", b"w")]
        ) == [True] * 40 + [False]
        assert len(statements) == 1
    finally:
        store.close()
