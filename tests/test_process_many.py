"""Processor.process_many (pipelines/process.py): a batch of inputs gives exactly what
process() gives called on them one after the other, each confirmed before the next —
outcomes, errors returned in place, marks left in the store once confirmed — with one mark
read and one compare-and-set transaction; a lost
race is decided again; a store fault on one item stays with that item."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from keystore.api import PatientState
from keystore.errors import KeystoreUnavailable
from keystore.memory import InMemoryStore
from keystore.pseudonyms import Pseudonyms
from pipelines.errors import InputError, PartialInput
from pipelines.outcome import Outcome
from pipelines.policy import Policy
from pipelines.process import Item, Processor

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def fixture(name: str) -> tuple[bytes, str]:
    versions = FIXTURES / "versions"
    path = FIXTURES / name if "/" in name else next(versions.glob(f"{name}_*.*"))
    return path.read_bytes(), "fhir" if path.suffix in (".json", ".ndjson") else "hl7v2"


# HL7 + FHIR, an ADT context, versions of one report (and a repeat) in one batch, a
# malformed input in the middle, a tombstone, a revival, a Bundle with a bad entry
MIXED = [
    "00",
    "01",
    "02",
    "03",
    "07",
    "03",
    "11",
    "10",
    "06",
    "04",
    "fhir/bundle-collection-partial.json",
    "05",
    "hl7v2/err-missing-patient-id.hl7",
    "12",
    "12",
    "hl7v2/mdm-t02-v25.hl7",
    "08",
    "hl7v2/batch-fhs-bhs-v25.hl7",
]


class CountingStore(InMemoryStore):
    """The in-memory store, counting mark calls; hooks run before a mark call if set."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.before: dict[str, list[Callable[[], object]]] = {}

    def _hook(self, name: str) -> None:
        self.calls.append(name)
        hooks = self.before.get(name)
        if hooks:
            hooks.pop(0)()

    def get_mark(self, key: str) -> bytes | None:
        self._hook("get_mark")
        return super().get_mark(key)

    def get_marks(self, keys: Sequence[str]) -> dict[str, bytes | None]:
        self._hook("get_marks")
        return super().get_marks(keys)

    def compare_and_set_mark(self, key: str, expected: bytes | None, value: bytes) -> bool:
        self._hook("compare_and_set_mark")
        return super().compare_and_set_mark(key, expected, value)

    def compare_and_set_marks(self, items: Sequence[tuple[str, bytes | None, bytes]]) -> list[bool]:
        self._hook("compare_and_set_marks")
        return super().compare_and_set_marks(items)

    def marks(self) -> dict[str, bytes]:
        return dict(self._marks)


def _factory(pseudonyms: Pseudonyms) -> Callable[[], PatientState]:
    made = [0]

    def make() -> PatientState:  # deterministic identities: two runs are comparable
        made[0] += 1
        seed = hashlib.sha256(b"state%d" % made[0]).digest()
        return PatientState(-(1 + seed[0]), pseudonyms("patient", seed), seed)

    return make


def _processor(store: Any, pseudonyms: Pseudonyms) -> Processor:
    return Processor(
        policy=Policy.load(), store=store, pseudonyms=pseudonyms, state_factory=_factory(pseudonyms)
    )


def _items(names: Sequence[str]) -> list[Item]:
    return [(*fixture(n), NOW) for n in names]


def _one_by_one(proc: Processor, items: Sequence[Item]) -> list[list[Outcome] | BaseException]:
    """The documented rule: each item alone, its outcomes confirmed before the next."""
    results: list[list[Outcome] | BaseException] = []
    for raw, hint, now in items:
        try:
            results.append(proc.process(raw, content_hint=hint, now=now))
        except Exception as exc:  # noqa: BLE001 - compared with what process_many returns
            results.append(exc)
        proc.commit(_published(results[-1:]))
    return results


