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
