"""Produce to and read back from a real broker in tests (bounded volumes, bounded time)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import uuid
from collections.abc import Iterable
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition


def unique(prefix: str) -> str:
    return f"{prefix}.{uuid.uuid4().hex[:8]}"


async def produce(
    bootstrap: str, topic: str, messages: Iterable[tuple[bytes | None, bytes]]
) -> None:
    # room for a large note (a test of the per-document budget)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", max_request_size=8 * 1024 * 1024
    )
    await producer.start()
    try:
        futs = [await producer.send(topic, value, key=key) for key, value in messages]
        await asyncio.gather(*futs)
    finally:
        await producer.stop()


async def read_all(
    bootstrap: str,
    topic: str,
    *,
    expect: int | None = None,
    within: float = 20.0,
    settle: float = 0.5,
) -> list[Any]:
    """Every record of ``topic`` from the beginning. Waits until ``expect`` records (or
    ``within`` seconds), then ``settle`` seconds more to catch any extra (duplicate) records."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        deadline = time.monotonic() + within
        parts: set[int] | None = None
        while time.monotonic() < deadline:
            parts = consumer.partitions_for_topic(topic)
            if parts:
                break
            await consumer._client.force_metadata_update()  # noqa: SLF001
            await asyncio.sleep(0.1)
        if not parts:
            return []
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        records: list[Any] = []
        settled_at: float | None = None
        if expect is None:
            ends = await consumer.end_offsets(tps)
            while time.monotonic() < deadline:
                positions = [await consumer.position(tp) for tp in tps]
                if all(pos >= ends[tp] for pos, tp in zip(positions, tps, strict=True)):
                    return records
                batch = await consumer.getmany(timeout_ms=200)
                for recs in batch.values():
                    records.extend(recs)
            return records
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=200)
            for recs in batch.values():
                records.extend(recs)
            if expect is not None and len(records) >= expect:
                settled_at = settled_at or time.monotonic()
                if time.monotonic() - settled_at >= settle:
                    break
        return records
    finally:
        await consumer.stop()


def toy(patient: str, doc: str, v: int = 1, text: str = "note", **extra: Any) -> bytes:
    return json.dumps({"patient": patient, "doc": doc, "v": v, "text": text, **extra}).encode()


def headers_of(record: Any) -> dict[str, str]:
    return {k: v.decode() for k, v in record.headers}


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False
