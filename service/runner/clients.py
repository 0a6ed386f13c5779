"""The Kafka clients of the runner: the producer (``acks=all``, no idempotence — Tansu refuses
it), the topics it creates when asked (:mod:`service.topics`), and the group consumer."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import struct
from collections.abc import Sequence

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from service.settings import Settings
from service.topics import ensure_topics

log = logging.getLogger("deidstream.runner")

_M = 0x5BD1E995
_WORDS = struct.Struct("<I")


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 of a record key, equal to ``aiokafka.partitioner.murmur2`` (the Java
    client's ``Utils.murmur2``) for every input, at a fraction of its cost: the 4-byte words
    unpacked at once and one mask per product instead of one per operation (aiokafka's pure
    Python one runs on the event loop once per output: figures in bench/README.md)."""
    length = len(data)
    h = 0x9747B28C ^ length
    whole = length & ~3
    for (k,) in _WORDS.iter_unpack(data[:whole]):
        k = (k * _M) & 0xFFFFFFFF
        k = ((k ^ (k >> 24)) * _M) & 0xFFFFFFFF
        h = ((h * _M) & 0xFFFFFFFF) ^ k
    extra = length & 3
    if extra:
        if extra == 3:
            h ^= data[whole + 2] << 16
        if extra >= 2:
            h ^= data[whole + 1] << 8
        h = ((h ^ data[whole]) * _M) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * _M) & 0xFFFFFFFF
    return h ^ (h >> 15)


def partition_for(
    key: bytes | None, all_partitions: Sequence[int], available: Sequence[int]
) -> int:
    """aiokafka's ``DefaultPartitioner`` (the Java client's for keyed records) with the fast
    :func:`murmur2`: a keyed record goes to the same partition as before."""
    if key is None:
        return random.choice(available or all_partitions)  # noqa: S311 - not for secrets
    return all_partitions[(murmur2(key) & 0x7FFFFFFF) % len(all_partitions)]


def new_consumer(s: Settings) -> AIOKafkaConsumer:
    """The group member: manual commits, reading from the earliest offset of a new group."""
    return AIOKafkaConsumer(
        group_id=s.group_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=s.session_timeout_ms,
        heartbeat_interval_ms=s.heartbeat_interval_ms,
        fetch_max_wait_ms=s.fetch_max_wait_ms,
        max_poll_interval_ms=s.max_poll_interval_ms,
        max_partition_fetch_bytes=s.max_message_bytes + 65536,
        fetch_max_bytes=max(16 * 1024 * 1024, 2 * s.max_message_bytes),
        **s.kafka_common(),
    )


class Clients:
    """The producer and the group consumer (None until connected; the runner's tests put
    doubles here), connecting the producer and creating topics (both retried by the
    caller)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self.producer: AIOKafkaProducer | None = None
        self.consumer: AIOKafkaConsumer | None = None

    def need_producer(self) -> AIOKafkaProducer:
        if self.producer is None:
            raise RuntimeError("the runner is not started")
        return self.producer

    def need_consumer(self) -> AIOKafkaConsumer:
        if self.consumer is None:
            raise RuntimeError("the runner is not started")
        return self.consumer

    def assigned(self) -> bool:
        """Does the consumer have partitions assigned?"""
        return bool(self.consumer and self.consumer.assignment())

    def new_consumer(self) -> AIOKafkaConsumer:
        self.consumer = new_consumer(self._settings)
        return self.consumer

    async def connect_producer(self) -> None:
        s = self._settings
        if self.producer is not None:
            with contextlib.suppress(Exception):
                await self.producer.stop()
        self.producer = AIOKafkaProducer(
            acks="all",
            enable_idempotence=False,  # Tansu refuses idempotent producers and transactions
            partitioner=partition_for,
            linger_ms=2,
            max_batch_size=s.producer_batch_bytes,
            max_request_size=max(1024 * 1024, 2 * s.max_message_bytes),
            **s.kafka_common(),
        )
        try:
            await self.producer.start()
        except BaseException:
            with contextlib.suppress(Exception):
                await self.producer.stop()
            self.producer = None
            raise

    async def ensure_topics(self) -> None:
        s = self._settings
        await ensure_topics(s, (*s.input_topics, *s.output_topics()))

    async def after_outage(self) -> None:
        """The broker answers again: it may be a new one that lost its topics (a broker with
        memory storage, a re-created cluster). Create them again before publishing — Tansu
        acknowledges records for a topic it no longer has and drops them."""
        if not self._settings.create_topics:
            return
        try:
            timeout = self._settings.request_timeout_ms / 1000
            await asyncio.wait_for(self.ensure_topics(), timeout)
        except Exception as exc:  # noqa: BLE001 - retried on the next outage/probe
            log.warning("re-creating topics after an outage failed: %s", type(exc).__name__)

    async def close(self) -> None:
        """Leave the group and stop both clients (errors are ignored: closing)."""
        consumer, self.consumer = self.consumer, None
        producer, self.producer = self.producer, None
        if consumer is not None:
            with contextlib.suppress(Exception):
                await consumer.stop()
        if producer is not None:
            with contextlib.suppress(Exception):
                await producer.stop()
