"""commit() acknowledges a batch's marks with one compare-and-set each, from the mark
process() wrote (no read; one transaction on the encrypted store), and falls back to
read-acknowledge-CAS when a mark moved on meanwhile. Checked on the in-memory store (no
batch method) and the encrypted SQLite store (batched), with the real pipeline."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from keystore import Keyring, open_store
from keystore.memory import InMemoryStore
from keystore.pseudonyms import Pseudonyms
from pipelines.outcome import Outcome
from pipelines.policy import Policy
from pipelines.process import Processor

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "versions"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def raw(name: str) -> bytes:
    return next(FIXTURES.glob(f"{name}_*.*")).read_bytes()


@pytest.fixture(scope="module")
def policy() -> Policy:
    return Policy.load()


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemoryStore()
        return
    made = open_store(f"sqlite:///{tmp_path / 'keys.sqlite3'}", Keyring.generate())
    yield made
    made.close()


def make(policy: Policy, store: Any) -> Processor:
    pseudonyms = getattr(store, "pseudonym", None) or Pseudonyms(b"k" * 32)
    return Processor(policy=policy, store=store, pseudonyms=pseudonyms)


def process(proc: Processor, *names: str) -> list[Outcome]:
    outs: list[Outcome] = []
    for name in names:
        outs += proc.process(raw(name), content_hint="hl7v2", now=NOW)
    return outs


def test_versions_of_one_key_acknowledged_in_one_commit(policy: Policy, store: Any) -> None:
    proc = make(policy, store)
    outs = process(proc, "01", "03", "04")  # preliminary, final, corrected: one research key
    assert [o.kind for o in outs] == ["publish", "publish", "publish"]
    assert len({o.research_key for o in outs}) == 1
    proc.commit(outs)  # the first two tokens' marks moved on: they take the slow path
    again = process(make(policy, store), "04", "03", "01")
    assert [o.kind for o in again] == ["duplicate", "duplicate", "duplicate"]


def test_a_token_whose_mark_another_processor_moved_on_is_not_acknowledged(
    policy: Policy, store: Any
) -> None:
    first, second = make(policy, store), make(policy, store)
    final = process(first, "03")
    corrected = process(second, "04")
    first.commit(final)  # its mark is gone: the CAS fails, the re-read shows a newer version
    # the corrected version is still unacknowledged: its replay is redone, not dropped
    redo = process(first, "04")
    assert [o.kind for o in redo] == ["publish"]
    assert redo[0].value == corrected[0].value
    second.commit(corrected)
    assert [o.kind for o in process(first, "04", "03")] == ["duplicate", "duplicate"]


def test_compare_and_set_marks_decides_each_in_order(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'keys.sqlite3'}", Keyring.generate())
    try:
        results = store.compare_and_set_marks(
            [("k", None, b"a"), ("k", b"a", b"b"), ("k", b"a", b"c"), ("j", b"x", b"y")]
        )
        assert results == [True, True, False, False]
        assert store.get_mark("k") == b"b" and store.get_mark("j") is None
        assert store.compare_and_set_mark("k", b"b", b"d")
        assert not store.compare_and_set_mark("k", b"b", b"e")  # the cached seal is not trusted
        assert store.get_mark("k") == b"d"
    finally:
        store.close()


def test_ack_tokens_carry_the_mark_they_wrote_decoded(policy: Policy, store: Any) -> None:
    """commit() starts from ``ack.decoded`` instead of parsing ``ack.mark``: they agree for
    every decision (first versions, replacements, repeats, a retraction)."""
    from pipelines.versions import Mark

    proc = make(policy, store)
    outs = process(proc, "01", "02", "03", "04", "05", "03")
    proc.commit(outs[:2])
    outs += process(proc, "01", "06")
    tokens = [o.ack for o in outs if o.ack is not None]
    assert len(tokens) >= 5
    for token in tokens:
        assert token.decoded is not None and token.mark is not None
        assert Mark.decode(token.mark) == token.decoded
        assert token.decoded.encode() == token.mark
