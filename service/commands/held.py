"""``deidstream held list`` / ``deidstream held release COORDINATES...``: the documents the
leak guard held back, and sending them through again once the cause is fixed.

A held record names its input by coordinates (``source-topic``, ``source-partition``,
``source-offset`` headers), printed here as ``TOPIC:PARTITION:OFFSET``. ``release`` reads the
input at those coordinates (or, when the held topic is declared secure, the input bytes the
held record carries) and produces it to its input topic again — same partition (the patient's
order), key and headers, plus ``released-from``. A held version consumes nothing (:mod:`pipelines.versions`): the service
decides it again — published once the detector or policy is fixed, held again while it is not.
Only coordinates that are on the held topic can be released. Nothing here prints content.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from pipelines.errors import DeidstreamError
from service.commands.options import BootstrapServers

RELEASED_HEADER = "released-from"


class HeldError(DeidstreamError):
    """One line for the operator (no content), never a traceback."""

    reason_class = "held_command"


@dataclass(frozen=True, slots=True, order=True)
class Coordinates:
    topic: str
    partition: int
    offset: int

    def __str__(self) -> str:
        return f"{self.topic}:{self.partition}:{self.offset}"

    @classmethod
    def parse(cls, text: str) -> Coordinates:
        parts = text.rsplit(":", 2)
        if len(parts) != 3 or not parts[0]:
            raise HeldError("coordinates must be TOPIC:PARTITION:OFFSET")
        topic, partition, offset = parts
        if not (
            partition.isascii()
            and partition.isdigit()
            and offset.isascii()
            and offset.isdigit()
            and len(partition) < 10
            and len(offset) < 20
        ):
            raise HeldError(
                "coordinates must be TOPIC:PARTITION:OFFSET (partition and offset are numbers)"
            )
        return cls(topic, int(partition), int(offset))


@dataclass(frozen=True, slots=True)
class HeldEntry:
    coordinates: Coordinates
    reason_class: str
    reason: str
    first_seen: str
    held_at: tuple[int, int]  # (partition, offset) of the held record itself
    value: bytes | None  # the input bytes, on a secure held topic only
    released_from: str = ""  # the coordinates it was released from, when it was
    research_key: str = ""  # the held record's key: the report's research key


def _headers(record: Any) -> dict[str, str]:
    return {k: (v or b"").decode("utf-8", "replace") for k, v in record.headers or ()}


def entry_of(record: Any, secure: bool) -> HeldEntry | None:
    h = _headers(record)
    try:
        coords = Coordinates(h["source-topic"], int(h["source-partition"]), int(h["source-offset"]))
    except (KeyError, ValueError):
        return None
    return HeldEntry(
        coords,
        h.get("reason-class", ""),
        h.get("reason", ""),
        h.get("first-seen", ""),
        (record.partition, record.offset),
        record.value if secure else None,
        h.get(RELEASED_HEADER, ""),
        (getattr(record, "key", None) or b"").decode("utf-8", "replace"),
    )


async def _consumer(bootstrap: str, security: dict[str, Any] | None) -> Any:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import KafkaError

    from service.commands.replay import kafka_failure

    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        fetch_max_wait_ms=500,
        **(security or {}),
    )
    try:
        await consumer.start()
    except (KafkaError, OSError, TimeoutError) as exc:
        await consumer.stop()
        raise HeldError(kafka_failure(exc, bootstrap)) from None
    return consumer


async def read_held(
    bootstrap: str,
    held_topic: str,
    *,
    secure: bool = False,
    security: dict[str, Any] | None = None,
    within: float = 15.0,
) -> list[HeldEntry]:
    """Every held record of ``held_topic``, oldest first per partition (up to the end
    offsets at the start; ``within`` bounds the whole read)."""
    from aiokafka import TopicPartition

    consumer = await _consumer(bootstrap, security)
    try:
        deadline = time.monotonic() + within
        parts = consumer.partitions_for_topic(held_topic)
        if not parts:
            await consumer._client.force_metadata_update()  # noqa: SLF001 - topic may be new
            parts = consumer.partitions_for_topic(held_topic)
        if not parts:
            return []
        tps = [TopicPartition(held_topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        entries: list[HeldEntry] = []
        while time.monotonic() < deadline:
            positions = [await consumer.position(tp) for tp in tps]
            if all(pos >= ends[tp] for pos, tp in zip(positions, tps, strict=True)):
                return entries
            batch = await consumer.getmany(timeout_ms=500)
            for recs in batch.values():
                entries.extend(e for e in (entry_of(r, secure) for r in recs) if e is not None)
        raise HeldError(f"the held topic {held_topic} was not read to its end in {within:.0f} s")
    finally:
        await consumer.stop()


async def _fetch_input(
    bootstrap: str, coords: Coordinates, security: dict[str, Any] | None, within: float
) -> Any | None:
    """The input record at ``coords``, or None when the topic no longer has it."""
    from aiokafka import TopicPartition

    consumer = await _consumer(bootstrap, security)
    try:
        tp = TopicPartition(coords.topic, coords.partition)
        consumer.assign([tp])
        start = (await consumer.beginning_offsets([tp]))[tp]
        end = (await consumer.end_offsets([tp]))[tp]
        if not start <= coords.offset < end:
            return None
        consumer.seek(tp, coords.offset)
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            batch = await consumer.getmany(tp, timeout_ms=500)
            for rec in batch.get(tp, ()):
                if rec.offset == coords.offset:
                    return rec
                if rec.offset > coords.offset:
                    return None  # compacted away
        raise HeldError(f"the input at {coords} was not read in {within:.0f} s")
    finally:
        await consumer.stop()


# what release sends for one held input: its coordinates, key, value and headers
_Release = tuple[Coordinates, bytes | None, bytes, list[tuple[str, bytes]]]


async def _to_release(
    bootstrap: str,
    held: dict[Coordinates, HeldEntry],
    wanted: list[Coordinates],
    security: dict[str, Any] | None,
    within: float,
) -> list[_Release]:
    """What to send again for each wanted input (once each): the input record as it is on
    its topic, else the input bytes a secure held record carries; refused (``HeldError``)
    when neither is there."""
    records: list[_Release] = []
    for coords in dict.fromkeys(wanted):
        rec = await _fetch_input(bootstrap, coords, security, within)
        if rec is not None:
            headers = [(k, v) for k, v in rec.headers or () if k != RELEASED_HEADER]
            records.append((coords, rec.key, rec.value or b"", headers))
        elif held[coords].value:
            records.append((coords, None, held[coords].value or b"", []))
        else:
            raise HeldError(
                f"the input at {coords} is no longer on its topic (retention) and "
                "the held topic is not secure: re-send it from the source"
            )
    return records


async def _produce(
    bootstrap: str,
    records: list[_Release],
    security: dict[str, Any] | None,
    max_request_size: int,
) -> None:
    """Send every record to its input topic and partition, marked ``released-from``; wait
    for every acknowledgement."""
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError

    from service.commands.replay import kafka_failure

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        max_request_size=max_request_size,
        **(security or {}),
    )
    try:
        await producer.start()
        futures = [
            await producer.send(
                c.topic,
                value,
                key=key,
                partition=c.partition,
                headers=[*headers, (RELEASED_HEADER, str(c).encode())],
            )
            for c, key, value, headers in records
        ]
        await asyncio.gather(*futures)
    except (KafkaError, OSError, TimeoutError) as exc:
        raise HeldError(kafka_failure(exc, bootstrap)) from None
    finally:
        await producer.stop()


async def release(
    bootstrap: str,
    held_topic: str,
    wanted: list[Coordinates],
    *,
    secure: bool = False,
    security: dict[str, Any] | None = None,
    max_request_size: int = 4 * 1024 * 1024,
    within: float = 15.0,
) -> list[Coordinates]:
    """Produce each held input again to its input topic; returns what was released. Refuses
    (nothing sent) coordinates that are not on the held topic or whose input is gone."""
    held = {
        e.coordinates: e
        for e in await read_held(
            bootstrap, held_topic, secure=secure, security=security, within=within
        )
    }
    unknown = [str(c) for c in wanted if c not in held]
    if unknown:
        raise HeldError(f"not on the held topic {held_topic}: {', '.join(unknown)}")
    records = await _to_release(bootstrap, held, wanted, security, within)
    await _produce(bootstrap, records, security, max_request_size)
    return [c for c, *_ in records]


def list_lines(entries: list[HeldEntry], fate: dict[Coordinates, str] | None = None) -> list[str]:
    """One line per held input (the latest held record of each), oldest first. An input that
    was released and held again says so on both lines (``released, held again as …`` /
    ``released from …``); with ``fate`` (:mod:`service.commands.held_fate`) a last column
    says what became of it."""
    latest: dict[Coordinates, tuple[HeldEntry, int]] = {}
    again_as: dict[str, str] = {}
    for entry in entries:
        seen = latest.get(entry.coordinates)
        latest[entry.coordinates] = (entry, (seen[1] if seen else 0) + 1)
        if entry.released_from:
            again_as[entry.released_from] = str(entry.coordinates)
    lines = []
    for coords in sorted(latest):
        entry, times = latest[coords]
        notes = [f"held {times} times"] if times > 1 else []
        if entry.released_from:
            notes.append(f"released from {entry.released_from}")
        if str(coords) in again_as:
            notes.append(f"released, held again as {again_as[str(coords)]}")
        tail = f" ({'; '.join(notes)})" if notes else ""
        line = f"{coords}\t{entry.reason_class}\t{entry.first_seen}\t{entry.reason}{tail}"
        lines.append(line if fate is None else f"{line}\t{fate.get(coords, 'held')}")
    return lines


def _fates(settings: Any, entries: list[HeldEntry]) -> dict[Coordinates, str]:
    """What became of each entry (the key store's facts when it opens, else the topic's)."""
    from service.commands.held_fate import fates, store_facts

    if not settings.keystore_url:
        return fates(entries, {}, {})
    try:
        from service.wiring import open_keystore

        store = open_keystore(settings)
    except Exception as exc:  # noqa: BLE001 - the list still prints, from the topic alone
        typer.echo(
            f"(the key store did not open: {type(exc).__name__}; fates from the topic)", err=True
        )
        return fates(entries, {}, {})
    try:
        return fates(entries, *store_facts(store, entries))
    finally:
        store.close()


def register(app: typer.Typer) -> None:
    held_app = typer.Typer(
        help="Documents held back by the leak guard: list, release.", no_args_is_help=True
    )
    app.add_typer(held_app, name="held")

    def _run(what: str, call: Callable[[], Any]) -> Any:
        from service.commands.replay import quiet_kafka_client

        quiet_kafka_client()
        try:
            return asyncio.run(call())
        except HeldError as exc:
            typer.echo(f"deidstream held {what}: {exc}", err=True)
            raise typer.Exit(1) from None

    @held_app.command("list")
    def list_command(bootstrap_servers: BootstrapServers = None) -> None:
        """Print each held input: TOPIC:PARTITION:OFFSET, reason class, first seen, reason,
        and what became of it (held, in review, released, published, superseded)."""
        from service.settings import settings_or_exit

        s = settings_or_exit()
        entries = _run(
            "list",
            lambda: read_held(
                bootstrap_servers or s.bootstrap_servers,
                s.held_topic,
                secure=s.held_topic_secure,
                security=s.kafka_security(),
            ),
        )
        for line in list_lines(entries, _fates(s, entries)):
            typer.echo(line)
        typer.echo(
            f"{len({e.coordinates for e in entries})} held input(s) on {s.held_topic}", err=True
        )

    @held_app.command("release")
    def release_command(
        coordinates: Annotated[
            list[str],
            typer.Argument(
                help="TOPIC:PARTITION:OFFSET of held inputs, as `held list` prints them"
            ),
        ],
        bootstrap_servers: BootstrapServers = None,
    ) -> None:
        """Send held inputs through the service again: published if the cause is fixed,
        held again if not."""
        from service.settings import settings_or_exit

        s = settings_or_exit()
        try:
            wanted = [Coordinates.parse(c) for c in coordinates]
        except HeldError as exc:
            typer.echo(f"deidstream held release: {exc}", err=True)
            raise typer.Exit(2) from None
        done = _run(
            "release",
            lambda: release(
                bootstrap_servers or s.bootstrap_servers,
                s.held_topic,
                wanted,
                secure=s.held_topic_secure,
                security=s.kafka_security(),
                max_request_size=s.max_message_bytes,
            ),
        )
        for coords in done:
            typer.echo(f"released {coords}")
