"""The in-memory store honours the PatientStore / MarkStore contract."""

from __future__ import annotations

import threading

from keystore.api import MarkStore, PatientState, PatientStore
from keystore.memory import InMemoryStore


def _state(shift: int) -> PatientState:
    return PatientState(shift_days=shift, pseudonym=f"p{shift}", seed=bytes([shift % 256]) * 16)


def test_is_both_protocols() -> None:
    store = InMemoryStore()
    ps: PatientStore = store
    ms: MarkStore = store
    assert ps is ms


def test_first_writer_wins_under_threads() -> None:
    store = InMemoryStore()
    barrier = threading.Barrier(8)
    seen: list[int] = []

    def worker(i: int) -> None:
        barrier.wait()
        seen.append(store.get_or_create("A", "1", lambda: _state(i + 1)).shift_days)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 1


def test_compare_and_set_mark() -> None:
    store = InMemoryStore()
    assert store.get_mark("k") is None
    assert store.compare_and_set_mark("k", None, b"1")
    assert not store.compare_and_set_mark("k", None, b"2")
    assert store.compare_and_set_mark("k", b"1", b"2")
    assert store.get_mark("k") == b"2"


def test_save_and_forget() -> None:
    store = InMemoryStore()
    s = store.get_or_create("A", "1", lambda: _state(5))
    s.name_map["x"] = "y"
    store.save("A", "1", s)
    assert store.snapshot("A", "1").name_map == {"x": "y"}
    assert store.forget("A", "1")
    assert store.get_or_create("A", "1", lambda: _state(9)).shift_days == 9