def _view(result: list[Outcome] | BaseException) -> object:
    def one(o: Outcome) -> object:  # the ack token's mark aside: unconfirmed in a batch
        return (o.kind, o.research_key, o.value, o.headers, o.reason_class, o.reason)

    if isinstance(result, BaseException):
        outs = getattr(result, "outcomes", None)
        return (type(result).__name__, None if outs is None else [one(o) for o in outs])
    return [one(o) for o in result]


def _published(results: Sequence[list[Outcome] | BaseException]) -> list[Outcome]:
    outs: list[Outcome] = []
    for r in results:
        outs += getattr(r, "outcomes", None) or [] if isinstance(r, BaseException) else r
    return outs


def test_a_mixed_batch_equals_process_one_by_one() -> None:
    pseudonyms = Pseudonyms(bytes([3]) * 32)  # fixed: equal-time versions order by a keyed hash
    one, many = CountingStore(), CountingStore()
    a, b = _processor(one, pseudonyms), _processor(many, pseudonyms)
    items = _items(MIXED)
    expected = _one_by_one(a, items)
    got = b.process_many(items)
    assert [_view(r) for r in got] == [_view(r) for r in expected]
    kinds = [o.kind for o in _published(got)]
    assert {"context", "publish", "duplicate", "superseded", "tombstone"} <= set(kinds)
    assert isinstance(got[4], InputError) and isinstance(got[10], PartialInput)
    assert getattr(got[10], "outcomes", None)  # the good entries of the Bundle were decided
    assert isinstance(got[12], InputError)
    # one mark read and one compare-and-set transaction for the whole batch
    assert many.calls == ["get_marks", "compare_and_set_marks"]
    # once confirmed, the same marks are stored, and a replay of the batch publishes nothing
    b.commit(_published(got))
    assert many.marks() == one.marks()
    again = b.process_many(items)
    assert [_view(r) for r in again] == [_view(r) for r in _one_by_one(a, items)]
    assert not [o for o in _published(again) if o.kind in ("publish", "tombstone", "held")]


def test_a_batch_split_anywhere_gives_the_same_outcomes() -> None:
    pseudonyms = Pseudonyms(bytes([3]) * 32)  # fixed: equal-time versions order by a keyed hash
    whole = _processor(InMemoryStore(), pseudonyms).process_many(_items(MIXED))
    for cut in (1, 5, 9):
        proc = _processor(InMemoryStore(), pseudonyms)
        first = proc.process_many(_items(MIXED[:cut]))
        # the first part's outputs in flight (the runner's next batch), or confirmed
        flying = {o.research_key for o in _published(first) if o.research_key}
        parts = first + proc.process_many(_items(MIXED[cut:]), flying)
        assert [_view(r) for r in parts] == [_view(r) for r in whole]
        proc = _processor(InMemoryStore(), pseudonyms)
        first = proc.process_many(_items(MIXED[:cut]))
        proc.commit(_published(first))
        parts = first + proc.process_many(_items(MIXED[cut:]))
        assert [_view(r) for r in parts] == [_view(r) for r in whole]


