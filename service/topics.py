"""Creating the service's Kafka topics when ``create_topics`` is on: the one place that does
it, for the runner (input and output topics) and the MLLP gateway (HL7 input, dead letters).
The research topic is compacted (one record per research key); the others use the broker's
defaults. Topics that exist are left as they are."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable

from service.settings import Settings

log = logging.getLogger("deidstream.kafka")


async def ensure_topics(
    settings: Settings, topics: Iterable[str], bootstrap_servers: str | None = None
) -> int:
    """Create those of ``topics`` the broker lacks (``settings.topic_partitions`` partitions,
    ``settings.replication_factor`` replicas); how many were asked for. A topic another
    client creates meanwhile is not an error."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.errors import TopicAlreadyExistsError

    common = settings.kafka_common()
    if bootstrap_servers:
        common["bootstrap_servers"] = bootstrap_servers
    admin = AIOKafkaAdminClient(**common)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = [
            NewTopic(
                name,
                settings.topic_partitions,
                settings.replication_factor,
                topic_configs=(
                    {"cleanup.policy": "compact"} if name == settings.research_topic else {}
                ),
            )
            for name in dict.fromkeys(topics)
            if name not in existing
        ]
        if wanted:
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(wanted)
            log.info("created %d topics", len(wanted))
        return len(wanted)
    finally:
        await admin.close()
