"""Small per-record costs taken off the stream: the package version is looked up once, and
the warmed-up heap is frozen out of the garbage collector once per process."""

from __future__ import annotations

import gc

import service.wiring as wiring
from service.metrics import package_version


def test_package_version_is_looked_up_once() -> None:
    package_version()
    before = package_version.cache_info()
    for _ in range(5):
        package_version()
    after = package_version.cache_info()
    assert after.misses == before.misses and after.hits == before.hits + 5


def test_freeze_after_warmup_freezes_once() -> None:
    was = wiring._frozen
    wiring._frozen = False
    try:
        assert wiring.freeze_after_warmup() is True
        frozen = gc.get_freeze_count()
        assert frozen > 0
        junk = [object() for _ in range(1000)]
        assert wiring.freeze_after_warmup() is False  # a re-opened processor: no refreeze
        assert gc.get_freeze_count() == frozen
        del junk
    finally:
        gc.unfreeze()
        wiring._frozen = was


class _Store:
    def __init__(self) -> None:
        self.calls = 0
        self.size = 3  # not callable: passed through, never wrapped

    def get_mark(self, key: str) -> bytes | None:
        self.calls += 1
        if key == "boom":
            raise ConnectionError("down")
        return None


def test_instrumented_store_wraps_each_method_once_and_counts_every_call() -> None:
    import pytest

    from service.metrics import Metrics

    metrics = Metrics()
    inner = _Store()
    store = wiring.InstrumentedStore(inner, metrics)
    first = store.get_mark
    assert store.get_mark is first  # bound once, kept on the instance
    for _ in range(3):
        store.get_mark("k")
    with pytest.raises(ConnectionError):
        store.get_mark("boom")
    assert inner.calls == 4 and store.size == 3
    ops = "deidstream_keystore_operations_total"
    assert metrics.value(ops, operation="get_mark", result="ok") == 3
    assert metrics.value(ops, operation="get_mark", result="error") == 1
    assert metrics.value("deidstream_keystore_operation_seconds_count", operation="get_mark") == 4
