"""``deidstream review stats`` and ``add-user`` against a real SQLite key store."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner

from keystore import Keyring, open_store
from pipelines.phi.detector import Detector
from pipelines.review import Decision, DecisionKind, ReviewQueue, Role
from pipelines.spans import Category
from service.cli import command
from service.review.auth import check_login

from .conftest import held_document
from .test_queue import BLIND


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Keyring]:
    key = Keyring.generate("cli")
    url = f"sqlite:///{tmp_path / 'ks.sqlite3'}"
    monkeypatch.setenv("DEIDSTREAM_KEYSTORE_URL", url)
    monkeypatch.setenv("DEIDSTREAM_MASTER_KEY", key.to_text())
    return url, key


def test_stats_prints_counts_and_kappas(env: tuple[str, Keyring]) -> None:
    store = open_store(*env)
    queue = ReviewQueue(store, reviews_per_item=3)
    queue.enqueue(
        held_document(), Detector(BLIND), coordinates="t:0:1", held_reason=("leak_guard", "r")
    )
    items = [i for i in queue.page(Role.REVIEWER, limit=50)]
    whole = next(i for i in items if i.candidate is None)
    spans = [i for i in items if i.candidate is not None]
    # three reviewers on the whole-note item and one span item (note scope: its twin too)
    votes = {"ana": ("not_phi", "not_phi"), "bob": ("not_phi", "unsure"), "cy": ("phi", "not_phi")}
    for reviewer, (first, second) in votes.items():
        for item, kind in ((whole, first), (spans[0], second)):
            k = DecisionKind(kind)
            queue.decide(
                Decision(
                    item.id,
                    reviewer,
                    Role.REVIEWER,
                    k,
                    None if k is not DecisionKind.PHI else Category.NAME_OTHER,
                )
            )
    store.close()
    result = CliRunner().invoke(command(), ["review", "stats"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["reviewer", "decided", "phi", "not_phi", "unsure", "refer"]
    assert any(line.split()[:2] == ["ana", str(1 + 2)] for line in lines)
    assert "ana / bob:" in result.output and "bob / cy:" in result.output
    assert "Fleiss' kappa (all reviewers):" in result.output
    assert "3 items with two or more ratings" in result.output
    assert "held documents: open 1, releasing 0, released 0, held 0" in result.output
    assert "Marbry" not in result.output and "Quillon" not in result.output


def test_add_user_hashes_the_password(
    env: tuple[str, Keyring], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEIDSTREAM_REVIEW_PASSWORD", "a long enough secret")
    result = CliRunner().invoke(command(), ["review", "add-user", "eve", "--role", "expert"])
    assert result.exit_code == 0, result.output
    monkeypatch.setenv("DEIDSTREAM_REVIEW_PASSWORD", "short")
    refused = CliRunner().invoke(command(), ["review", "add-user", "bob"])
    assert refused.exit_code == 2 and "12 characters" in refused.output
    store = open_store(*env)
    queue = ReviewQueue(store)
    assert check_login(queue, "eve", "a long enough secret") is Role.EXPERT
    assert check_login(queue, "eve", "wrong") is None
    assert check_login(queue, "bob", "short") is None
    role, stored = queue.db.account("eve")  # type: ignore[misc]
    assert "a long enough secret" not in stored
    store.close()


def test_sync_queues_a_held_input_once(
    env: tuple[str, Keyring], tmp_path: Path, tansu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`deidstream review sync` against a real broker: the input on its topic and its held
    record (headers as the service writes them) → the held document enters the queue with
    its coordinates and reason; a second pass queues nothing; no note text is printed."""
    from datetime import UTC, datetime

    from hl7_gen import report
    from kafka_helpers import produce, read_all, unique

    from service.runner.outputs import Outputs

    base = unique("rvsync")
    blind = tmp_path / "blind.toml"  # finds nothing: the held note's names stay candidates
    blind.write_text("[recognizers]\n", encoding="utf-8")
    for name, value in (
        ("BOOTSTRAP_SERVERS", tansu.bootstrap_servers),
        ("HELD_TOPIC", f"{base}.held"),
        ("POLICY_FILE", str(blind)),
        ("INPUT_TOPICS", f"{base}.hl7v2"),
    ):
        monkeypatch.setenv(f"DEIDSTREAM_{name}", value)
    body = report(5)
    asyncio.run(produce(tansu.bootstrap_servers, f"{base}.hl7v2", [(b"k", body)]))
    (rec,) = asyncio.run(read_all(tansu.bootstrap_servers, f"{base}.hl7v2", expect=1))
    headers = Outputs.coordinates(
        cast(Any, None), rec, "leak_guard", "leak guard: MRN=1", datetime.now(UTC)
    )
    asyncio.run(_produce_held(tansu.bootstrap_servers, f"{base}.held", headers))

    first = CliRunner().invoke(command(), ["review", "sync"])
    assert first.exit_code == 0, first.output
    assert "queued 1 held document(s)" in first.output
    again = CliRunner().invoke(command(), ["review", "sync"])
    assert again.exit_code == 0 and "queued 0 held document(s)" in again.output

    pid = body.split(b"PID|")[1].split(b"\r")[0].decode()
    family, given = pid.split("|")[4].split("^")[:2]
    for secret in (family, given, "700005"):
        assert secret not in first.output + again.output
    with open_store(*env) as store:
        queue = ReviewQueue(store)
        coords = f"{base}.hl7v2:{rec.partition}:{rec.offset}"
        assert queue.has_document(coords)
        (doc,) = queue.db.docs("open")
        assert doc.coordinates == coords and doc.reason_class == "leak_guard"
        items = queue.page(Role.REVIEWER, limit=50)
        whole = [i for i in items if i.candidate is None]
        assert len(whole) == 1 and whole[0].patient_id == "700005"
        assert any(i.string == family for i in items if i.candidate is not None)


async def _produce_held(bootstrap: str, topic: str, headers: list[tuple[str, bytes]]) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        await (await producer.send(topic, b"{}", headers=headers))
    finally:
        await producer.stop()
