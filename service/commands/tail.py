"""``deidstream tail TOPIC``: print what a subscriber receives, one JSON line per record."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Iterable
from typing import Annotated, Any

import orjson
import typer

from service.commands.options import BootstrapServers


def _text(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def record_json(record: Any) -> dict[str, Any]:
    """key, headers and value (parsed when it is JSON; null for a tombstone)."""
    value: Any = None
    if record.value is not None:
        try:
            value = orjson.loads(record.value)
        except orjson.JSONDecodeError:
            value = _text(record.value)
    return {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": _text(record.key),
        "headers": {k: _text(v) for k, v in record.headers},
        "value": value,
    }


def missing_topic(topic: str, existing: Iterable[str], bootstrap: str) -> str:
    """One line: the topic is not on the broker (and the closest name that is)."""
    import difflib

    names = sorted(t for t in existing if not t.startswith("__"))
    close = difflib.get_close_matches(topic, names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"topic {topic!r} does not exist on {bootstrap}{hint}"


async def tail(
    bootstrap: str,
    topic: str,
    *,
    max_records: int | None,
    idle_seconds: float,
    emit: Callable[[dict[str, Any]], None],
    security: dict[str, Any] | None = None,
) -> int:
    """Read TOPIC from the beginning (no consumer group: nothing committed, no join wait)
    until ``max_records`` or ``idle_seconds`` without a new record. A topic the broker does
    not have (after ``idle_seconds`` of looking) is a :class:`ReplayError`."""
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.errors import KafkaError

    from service.commands.replay import ReplayError, kafka_failure

    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, **(security or {})
    )
    try:
        await consumer.start()
    except (KafkaError, OSError, TimeoutError) as exc:
        await consumer.stop()  # a failed start leaves sockets and tasks behind
        raise ReplayError(kafka_failure(exc, bootstrap)) from None
    count = 0
    try:
        deadline = time.monotonic() + idle_seconds
        parts = consumer.partitions_for_topic(topic)
        while not parts and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            await consumer._client.force_metadata_update()  # noqa: SLF001 - topic may be new
            parts = consumer.partitions_for_topic(topic)
        if not parts:
            raise ReplayError(missing_topic(topic, consumer._client.cluster.topics(), bootstrap))  # noqa: SLF001
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        last = time.monotonic()
        while time.monotonic() - last < idle_seconds:
            batch = await consumer.getmany(timeout_ms=200)
            for recs in batch.values():
                for rec in recs:
                    emit(record_json(rec))
                    count += 1
                    last = time.monotonic()
                    if max_records is not None and count >= max_records:
                        return count
        return count
    finally:
        await consumer.stop()


def register(app: typer.Typer) -> None:
    @app.command("tail")
    def tail_command(
        topic: Annotated[str, typer.Argument(help="Kafka topic to read")],
        max_records: Annotated[int | None, typer.Option("--max", help="Stop after N")] = None,
        timeout: Annotated[
            float, typer.Option("--timeout", help="Stop after S seconds with no new record")
        ] = 5.0,
        bootstrap_servers: BootstrapServers = None,
    ) -> None:
        """Print TOPIC's records from the beginning, one JSON line each (key, headers, value)."""
        from service.settings import settings_or_exit

        settings = settings_or_exit()

        def emit(obj: dict[str, Any]) -> None:
            sys.stdout.write(orjson.dumps(obj).decode() + "\n")
            sys.stdout.flush()

        from service.commands.replay import ReplayError, quiet_kafka_client
        from service.startup import brokers_or_exit

        quiet_kafka_client()
        bootstrap = bootstrap_servers or settings.bootstrap_servers
        brokers_or_exit(bootstrap, "tail")
        try:
            asyncio.run(
                tail(
                    bootstrap,
                    topic,
                    max_records=max_records,
                    idle_seconds=timeout,
                    emit=emit,
                    security=settings.kafka_security(),
                )
            )
        except ReplayError as exc:
            typer.echo(f"deidstream tail: {exc}", err=True)
            raise typer.Exit(1) from None
