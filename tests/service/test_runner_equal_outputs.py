"""The batched runner publishes exactly what the one-record-per-batch runner publishes: the
real pipeline on identical copies of a warmed SQLite key store, dev-corpus notes as HL7 v2
and FHIR, every seventh message sent twice in a row (repeats inside a batch), compared
record by record (topic, key, value, headers; the wall-clock first-seen times aside) — with
``process_many`` and with ``process`` for each."""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from aiokafka import TopicPartition

from keystore.keyring import Keyring
from pipelines.outcome import Outcome
from service.metrics import Metrics
from service.runner import BaseProcessor, Processor, Runner
from service.settings import Settings
from service.wiring import real_processor_factory

pytestmark = [pytest.mark.corpus, pytest.mark.slow]
TP = TopicPartition("clinical.in", 0)
CTYPE = {"clinical.hl7v2": b"x-application/hl7-v2+er7", "clinical.fhir": b"application/fhir+json"}


@dataclass
class Rec:
    offset: int
    key: bytes
    value: bytes
    headers: list[tuple[str, bytes]]
    topic: str = TP.topic
    partition: int = TP.partition
    timestamp: int = 0


class Producer:
    def __init__(self) -> None:
        self.sent: list[tuple[Any, ...]] = []

    async def send(
        self, topic: str, value: bytes | None, *, key: bytes | None, headers: Any
    ) -> asyncio.Future[Any]:
        kept = tuple((k, v) for k, v in headers if k != "first-seen")
        if value and topic.endswith("held"):
            value = re.sub(rb'"first_seen":"[^"]*"', b'"first_seen":"-"', value)
        self.sent.append((topic, key, value, kept))
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut


class Consumer:
    def assignment(self) -> set[TopicPartition]:
        return {TP}

    async def commit(self, offsets: Any) -> None:
        return None


class EachProcessor(BaseProcessor):
    """The real processor without its own ``process_many``: ``process`` for each record
    (:func:`service.runner.process_each`), everything else the real one's."""

    def __init__(self, inner: Processor) -> None:
        self.inner = inner

    def process(self, raw: bytes, *, content_hint: str, now: datetime) -> Sequence[Outcome]:
        return self.inner.process(raw, content_hint=content_hint, now=now)

    def commit(self, outcomes: Sequence[Outcome]) -> None:
        self.inner.commit(outcomes)

    def sent_marks(self, marks: Sequence[str]) -> set[str]:
        return self.inner.sent_marks(marks)

    def mark_sent(self, marks: Sequence[str]) -> None:
        self.inner.mark_sent(marks)

    def diagnose(self, error: BaseException, raw: bytes) -> Mapping[str, str]:
        return self.inner.diagnose(error, raw)

    def close(self) -> None:
        self.inner.close()


async def _publish_all(
    url: str, key: str, recs: list[Rec], batch: int, many: bool
) -> list[tuple[Any, ...]]:
    s = Settings(keystore_url=url, master_key=key, create_topics=False)
    metrics = Metrics()
    factory = real_processor_factory(s, metrics)

    def build() -> Processor:
        proc = factory()
        return proc if many else EachProcessor(proc)

    runner = Runner(s, metrics, build)
    producer = Producer()
    runner.clients.producer = producer  # type: ignore[assignment]
    runner.clients.consumer = Consumer()  # type: ignore[assignment]
    runner.health.broker_ok = True
    await runner.prepare_processor()
    for i in range(0, len(recs), batch):
        await runner.handle_batch({TP: recs[i : i + batch]})
    await runner.drain()
    await runner.stop()
    return producer.sent


@pytest.mark.parametrize("many", [True, False], ids=["process_many", "process_each"])
async def test_batched_outputs_equal_one_by_one(
    physionet_dev: Path, tmp_path: Path, many: bool
) -> None:
    from bench.stream import build_messages
    from pipelines.corpus import Note, load_patient_names, read_notes

    notes = [
        n
        for n in read_notes(physionet_dev / "id.text", "physionet")
        if isinstance(n, Note) and n.text.strip()
    ][:120]
    names = load_patient_names(physionet_dev / "pid_patientname.txt")
    key = Keyring.generate().to_text()

    def recs(start: int, repeat: bool) -> list[Rec]:
        out: list[Rec] = []
        for i, m in enumerate(build_messages(notes, names, start, len(notes))):
            for _ in range(2 if repeat and i % 7 == 0 else 1):
                out.append(Rec(len(out), m.key, m.value, [("content-type", CTYPE[m.topic])]))
        return out

    warm = tmp_path / "warm.sqlite3"  # every patient's state (date shift…) exists already
    await _publish_all(f"sqlite:///{warm}", key, recs(0, False), 64, many)
    second_cycle = recs(len(notes), True)  # the same patients, new visits
    sent = {}
    for name, batch in (("one", 1), ("batched", 48)):
        copy = tmp_path / f"{name}.sqlite3"
        shutil.copy(warm, copy)
        sent[name] = await _publish_all(f"sqlite:///{copy}", key, second_cycle, batch, many)
    assert len(sent["one"]) == len(notes)  # repeats dropped
    assert sent["batched"] == sent["one"]