def test_a_lost_compare_and_set_is_decided_again_for_that_key_only() -> None:
    pseudonyms = Pseudonyms(bytes([3]) * 32)  # fixed: equal-time versions order by a keyed hash
    store = CountingStore()
    ours = _processor(store, pseudonyms)
    other = Processor(policy=Policy.load(), store=store, pseudonyms=pseudonyms)
    ours.process_many(_items(["00"]))  # the patient exists: both instances share its state
    seen: list[Outcome] = []
    # another instance publishes the corrected version between our read and our write
    store.before["compare_and_set_marks"] = [lambda: seen.extend(_process(other, "04"))]
    store.calls.clear()
    got = ours.process_many(_items(["03", "11"]))
    assert [o.kind for o in seen] == ["publish"]
    final, fhir = got
    assert isinstance(final, list) and isinstance(fhir, list)
    assert [o.kind for o in final] == ["superseded"]  # decided again against the newer mark
    assert [o.kind for o in fhir] == ["publish"]  # the other key kept its batch decision
    # ours: one read, one write (inside it the other instance's read and write), then the
    # redo reads that key alone, the one-by-one way (superseded: nothing to write)
    assert store.calls == [
        "get_marks",
        "compare_and_set_marks",
        "get_marks",
        "compare_and_set_marks",
        "get_mark",
    ]
    # losing to an OLDER version instead: the redo still publishes, replacing it
    store2 = CountingStore()
    mine = _processor(store2, pseudonyms)
    rival = Processor(policy=Policy.load(), store=store2, pseudonyms=pseudonyms)
    mine.process_many(_items(["00"]))
    lost: list[Outcome] = []
    store2.before["compare_and_set_marks"] = [lambda: lost.extend(_process(rival, "03"))]
    (newer,) = mine.process_many(_items(["04"]))
    assert isinstance(newer, list) and [o.kind for o in newer] == ["publish"]
    assert dict(newer[0].headers)["replaces"] == dict(lost[0].headers)["version"]


def _process(proc: Processor, name: str) -> list[Outcome]:
    raw, hint = fixture(name)
    return proc.process(raw, content_hint=hint, now=NOW)


class FaultyStore(CountingStore):
    """One patient's state cannot be read (a retriable store error), or the first batch
    mark call fails."""

    def __init__(self, bad_patient: str | None = None, fail: Sequence[str] = ()) -> None:
        super().__init__()
        self.bad_patient = bad_patient
        self.fail = list(fail)

    def get_or_create(
        self, authority: str, patient_id: str, factory: Callable[[], PatientState]
    ) -> PatientState:
        if patient_id == self.bad_patient:
            raise KeystoreUnavailable("key store unreachable")
        return super().get_or_create(authority, patient_id, factory)

    def _hook(self, name: str) -> None:
        super()._hook(name)
        if name in self.fail:
            self.fail.remove(name)
            raise KeystoreUnavailable("key store unreachable")


def test_a_retriable_store_error_stays_with_its_item() -> None:
    pseudonyms = Pseudonyms(bytes([3]) * 32)  # fixed: equal-time versions order by a keyed hash
    names = ["03", "hl7v2/mdm-t02-v25.hl7", "11", "04"]  # new identities made in this order
    clean = _processor(CountingStore(), pseudonyms).process_many(_items(names))
    from pipelines.ingest import parse_input

    raw, hint = fixture("11")
    patient = parse_input(raw, content_hint=hint, max_bytes=1 << 20)[0].patient_id
    store = FaultyStore(bad_patient=patient)
    got = _processor(store, pseudonyms).process_many(_items(names))
    assert isinstance(got[2], KeystoreUnavailable) and got[2].retriable
    for i in (0, 1, 3):
        assert _view(got[i]) == _view(clean[i])
    # the store recovers: the retried item is decided as it would have been
    store.bad_patient = None
    proc = _processor(store, pseudonyms)
    (retried,) = proc.process_many(_items(["11"]))
    assert isinstance(retried, list) and [o.kind for o in retried] == ["publish"]


@pytest.mark.parametrize("fail", ["get_marks", "compare_and_set_marks"])
def test_a_failed_batch_mark_call_falls_back_to_one_by_one(fail: str) -> None:
    pseudonyms = Pseudonyms(bytes([3]) * 32)  # fixed: equal-time versions order by a keyed hash
    names = ["03", "11", "04", "hl7v2/mdm-t02-v25.hl7"]
    clean = _processor(CountingStore(), pseudonyms).process_many(_items(names))
    store = FaultyStore(fail=[fail])
    got = _processor(store, pseudonyms).process_many(_items(names))
    assert [_view(r) for r in got] == [_view(r) for r in clean]
    assert "compare_and_set_mark" in store.calls  # the documents wrote their own marks


