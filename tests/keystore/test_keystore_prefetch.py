"""EncryptedStore.prefetch: several patients read with one backend call; the following
get_or_create calls are cache hits, patients without a record are created without another
read, pending (dirty) states are left alone, expired entries are refreshed in place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from keystore import EncryptedStore, Keyring, PatientState, open_store


def _never() -> PatientState:
    raise AssertionError("a new identity was created where the stored one must be used")


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _count(store: EncryptedStore, name: str) -> list[int]:
    backend: Any = store._backend
    calls: list[int] = []
    real = getattr(backend, name)

    def counting(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    setattr(backend, name, counting)
    return calls


def _check(open_: Callable[..., EncryptedStore]) -> None:
    writer = open_()
    made = {p: writer.get_or_create("H", p, lambda: writer.new_state(-9)) for p in ("a", "b")}
    writer.close()
    clock = _Clock()
    store = open_(monotonic=clock)
    try:
        fetches, many = _count(store, "fetch"), _count(store, "fetch_many")
        store.prefetch([("H", "a"), ("H", "b"), ("H", "new"), ("H", "a")])
        assert len(many) == 1
        for p in ("a", "b"):
            assert store.get_or_create("H", p, _never).seed == made[p].seed
        created = store.get_or_create("H", "new", lambda: store.new_state(-3))
        assert created.shift_days == -3
        assert fetches == []  # cache hits, and the new patient's create skipped the read
        assert store.hits == 2
        # a cached, fresh patient is not read again; a pending state is left alone
        state = store.get_or_create("H", "a", _never)
        state.name_map["x"] = "Y"
        store.save("H", "a", state)
        store.prefetch([("H", "a"), ("H", "b")])
        assert len(many) == 1
        held_b = store.get_or_create("H", "b", _never)
        clock.now += 3600  # every entry expired: b re-read (the object callers hold updated),
        store.prefetch([("H", "a"), ("H", "b")])  # a pending: left to get_or_create
        assert len(many) == 2 and fetches == []
        hits = store.hits
        assert store.get_or_create("H", "b", _never) is held_b
        assert store.hits == hits + 1
        assert store.get_or_create("H", "a", _never).name_map["x"] == "Y"  # kept, flushed
        store.flush()
    finally:
        store.close()
    with open_() as again:
        assert again.get_or_create("H", "a", _never).name_map == {"x": "Y"}
        assert again.get_or_create("H", "new", _never).shift_days == -3


def test_sqlite_prefetch(sqlite_url: str, keyring: Keyring) -> None:
    _check(lambda **kw: open_store(sqlite_url, keyring, **kw))


@pytest.mark.integration
def test_postgres_prefetch(pg_url: str, keyring: Keyring) -> None:
    _check(lambda **kw: open_store(pg_url, keyring, **kw))


def test_absent_hint_loses_gracefully_to_another_creator(sqlite_url: str, keyring: Keyring) -> None:
    """Told 'absent' by a prefetch, then another instance creates the patient: the insert
    loses and the stored identity is used (first writer wins, as always)."""
    a, b = open_store(sqlite_url, keyring), open_store(sqlite_url, keyring)
    try:
        a.prefetch([("H", "p"), ("H", "q")])
        theirs = b.get_or_create("H", "p", lambda: b.new_state(-4))
        ours = a.get_or_create("H", "p", lambda: a.new_state(-5))
        assert ours.seed == theirs.seed and ours.shift_days == -4
    finally:
        a.close()
        b.close()
