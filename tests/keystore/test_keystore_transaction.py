"""``EncryptedStore.transaction()``: a flush and mark compare-and-sets made inside are one
database transaction (one commit), all or nothing. A block that raises stores nothing, and
its states are pending again with their old revisions, so doing the same work again after
the failure ends exactly where doing it once without a transaction ends (the service's
confirmation retried after a key store outage). On SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keystore import EncryptedStore, Keyring, open_store
from keystore.api import PatientState


class Boom(Exception):
    pass


def _factory(store: EncryptedStore, n: int) -> Callable[[], PatientState]:
    return lambda: store.new_state(n + 1, bytes([n]) * 32)


def _work(
    store: EncryptedStore, saves: list[tuple[int, str]], marks: list[tuple[int, int]]
) -> list[bool]:
    """Save some states, flush, compare-and-set some marks (as Processor.commit does)."""
    for patient, word in saves:
        state = store.get_or_create("A", str(patient), _factory(store, patient))
        state.name_map[word] = word.upper()
        store.save("A", str(patient), state)
    store.flush()
    items = [(f"m{k}", None if v == 0 else str(v - 1).encode(), str(v).encode()) for k, v in marks]
    return store.compare_and_set_marks(items)


def _content(url: str, keyring: Keyring, patients: int, marks: int) -> tuple[object, ...]:
    """What a fresh instance reads: every patient's maps, every mark."""
    fresh = open_store(url, keyring)
    try:
        states = []
        for p in range(patients):
            got = fresh.get("A", str(p))
            states.append(None if got is None else sorted(got.name_map.items()))
        return tuple(states), tuple(fresh.get_mark(f"m{k}") for k in range(marks))
    finally:
        fresh.close()


SAVES = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["ab", "cd", "ef"])), max_size=6)
MARKS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=5)


def _check_equivalence(
    make_url: Callable[[], str],
    keyring: Keyring,
    before: list[tuple[int, str]],
    saves: list[tuple[int, str]],
    marks: list[tuple[int, int]],
    fail: bool,
) -> None:
    plain_url, tx_url = make_url(), make_url()
    plain, tx = open_store(plain_url, keyring), open_store(tx_url, keyring)
    try:
        _work(plain, before, [])
        _work(tx, before, [])
        want = _work(plain, saves, marks)
        if fail:
            with pytest.raises(Boom), tx.transaction():
                _work(tx, saves, marks)
                raise Boom
            with tx.transaction():  # the retry: the states are pending, the marks again
                got = _work(tx, [], marks)
        else:
            with tx.transaction():
                got = _work(tx, saves, marks)
        assert got == want
        assert _content(tx_url, keyring, 4, 4) == _content(plain_url, keyring, 4, 4)
    finally:
        plain.close()
        tx.close()


@settings(max_examples=40, deadline=None)
@given(before=SAVES, saves=SAVES, marks=MARKS, fail=st.booleans())
def test_sqlite_transaction_equals_plain_calls(
    tmp_path_factory: pytest.TempPathFactory,
    before: list[tuple[int, str]],
    saves: list[tuple[int, str]],
    marks: list[tuple[int, int]],
    fail: bool,
) -> None:
    keyring = Keyring.generate("test-a")
    root = tmp_path_factory.mktemp("tx")
    counter = iter(range(1000))

    def make_url() -> str:
        return f"sqlite:///{root / f'ks{next(counter)}.sqlite3'}"

    _check_equivalence(make_url, keyring, before, saves, marks, fail)


def test_a_failed_block_stores_nothing_and_leaves_the_states_pending(
    sqlite_url: str, keyring: Keyring
) -> None:
    store = open_store(sqlite_url, keyring)
    try:
        _work(store, [(0, "ab")], [(0, 0)])
        with pytest.raises(Boom), store.transaction():
            assert _work(store, [(0, "cd"), (1, "ef")], [(0, 1), (1, 0)]) == [True, True]
            raise Boom
        assert _content(sqlite_url, keyring, 2, 2) == (([("ab", "AB")], None), (b"0", None))
        assert store.pending == 2
        assert store.get_mark("m0") == b"0"
        store.flush()  # the states written now, at their old revisions (no conflict)
        assert _content(sqlite_url, keyring, 2, 2)[0] == (
            [("ab", "AB"), ("cd", "CD")],
            [("ef", "EF")],
        )
    finally:
        store.close()


def test_sqlite_one_commit_for_flush_and_marks(tmp_path: Path, keyring: Keyring) -> None:
    url = f"sqlite:///{tmp_path / 'ks.sqlite3'}"
    store = open_store(url, keyring)
    try:
        _work(store, [(0, "ab"), (1, "ab")], [])
        statements: list[str] = []
        conn: sqlite3.Connection = store._backend._conn  # type: ignore[attr-defined]
        conn.set_trace_callback(statements.append)
        with store.transaction(), store.transaction():  # nested: part of the outer one
            _work(store, [(0, "cd"), (1, "cd")], [(0, 0), (1, 0)])
        conn.set_trace_callback(None)
        assert [s for s in statements if s in ("BEGIN IMMEDIATE", "COMMIT")] == [
            "BEGIN IMMEDIATE",
            "COMMIT",
        ]
        statements.clear()
        _work(store, [(0, "ef")], [(2, 0)])  # without: a commit for each
        conn.set_trace_callback(statements.append)
        _work(store, [(1, "ef")], [(3, 0)])
        conn.set_trace_callback(None)
        assert statements.count("COMMIT") == 2
    finally:
        store.close()


def test_postgres_transaction_all_or_nothing(pg_url: str, keyring: Keyring) -> None:
    store = open_store(pg_url, keyring)
    try:
        _work(store, [(0, "ab")], [(0, 0)])
        with pytest.raises(Boom), store.transaction():
            assert _work(store, [(0, "cd"), (1, "ef")], [(0, 1), (1, 0)]) == [True, True]
            raise Boom
        assert _content(pg_url, keyring, 2, 2) == (([("ab", "AB")], None), (b"0", None))
        assert store.pending == 2
        with store.transaction():
            assert store.compare_and_set_marks([("m0", b"0", b"1"), ("m1", None, b"0")]) == [
                True,
                True,
            ]
            store.flush()
        assert _content(pg_url, keyring, 2, 2) == (
            ([("ab", "AB"), ("cd", "CD")], [("ef", "EF")]),
            (b"1", b"0"),
        )
    finally:
        store.close()


def test_postgres_a_broken_connection_never_commits_half(pg_url: str, keyring: Keyring) -> None:
    """A statement of a transaction never runs on a new connection outside it."""
    from keystore.errors import KeystoreUnavailable

    store = open_store(pg_url, keyring)
    try:
        _work(store, [(0, "ab")], [])
        with pytest.raises(KeystoreUnavailable), store.transaction():
            store.compare_and_set_marks([("m0", None, b"0")])
            store._backend._drop()  # type: ignore[attr-defined]
            store.compare_and_set_marks([("m1", None, b"0")])
        assert _content(pg_url, keyring, 1, 2)[1] == (None, None)
    finally:
        store.close()
