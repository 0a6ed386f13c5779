"""The Kafka clients of the runner: the producer (``acks=all``, no idempotence — Tansu refuses
it), the topics it creates when asked, and the group consumer."""

from __future__ import annotations

import contextlib
import logging

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from service.runner.state import RunnerState
from service.settings import Settings

log = logging.getLogger("deidstream.runner")


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


class Clients(RunnerState):
    """Connecting the producer and creating topics (both retried by the caller)."""

    async def _connect_producer(self) -> None:
        s = self.settings
        if self._producer is not None:
            with contextlib.suppress(Exception):
                await self._producer.stop()
        self._producer = AIOKafkaProducer(
            acks="all",
            enable_idempotence=False,  # Tansu refuses idempotent producers and transactions
            linger_ms=2,
            max_batch_size=s.producer_batch_bytes,
            max_request_size=max(1024 * 1024, 2 * s.max_message_bytes),
            **s.kafka_common(),
        )
        try:
            await self._producer.start()
        except BaseException:
            with contextlib.suppress(Exception):
                await self._producer.stop()
            self._producer = None
            raise

    async def _ensure_topics(self) -> None:
        s = self.settings
        admin = AIOKafkaAdminClient(**s.kafka_common())
        await admin.start()
        try:
            existing = set(await admin.list_topics())
            wanted = [
                NewTopic(
                    name,
                    s.topic_partitions,
                    s.replication_factor,
                    topic_configs={"cleanup.policy": "compact"} if name == s.research_topic else {},
                )
                for name in (*s.input_topics, *s.output_topics())
                if name not in existing
            ]
            if wanted:
                with contextlib.suppress(TopicAlreadyExistsError):
                    await admin.create_topics(wanted)
                log.info("created %d topics", len(wanted))
        finally:
            await admin.close()

