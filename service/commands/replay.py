"""``deidstream replay FILES... --topic T``: publish HL7 v2 / FHIR files the way an interface
engine would — one Kafka record per message, keyed by patient id when one can be read, so a
patient's documents stay in one partition, in order."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from pipelines.errors import DeidstreamError
from service.commands.options import BootstrapServers

_SEGMENT_SPLIT = re.compile(rb"\r\n|\r|\n")
_BATCH_SEGMENTS = (b"FHS", b"BHS", b"BTS", b"FTS")


def split_hl7(data: bytes) -> list[bytes]:
    """Messages of an ER7 file (MLLP frames, batch envelopes and blank lines tolerated),
    each re-joined with CR as HL7 wants."""
    data = data.replace(b"\x0b", b"").replace(b"\x1c", b"\n")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    messages: list[list[bytes]] = []
    for line in _SEGMENT_SPLIT.split(data):
        line = line.rstrip()
        if not line or line[:3] in _BATCH_SEGMENTS:
            continue
        if line.startswith(b"MSH") or not messages:
            messages.append([])
        messages[-1].append(line)
    return [b"\r".join(segs) + b"\r" for segs in messages if segs]


def hl7_patient_key(message: bytes) -> bytes | None:
    """PID-3 first repetition, first component (the MRN) — the engine's routing key."""
    if not message.startswith(b"MSH") or len(message) < 8:
        return None
    field_sep = message[3:4]
    encoding = message[4:8]
    component, repetition = encoding[0:1], encoding[1:2]
    for segment in _SEGMENT_SPLIT.split(message):
        if segment.startswith(b"PID" + field_sep):
            fields = segment.split(field_sep)
            if len(fields) > 3 and fields[3]:
                value = fields[3].split(repetition)[0].split(component)[0].strip()
                return value or None
    return None


def _document_patient(resource: dict[str, Any]) -> str | None:
    """A DocumentReference's subject: the id its reference ends in, else its identifier."""
    ref = (resource.get("subject") or {}).get("reference") or ""
    if ref:
        return str(ref).rsplit("/", 1)[-1].lstrip("#") or None
    ident = (resource.get("subject") or {}).get("identifier") or {}
    return ident.get("value")


def _patient_id(resource: dict[str, Any]) -> str | None:
    """A Patient's id, else its first identifier with a value."""
    return resource.get("id") or next(
        (i.get("value") for i in resource.get("identifier") or [] if i.get("value")), None
    )


def _bundle_patient(resource: dict[str, Any]) -> str | None:
    """The first patient any of a Bundle's entries names."""
    found = [_fhir_patient(e.get("resource")) for e in resource.get("entry") or []]
    return next((f for f in found if f), None)


_PATIENT_OF: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "DocumentReference": _document_patient,
    "Patient": _patient_id,
    "Bundle": _bundle_patient,
}


def _fhir_patient(resource: Any) -> str | None:
    if not isinstance(resource, dict):
        return None
    kind = resource.get("resourceType")
    find = _PATIENT_OF.get(kind) if isinstance(kind, str) else None
    return find(resource) if find is not None else None


def fhir_patient_key(message: bytes) -> bytes | None:
    try:
        resource = json.loads(message)
    except ValueError:
        return None
    found = _fhir_patient(resource)
    return found.encode() if found else None


def messages_of(path: Path) -> Iterator[tuple[bytes | None, bytes]]:
    """(key, value) per message in a file; unreadable content is sent as it is, unkeyed
    (the service dead-letters it — that is the point of replaying bad files)."""
    data = path.read_bytes()
    stripped = data.lstrip(b"\xef\xbb\xbf \t\r\n\x0b")
    if path.suffix == ".ndjson":
        for line in data.splitlines():
            if line.strip():
                yield fhir_patient_key(line), line
    elif stripped.startswith((b"{", b"[")):
        yield fhir_patient_key(stripped), stripped
    elif stripped.startswith((b"MSH", b"FHS", b"BHS")):
        for msg in split_hl7(stripped):
            yield hl7_patient_key(msg), msg
    else:
        yield None, data


# What the MLLP gateway and the service accept (Settings.max_message_bytes): whatever they
# take can be replayed. aiokafka's own default (1 MiB) refused a 2 MiB report.
DEFAULT_MAX_REQUEST_SIZE = 4 * 1024 * 1024


class ReplayError(DeidstreamError):
    """One line for the operator: what failed (no message content), never a traceback."""

    reason_class = "kafka_client"


def quiet_kafka_client() -> None:
    """aiokafka logs each failed connection attempt; with no logging configured Python prints
    them on stderr next to our own line. The command's one line says what failed."""
    import logging

    logging.getLogger("aiokafka").addHandler(logging.NullHandler())
    logging.getLogger("aiokafka").propagate = False


