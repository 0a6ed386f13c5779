"""A document's new visit is saved with the document's other state changes: one ``save`` per
decided document (session 21), and the visit kept whatever the outcome."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from keystore.memory import InMemoryStore
from pipelines.outcome import OutcomeKind
from pipelines.patient_context import visits_of
from pipelines.policy import Policy
from pipelines.process import Processor

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "versions"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _raw(name: str, visit: str | None = None) -> bytes:
    raw = next(FIXTURES.glob(f"{name}_*.*")).read_bytes()
    return raw if visit is None else raw.replace(b"VIS7788", visit.encode())


def _visits(store: InMemoryStore) -> tuple[str, ...]:
    states = list(store._states.values())  # noqa: SLF001 - one patient in these inputs
    assert len(states) == 1
    return visits_of(states[0])


def _run(proc: Processor, raw: bytes) -> OutcomeKind:
    outcomes = proc.process(raw, content_hint="hl7v2", now=NOW)
    proc.commit(outcomes)
    assert len(outcomes) == 1
    return outcomes[0].kind


def test_one_save_per_published_document_visit_kept() -> None:
    store = InMemoryStore()
    proc = Processor(policy=Policy.load(), store=store)
    assert _run(proc, _raw("03", "VIS0000001")) is OutcomeKind.PUBLISH
    first = store.saves
    assert _visits(store) == ("VIS0000001",)
    assert _run(proc, _raw("03", "VIS0000002")) is OutcomeKind.PUBLISH
    assert store.saves - first == 1  # the visit, the maps and the sketch: one save
    assert _visits(store) == ("VIS0000001", "VIS0000002")
    before = store.saves
    assert _run(proc, _raw("03", "VIS0000002")) is OutcomeKind.DUPLICATE
    assert store.saves == before  # nothing changed: nothing saved


def test_visit_saved_without_a_sketch() -> None:
    """No near-duplicate sketch (and no new surrogate): the visit alone is saved."""
    store = InMemoryStore()
    proc = Processor(policy=Policy.load(), store=store, near_duplicates=False)
    assert _run(proc, _raw("03", "VIS0000001")) is OutcomeKind.PUBLISH
    before = store.saves
    assert _run(proc, _raw("03", "VIS0000002")) is OutcomeKind.PUBLISH
    assert store.saves - before == 1
    assert _visits(store) == ("VIS0000001", "VIS0000002")


def test_visit_of_an_admission_saved_with_its_context() -> None:
    store = InMemoryStore()
    proc = Processor(policy=Policy.load(), store=store)
    assert _run(proc, _raw("00")) is OutcomeKind.CONTEXT
    assert store.saves == 1
    assert len(_visits(store)) == 1
