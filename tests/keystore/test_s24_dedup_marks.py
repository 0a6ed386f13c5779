"""The encrypted store's marks against the in-memory store's (the reference): any sequence of
batched reads and compare-and-sets — stale, repeated and absent keys included, two instances
of one SQLite file writing in turn — gives the same answers; the sealed pair of one
compare-and-set re-uses a known ciphertext only when it is the expected value; statements are
translated into the dialect once."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keystore import Keyring, open_store
from keystore.memory import InMemoryStore
from keystore.postgres import PostgresBackend
from keystore.sqlite import SqliteBackend
from keystore.subkeys import StoreKeys

_KEYS = st.sampled_from(["a", "b", "c"])
_VALUES = st.sampled_from([b"1", b"2", b"3"])
_CAS = st.tuples(_KEYS, st.none() | _VALUES, _VALUES)
_FILES = itertools.count()  # one new store file per example (tmp_path is shared by them)
Step = tuple[int, bool, list[tuple[str, bytes | None, bytes]], list[str]]
_STEP = st.tuples(st.integers(0, 1), st.booleans(), st.lists(_CAS, max_size=5), st.lists(_KEYS))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_STEP, max_size=8))
def test_encrypted_marks_answer_as_the_reference(tmp_path: Path, steps: list[Step]) -> None:
    keyring = Keyring.generate()
    url = f"sqlite:///{tmp_path}/marks-{next(_FILES)}.db"
    stores = [open_store(url, keyring), open_store(url, keyring)]
    reference = InMemoryStore()
    try:
        for who, single, items, keys in steps:
            store = stores[who]
            if single and items:
                key, expected, value = items[0]
                got = store.compare_and_set_mark(key, expected, value)
                assert got == reference.compare_and_set_mark(key, expected, value)
            else:
                assert store.compare_and_set_marks(items) == reference.compare_and_set_marks(items)
            assert store.get_marks(keys) == reference.get_marks(keys)
            assert all(store.get_mark(k) == reference.get_mark(k) for k in keys)
    finally:
        for store in stores:
            store.close()


def test_sealed_pair_reuses_only_the_expected_ciphertext() -> None:
    keys = StoreKeys(b"r" * 32)
    key_hash = keys.mark_key("k")
    fresh = keys.sealed_pair("k", b"old", b"new")
    assert fresh == (key_hash, keys.seal_mark(key_hash, b"old"), keys.seal_mark(key_hash, b"new"))
    assert keys.sealed_pair("k", None, b"new")[1] is None
    known = (key_hash, b"old", b"stored ciphertext")
    assert keys.sealed_pair("k", b"old", b"new", known)[1] == b"stored ciphertext"
    other = (key_hash, b"older", b"stored ciphertext")  # not the expected value: sealed afresh
    assert keys.sealed_pair("k", b"old", b"new", other)[1] == keys.seal_mark(key_hash, b"old")


def test_statements_are_translated_once_and_as_before() -> None:
    text = "CREATE TABLE t (x {blob}, y {bigint}) -- ? ?"
    for backend_type in (SqliteBackend, PostgresBackend):
        backend = backend_type.__new__(backend_type)
        backend._dialected = {}
        first = backend._sql(text)
        assert first == backend._translate(text)
        assert backend._sql(text) is first
    assert "%s" in PostgresBackend._translate(backend, text)
    sqlite = SqliteBackend(":memory:")
    try:
        many = {sqlite._sql(f"SELECT {n} WHERE x = ?") for n in range(3000)}  # bounded cache
        assert len(many) == 3000 and len(sqlite._dialected) <= 1024
    finally:
        sqlite.close()