def test_a_lasting_store_fault_is_every_affected_items_result() -> None:
    pseudonyms = Pseudonyms(bytes([3]) * 32)  # fixed: equal-time versions order by a keyed hash
    store = FaultyStore(fail=["get_marks", "get_mark", "get_mark"])
    got = _processor(store, pseudonyms).process_many(_items(["03", "07", "11", "00"]))
    assert isinstance(got[0], KeystoreUnavailable) and isinstance(got[2], KeystoreUnavailable)
    assert isinstance(got[1], InputError)
    assert isinstance(got[3], list) and [o.kind for o in got[3]] == ["context"]


def test_process_raises_what_process_many_returns() -> None:
    proc = _processor(InMemoryStore(), Pseudonyms(bytes([3]) * 32))
    with pytest.raises(InputError):
        _process(proc, "07")
    raw, hint = fixture("fhir/bundle-collection-partial.json")
    with pytest.raises(PartialInput) as info:
        proc.process(raw, content_hint=hint, now=NOW)
    outcomes = info.value.outcomes
    assert len(outcomes) == 2 and outcomes[0].kind == "publish"  # the Bundle's good entries
    assert proc.process_many([]) == []


class _Proxy:
    """A pure delegating wrapper (like a metrics wrapper): batch calls pass through."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_the_batch_calls_are_used_and_proxies_pass_them_through() -> None:
    """The store protocol names the batch calls: a batch reads and writes its marks with one
    call each, directly or through a delegating wrapper (no capability probing)."""
    pseudonyms = Pseudonyms(bytes([3]) * 32)  # fixed: equal-time versions order by a keyed hash
    direct = CountingStore()
    _processor(direct, pseudonyms).process_many(_items(["03", "11"]))
    assert direct.calls == ["get_marks", "compare_and_set_marks"]
    counted = CountingStore()
    proc = Processor(
        policy=Policy.load(),
        store=_Proxy(counted),  # type: ignore[arg-type]
        pseudonyms=pseudonyms,
        state_factory=_factory(pseudonyms),
    )
    proc.process_many(_items(["03", "11"]))
    assert counted.calls == ["get_marks", "compare_and_set_marks"]


def test_the_encrypted_sqlite_store_gives_the_same_batch(tmp_path: Path) -> None:
    """Through the real store (patients prefetched, marks sealed): the same as one by one."""
    from keystore import Keyring, open_store

    pseudonyms = Pseudonyms(bytes([3]) * 32)
    keyring = Keyring.generate("t")
    one = open_store(f"sqlite:///{tmp_path / 'one.sqlite3'}", keyring)
    many = open_store(f"sqlite:///{tmp_path / 'many.sqlite3'}", keyring)
    try:
        items = _items(MIXED)
        a, b = _processor(one, pseudonyms), _processor(many, pseudonyms)
        expected = _one_by_one(a, items)
        got = b.process_many(items)
        assert [_view(r) for r in got] == [_view(r) for r in expected]
        b.commit(_published(got))
        assert [_view(r) for r in b.process_many(items)] == [
            _view(r) for r in _one_by_one(a, items)
        ]
    finally:
        one.close()
        many.close()


def test_a_redo_that_meets_a_store_fault_is_its_items_result() -> None:
    pseudonyms = Pseudonyms(bytes([3]) * 32)
    store = FaultyStore()
    ours = _processor(store, pseudonyms)
    other = Processor(policy=Policy.load(), store=store, pseudonyms=pseudonyms)
    ours.process_many(_items(["00"]))

    def race_then_fail() -> None:
        _process(other, "04")  # the other instance wins the key …
        store.fail.append("get_mark")  # … and our redo's read of it fails

    store.before["compare_and_set_marks"] = [race_then_fail]
    lost, kept = ours.process_many(_items(["03", "11"]))
    assert isinstance(lost, KeystoreUnavailable) and lost.retriable
    assert isinstance(kept, list) and [o.kind for o in kept] == ["publish"]
