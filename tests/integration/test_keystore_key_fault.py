"""A wrong master key against a real broker: the stream stops (nothing published, nothing
dead-lettered, nothing committed, not ready); with the right key everything is published."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from hl7_gen import report
from kafka_helpers import produce, read_all
from test_stream_pipeline import pipeline_settings

from keystore.keyring import Keyring
from service.broker import EmbeddedBroker
from service.metrics import Metrics
from service.runner import Runner
from service.settings import Settings
from service.wiring import open_keystore, real_processor_factory

pytestmark = pytest.mark.integration


async def _committed(bootstrap: str, group: str, topics: tuple[str, ...]) -> list[int | None]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        out = []
        for topic in topics:
            for p in consumer.partitions_for_topic(topic) or ():
                out.append(await consumer.committed(TopicPartition(topic, p)))
        return out
    finally:
        await consumer.stop()


async def test_wrong_master_key_stops_then_the_right_one_publishes(
    tansu: EmbeddedBroker, tmp_path: Path
) -> None:
    key_a = Keyring.generate().to_text()
    good = pipeline_settings(tansu, tmp_path, master_key=key_a)
    open_keystore(good).close()  # the store exists, sealed under key A
    wrong = Settings(**{**good.model_dump(), "master_key": Keyring.generate().to_text()})
    docs = [(f"{700000 + n}".encode(), report(n, 1)) for n in range(6)]
    await produce(good.bootstrap_servers, good.input_topics[0], docs)

    metrics = Metrics()
    runner = Runner(wrong, metrics, real_processor_factory(wrong, metrics))
    runner.start_background()
    try:
        loop = asyncio.get_running_loop()
        end = loop.time() + 30
        while metrics.value("deidstream_retries_total", operation="keystore") < 3:
            assert loop.time() < end, "no key store retries"
            await asyncio.sleep(0.1)
        await asyncio.sleep(2.0)  # time in which a wrong runner would have dead-lettered
        assert not runner.ready and runner.keystore_fault == "missing_key"
        assert metrics.value("deidstream_keystore_fault", reason_class="missing_key") == 1
    finally:
        await runner.stop()
    assert await read_all(good.bootstrap_servers, good.research_topic, within=3) == []
    assert await read_all(good.bootstrap_servers, good.deadletter_topic, within=3) == []
    committed = await _committed(good.bootstrap_servers, good.group_id, good.input_topics)
    assert all(c is None for c in committed), committed

    metrics = Metrics()
    runner = Runner(good, metrics, real_processor_factory(good, metrics))
    runner.start_background()
    try:
        loop = asyncio.get_running_loop()
        end = loop.time() + 60
        while runner.counts["published"] + runner.counts["held"] < len(docs):
            assert loop.time() < end, f"not all published: {dict(runner.counts)}"
            await asyncio.sleep(0.1)
        assert runner.ready and runner.keystore_fault is None
    finally:
        await runner.stop()
    research = await read_all(good.bootstrap_servers, good.research_topic, expect=len(docs))
    held = await read_all(good.bootstrap_servers, good.held_topic, within=2)
    assert len({r.key for r in research}) + len(held) == len(docs)
    assert await read_all(good.bootstrap_servers, good.deadletter_topic, within=2) == []
