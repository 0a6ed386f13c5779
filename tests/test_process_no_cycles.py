"""A processed document leaves no reference cycle behind: its work, parse and
de-identification are freed by reference counting as soon as the outcome is committed, not
by the garbage collector's next young collection (which walked and freed hundreds of
documents at once: bench/README.md, "Session 23: ... (s23-gc)")."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from keystore.memory import InMemoryStore
from pipelines.outcome import OutcomeKind
from pipelines.policy import Policy
from pipelines.process import Processor

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "versions"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
_OURS = ("pipelines.", "keystore.", "service.", "surrogates.")


def _raw(visit: str) -> bytes:
    raw = next(FIXTURES.glob("03_*.*")).read_bytes()
    return raw.replace(b"VIS7788", visit.encode())


@pytest.fixture
def collector_off() -> Iterator[None]:
    """The collector off and its garbage kept (``DEBUG_SAVEALL``) while the test runs."""
    was_on = gc.isenabled()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_on:
            gc.enable()


def _publish(proc: Processor, visit: str, many: bool) -> None:
    if many:
        result = list(proc.process_many([(_raw(visit), "hl7v2", NOW)]))[0]
        assert not isinstance(result, BaseException)
        outcomes = result
    else:
        outcomes = proc.process(_raw(visit), content_hint="hl7v2", now=NOW)
    proc.commit(outcomes)
    assert [o.kind for o in outcomes] == [OutcomeKind.PUBLISH]


@pytest.mark.usefixtures("collector_off")
@pytest.mark.parametrize("many", [False, True])
def test_a_published_document_leaves_no_cyclic_garbage(many: bool) -> None:
    proc = Processor(policy=Policy.load(), store=InMemoryStore())
    for n in range(1, 3):  # first uses: lazy imports, lazily built tables, memos
        _publish(proc, f"VIS{n:07d}", many)
    gc.collect()
    gc.garbage.clear()
    for n in range(3, 6):
        _publish(proc, f"VIS{n:07d}", many)
    gc.collect()
    # the project's own objects only: a test run's other garbage (an old class a cache lets
    # go of, say) is no document's
    ours = [o for o in gc.garbage if type(o).__module__.startswith(_OURS)]
    assert [type(o).__qualname__ for o in ours] == []
