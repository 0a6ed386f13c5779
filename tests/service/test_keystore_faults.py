"""Key-store faults in the runner, no broker: a wrong or missing master key stops the stream
(not ready, retried, never dead-lettered); one record failing authentication is dead-lettered;
several patients in a row failing authentication are a store-wide fault."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from keystore.errors import KeystorePermissionFault, KeystoreReadOnlyFault
from keystore.keyring import Keyring
from pipelines.errors import IntegrityError, KeystoreError, MissingKeyError
from pipelines.outcome import Outcome, OutcomeKind
from service.app import create_app
from service.metrics import Metrics
from service.runner import KEY_FAULT_STREAK, BaseProcessor, Runner, Stopping
from service.settings import Settings
from service.wiring import open_keystore, real_processor_factory

FAST = dict(retry_initial_seconds=0.01, retry_max_seconds=0.02)


@dataclass
class Rec:
    key: bytes
    value: bytes = b"x"
    topic: str = "in.hl7v2"
    partition: int = 0
    offset: int = 0
    timestamp: int = 0
    headers: list[tuple[str, bytes]] = field(default_factory=list)


class Scripted(BaseProcessor):
    """process() raises what ``failing`` says for a patient (the record value), else publishes."""

    def __init__(self) -> None:
        self.failing: dict[bytes, BaseException] = {}
        self.calls = 0

    def process(self, raw: bytes, *, content_hint: str, now: Any) -> list[Outcome]:
        self.calls += 1
        if raw in self.failing:
            raise self.failing[raw]
        return [Outcome(kind=OutcomeKind.PUBLISH, research_key=raw.decode(), value=b"{}")]


def _runner(proc: Any, **over: Any) -> Runner:
    return Runner(Settings(**{**FAST, **over}), Metrics(), lambda: proc)


def _fault(runner: Runner, reason: str) -> float:
    return runner.metrics.value("deidstream_keystore_fault", reason_class=reason)


async def _wait(pred: Any, within: float = 5.0) -> None:
    for _ in range(int(within / 0.01)):
        if pred():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


async def test_one_record_failing_authentication_is_dead_lettered() -> None:
    proc = Scripted()
    proc.failing[b"p1"] = IntegrityError("record failed authentication", record="r1")
    runner = _runner(proc)
    await runner.prepare_processor()
    h = await runner.batches.handle_record(Rec(b"p1", b"p1"))
    assert h.kind == "deadletter"
    assert dict(h.outputs[0].headers)["reason-class"] == b"keystore_integrity"
    assert runner.keystore_fault is None and runner.keystore_ok
    ok = await runner.batches.handle_record(Rec(b"p2", b"p2"))  # the stream goes on
    assert ok.kind == "publish"
    await runner.stop()


async def test_a_streak_of_patients_failing_authentication_stops_the_stream() -> None:
    proc = Scripted()
    for n in range(KEY_FAULT_STREAK):
        proc.failing[b"p%d" % n] = IntegrityError("record failed authentication", record=f"r{n}")
    runner = _runner(proc)
    await runner.prepare_processor()
    for n in range(KEY_FAULT_STREAK - 1):
        assert (
            await runner.batches.handle_record(Rec(b"p%d" % n, b"p%d" % n))
        ).kind == "deadletter"
    last = b"p%d" % (KEY_FAULT_STREAK - 1)
    task = asyncio.create_task(runner.batches.handle_record(Rec(last, last)))
    await _wait(lambda: proc.calls >= KEY_FAULT_STREAK + 3)  # retried, not dead-lettered
    assert not task.done()
    assert runner.keystore_fault == "keystore_integrity" and not runner.keystore_ok
    assert _fault(runner, "keystore_integrity") == 1
    assert runner.counts["deadlettered"] == 0  # nothing acknowledged as dead letter
    del proc.failing[last]  # the operator fixed the key
    h = await asyncio.wait_for(task, 5)
    assert h.kind == "publish" and not h.rejected
    assert runner.keystore_fault is None and runner.keystore_ok
    assert _fault(runner, "keystore_integrity") == 0
    await runner.stop()


async def test_the_same_patient_failing_twice_is_no_streak() -> None:
    proc = Scripted()
    proc.failing[b"p1"] = IntegrityError("record failed authentication", record="r1")
    runner = _runner(proc)
    await runner.prepare_processor()
    for _ in range(KEY_FAULT_STREAK + 1):
        assert (await runner.batches.handle_record(Rec(b"p1", b"p1"))).kind == "deadletter"
    assert runner.keystore_fault is None
    await runner.stop()


async def test_an_unknown_key_id_on_a_record_is_retried_not_dead_lettered() -> None:
    proc = Scripted()
    proc.failing[b"p1"] = MissingKeyError(
        "the master key that sealed this record is not configured", key_id="old"
    )
    runner = _runner(proc)
    app = create_app(runner.settings, runner=runner, start_runner=False)
    await runner.prepare_processor()
    task = asyncio.create_task(runner.batches.handle_record(Rec(b"p1", b"p1")))
    await _wait(lambda: runner.keystore_fault == "missing_key")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        ready = await c.get("/readyz")
    assert ready.status_code == 503
    assert ready.json()["keystore_fault"] == "missing_key"
    assert "keystore_fault:missing_key" in ready.json()["reasons"]
    assert runner.metrics.value("deidstream_retries_total", operation="process") >= 1
    proc.failing.clear()
    assert (await asyncio.wait_for(task, 5)).kind == "publish"
    assert runner.keystore_fault is None
    await runner.stop()


def _other_key_same_id(keyring_text: str) -> str:
    key_id = keyring_text.split(":", 1)[0]
    return f"{key_id}:{base64.b64encode(os.urandom(32)).decode()}"


@pytest.mark.parametrize(
    ("configured", "reason"),
    [
        (lambda a: Keyring.generate().to_text(), "missing_key"),  # another key id
        (_other_key_same_id, "keystore_integrity"),  # the same id, other bytes
    ],
)
async def test_a_store_sealed_under_another_key_never_opens(
    tmp_path: Path, configured: Any, reason: str
) -> None:
    """The real key store: sealed under key A, configured with B → the runner retries the
    open (not ready, fault metric) instead of dying or inventing identities."""
    url = f"sqlite:///{tmp_path / 'ks.sqlite3'}"
    key_a = Keyring.generate().to_text()
    open_keystore(Settings(keystore_url=url, master_key=key_a)).close()
    s = Settings(keystore_url=url, master_key=configured(key_a), **FAST)
    metrics = Metrics()
    runner = Runner(s, metrics, real_processor_factory(s, metrics))
    task = asyncio.create_task(runner.prepare_processor())
    await _wait(
        lambda: runner.metrics.value("deidstream_retries_total", operation="keystore") >= 2,
        within=30,
    )
    assert not task.done() and runner.keystore_fault == reason and not runner.ready
    assert metrics.value("deidstream_keystore_fault", reason_class=reason) == 1
    runner.request_stop()
    with pytest.raises(Stopping):
        await asyncio.wait_for(task, 10)
    await runner.stop()


@pytest.mark.parametrize(
    "error",
    [
        KeystorePermissionFault("PostgreSQL key store operation failed", sqlstate="42501"),
        KeystoreError("could not write patient state: too many concurrent updates"),
        sqlite3.OperationalError("no such table: patients"),  # a raw driver error that escaped
    ],
)
async def test_a_database_fault_is_the_streams_not_the_records(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 14: a key store error that is not one record failing authentication is a fault
    of the stream — retried with backoff, not ready with the reason, one WARNING line and a
    metric per fault — never a dead letter; it clears when the database answers again."""
    caplog.set_level(logging.WARNING, logger="deidstream.runner")
    proc = Scripted()
    proc.failing[b"p1"] = error
    runner = _runner(proc)
    app = create_app(runner.settings, runner=runner, start_runner=False)
    await runner.prepare_processor()
    task = asyncio.create_task(runner.batches.handle_record(Rec(b"p1", b"p1")))
    await _wait(lambda: proc.calls >= 5)
    assert not task.done() and runner.counts["deadlettered"] == 0
    reason = runner.stream_fault
    assert reason is not None and reason.startswith("keystore")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        ready = await c.get("/readyz")
    assert ready.status_code == 503 and ready.json()["keystore_fault"] == reason
    assert runner.metrics.value("deidstream_stream_faults_total", reason_class=reason) == 1
    assert runner.metrics.value("deidstream_keystore_fault", reason_class=reason) == 1
    lines = [r.getMessage() for r in caplog.records if "stream fault (" in r.getMessage()]
    assert len(lines) == 1 and reason in lines[0]  # one line per fault, not per retry
    del proc.failing[b"p1"]  # the privilege is granted back
    assert (await asyncio.wait_for(task, 5)).kind == "publish"
    assert runner.stream_fault is None and runner.keystore_ok
    assert runner.metrics.value("deidstream_keystore_fault", reason_class=reason) == 0
    await runner.stop()


async def test_a_confirmation_failing_on_any_key_store_error_is_retried() -> None:
    """Confirming a batch concerns no record: even a non-retriable key store error there is
    retried (the offsets wait) instead of stopping the runner."""
    proc = Scripted()
    failures = [
        KeystoreError("PostgreSQL key store statement failed"),
        KeystoreReadOnlyFault("read-only", sqlstate="25006"),
    ]
    confirmed: list[Any] = []

    def commit(outcomes: Any) -> None:
        if failures:
            raise failures.pop(0)
        confirmed.extend(outcomes)

    proc.commit = commit  # type: ignore[attr-defined]
    runner = _runner(proc)
    await runner.prepare_processor()
    h = await runner.batches.handle_record(Rec(b"p1", b"p1"))
    await runner.delivery.confirm([h])
    assert not failures and len(confirmed) == 1
    assert runner.metrics.value("deidstream_retries_total", operation="confirm") == 2
    assert runner.stream_fault is None
    await runner.stop()