def kafka_failure(exc: BaseException, bootstrap: str) -> str:
    """One line for a Kafka client error: the broker, the error's class, its short text."""
    from aiokafka.errors import KafkaConnectionError, MessageSizeTooLargeError

    if isinstance(exc, KafkaConnectionError):
        return f"cannot reach the Kafka broker at {bootstrap} ({type(exc).__name__})"
    if isinstance(exc, MessageSizeTooLargeError):
        return f"a message is larger than the producer's limit ({type(exc).__name__})"
    if isinstance(exc, TimeoutError):
        return f"the Kafka broker at {bootstrap} did not answer in time"
    return f"Kafka error talking to {bootstrap}: {type(exc).__name__}"


async def publish(
    bootstrap: str,
    topic: str,
    records: Iterable[tuple[bytes | None, bytes]],
    security: dict[str, Any] | None = None,
    max_request_size: int = DEFAULT_MAX_REQUEST_SIZE,
) -> int:
    """Send every record (acks=all) and wait for the broker; the number sent."""
    return len(await publish_placed(bootstrap, topic, records, security, max_request_size))


async def publish_placed(
    bootstrap: str,
    topic: str,
    records: Iterable[tuple[bytes | None, bytes]],
    security: dict[str, Any] | None = None,
    max_request_size: int = DEFAULT_MAX_REQUEST_SIZE,
) -> list[tuple[int, int]]:
    """Send every record (acks=all) and wait for the broker: ``(partition, offset)`` of each.
    A Kafka failure is a :class:`ReplayError` with one line; the producer is closed whatever
    happens."""
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError

    records = list(records)
    too_big = [
        i
        for i, (key, value) in enumerate(records, start=1)
        if len(value) + len(key or b"") + 512 > max_request_size
    ]
    if too_big:
        raise ReplayError(
            f"message {too_big[0]} of {len(records)} is over the {max_request_size}-byte limit "
            f"(max_message_bytes); {len(too_big)} message(s) too large, nothing sent"
        )
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        linger_ms=5,
        max_request_size=max_request_size,
        **(security or {}),
    )
    try:
        await producer.start()
    except (KafkaError, OSError, TimeoutError) as exc:
        await producer.stop()  # a failed start leaves sockets and tasks behind
        raise ReplayError(kafka_failure(exc, bootstrap)) from None
    try:
        futures = [await producer.send(topic, value, key=key) for key, value in records]
        return [(meta.partition, meta.offset) for meta in await asyncio.gather(*futures)]
    except (KafkaError, OSError, TimeoutError) as exc:
        raise ReplayError(kafka_failure(exc, bootstrap)) from None
    finally:
        await producer.stop()


def empty_files(files: Iterable[Path]) -> list[Path]:
    """Files with nothing but whitespace (or a byte-order mark) in them."""
    return [
        path
        for path in files
        if not path.read_bytes().removeprefix(b"\xef\xbb\xbf").strip(b" \t\r\n\x0b\x1c")
    ]


def topic_refusal(topic: str, input_topics: Iterable[str]) -> str | None:
    """Why sending to ``topic`` needs ``--force`` (it is no input topic: the service does not
    read it, the messages would sit there with their PHI), or None."""
    known = tuple(input_topics)
    if topic in known:
        return None
    return (
        f"{topic!r} is not an input topic of the service ({', '.join(known) or 'none'}): "
        "nothing would read it, and the messages (PHI) would stay on it; give --force to "
        "publish there anyway"
    )


def register(app: typer.Typer) -> None:
    @app.command()
    def replay(
        files: Annotated[list[Path], typer.Argument(exists=True, dir_okay=False)],
        topic: Annotated[
            str,
            typer.Option(
                "--topic", "-t", help="Kafka topic to publish to (one of the input topics)."
            ),
        ],
        bootstrap_servers: BootstrapServers = None,
        force: Annotated[
            bool,
            typer.Option("--force", help="Publish to a topic that is not one of the input topics."),
        ] = False,
    ) -> None:
        """Publish HL7 v2 / FHIR files to TOPIC, one record per message, keyed by patient."""
        from service.settings import settings_or_exit
        from service.startup import brokers_or_exit

        settings = settings_or_exit()
        refused = topic_refusal(topic, settings.input_topics)
        if refused is not None:
            if not force:
                typer.echo(f"deidstream replay: {refused}", err=True)
                raise typer.Exit(2)
            typer.echo(f"deidstream replay: warning: {topic!r} is not an input topic", err=True)
        empty = empty_files(files)
        if empty:
            names = ", ".join(str(p) for p in empty)
            typer.echo(f"deidstream replay: {names} is empty; nothing sent", err=True)
            raise typer.Exit(1)
        quiet_kafka_client()
        bootstrap = bootstrap_servers or settings.bootstrap_servers
        brokers_or_exit(bootstrap, "replay")
        records = [rec for path in files for rec in messages_of(path)]
        try:
            sent = asyncio.run(
                publish(
                    bootstrap,
                    topic,
                    records,
                    settings.kafka_security(),
                    max_request_size=settings.max_message_bytes,
                )
            )
        except ReplayError as exc:
            typer.echo(f"deidstream replay: {exc}", err=True)
            raise typer.Exit(1) from None
        keyed = sum(1 for key, _ in records if key)
        noun = "message" if sent == 1 else "messages"
        typer.echo(f"published {sent} {noun} to {topic} ({keyed} keyed by patient)")
