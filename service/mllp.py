"""The MLLP gateway: interface engines send HL7 v2 over TCP and expect an ACK per message.

Per frame (``0x0B payload 0x1C 0x0D``), in the order received on a connection:

1. route it with the fast ER7 reader (:func:`pipelines.hl7.routing.route`): HL7 v2 of a type
   we handle, and whose (the patient id, the Kafka key — one patient, one partition, in order);
2. produce the payload bytes unchanged to the HL7 input topic (``acks=all``), key = patient;
3. only when the broker acknowledged: reply ``AA`` (:func:`pipelines.hl7.ack.build_ack`).

Between 1 and 2 the payload also goes through the service's own parse
(:func:`pipelines.ingest.parse_input`), so what the service would dead-letter for its content
(no narrative, a message cut inside PID, a binary-only attachment) is known before the ACK.

A message we cannot take is never lost: its bytes go to the dead-letter topic with the reason
in headers (as the runner does) and the reply is ``AR`` (header-level: not HL7, no MSH, bad
encoding characters, unsupported type or version) or ``AE`` (content: no patient id, bad
bytes, no narrative…) with an ERR segment naming the reason — never a value. A batch with
some bad messages (``partial_input``) is stored (the service publishes the good ones) and
answered ``AE`` naming the failed entries. A broker failure (the message
was *not* stored) is ``AE`` with ERR-3 ``207`` so the sender resends; the gateway never ACKs
before the broker did. A frame over the size limit is answered ``AR`` and the connection is
closed (its bytes were not kept in full: the sender still holds the message).

A send that times out may still land later; the sender's resend is then a duplicate on the
input topic, which version dedup drops (at-least-once in, effectively-once out).
The frame decoder is :class:`pipelines.hl7.framing.FrameDecoder` (with the rest of MLLP
framing); topics are created by :func:`service.topics.ensure_topics`, as the runner does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter as Tally
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from pipelines.errors import (
    DeidstreamError,
    InputError,
    OversizeInput,
    PartialInput,
    TransientError,
)
from pipelines.hl7.ack import build_ack
from pipelines.hl7.framing import FrameDecoder, FrameTooLarge, mllp_frame
from pipelines.hl7.routing import Route, route
from pipelines.ingest import reason_headers
from service.budget import BudgetedParse, portable, rebuilt
from service.settings import Settings
from service.topics import ensure_topics

log = logging.getLogger("deidstream.mllp")

CONTENT_TYPE = b"x-application/hl7-v2+er7"
# rejected at the header: resending the same bytes cannot help
REJECT_CLASSES = frozenset(
    {
        "not_hl7",
        "no_msh",
        "bad_encoding_characters",
        "unsupported_message_type",
        "unsupported_version",
        "oversize",
        "too_costly",  # over the per-document budget: the same bytes would cost the same
    }
)
MAX_REASON_CHARS = 400
PARSE_CHILDREN = 2  # child processes parsing large payloads under the budget


class NotStored(TransientError):
    """The broker did not acknowledge the record in time: the sender must resend."""

    reason_class = "broker_unavailable"


Producer = Any  # aiokafka.AIOKafkaProducer (typed loosely: tests may pass a real one only)


@dataclass
class GatewayConfig:
    topic: str
    deadletter_topic: str
    max_frame_bytes: int = 4 * 1024 * 1024
    send_timeout: float = 15.0
    read_size: int = 64 * 1024
    sending_application: str = "DEIDSTREAM"
    # the per-document budget (document_deadline_seconds) for the parse before the ACK;
    # None: no budget (tests)
    budget_seconds: float | None = None


@dataclass
class Reply:
    code: str  # AA | AE | AR
    reason_class: str = ""
    ack: bytes = b""


@dataclass
class GatewayCounts:
    """What happened, by ACK code and reason class (no PHI); logged at stop."""

    acks: Tally[str] = field(default_factory=Tally)
    reasons: Tally[str] = field(default_factory=Tally)
    connections: int = 0
    oversize: int = 0


STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 15.0)


class GatewayMetrics:
    """Prometheus instruments of the gateway, in a registry of its own (labels: ACK code,
    reason class, topic kind — never ids or text)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        self.messages = Counter(
            "deidstream_mllp_messages_total",
            "MLLP messages answered, by ACK code (AA stored on the input topic; AR/AE see reason).",
            ["code"],
            registry=r,
        )
        self.rejected = Counter(
            "deidstream_mllp_rejected_total",
            "MLLP messages not taken, by reason class (dead-lettered, oversize or not stored).",
            ["reason_class"],
            registry=r,
        )
        self.connections = Counter(
            "deidstream_mllp_connections_total", "MLLP connections accepted.", registry=r
        )
        self.store_seconds = Histogram(
            "deidstream_mllp_store_seconds",
            "Time from a frame's arrival to the broker's acknowledgement, by topic kind.",
            ["topic"],
            buckets=STORE_BUCKETS,
            registry=r,
        )


class MllpGateway:
    """One listening socket; one producer shared by all connections."""

    def __init__(
        self,
        producer: Producer,
        config: GatewayConfig,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        metrics: GatewayMetrics | None = None,
    ) -> None:
        self.producer = producer
        self.config = config
        self.clock = clock
        self.counts = GatewayCounts()
        self.metrics = metrics or GatewayMetrics()
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._busy: set[asyncio.Task[Any]] = set()  # between a frame's arrival and its ACK
        self._stopping = False
        # large payloads are parsed in a child process killed at the budget: a costly message
        # never holds the event loop, so other connections' ACKs do not wait for it
        self._parse = BudgetedParse(
            config.budget_seconds, max_bytes=config.max_frame_bytes, workers=PARSE_CHILDREN
        )

    # -- server ---------------------------------------------------------------------------
    async def start(self, host: str, port: int) -> tuple[str, int]:
        # the parse child started before the port opens: the first large message's ACK
        # does not wait for it (service/budget.py, BudgetedParse.warm)
        await asyncio.to_thread(self._parse.warm)
        self._server = await asyncio.start_server(self._handle, host, port)
        sock = self._server.sockets[0].getsockname()
        log.info("MLLP gateway listening on %s:%d", sock[0], sock[1])
        return str(sock[0]), int(sock[1])

    async def stop(self, grace: float = 5.0) -> None:
        """Stop listening; let connections finish the frame in hand, then close them."""
        self._stopping = True
        if self._server is not None:
            self._server.close()
        for task in self._handlers:
            if task not in self._busy:
                task.cancel()  # idle, waiting for a frame: nothing in hand to finish
        pending = [t for t in self._handlers if not t.done()]
        if pending:
            _, still = await asyncio.wait(pending, timeout=grace)
            for task in still:
                task.cancel()
            await asyncio.gather(*still, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        await asyncio.to_thread(self._parse.close)
        log.info(
            "MLLP gateway stopped: connections=%d acks=%s reasons=%s",
            self.counts.connections,
            dict(self.counts.acks),
            dict(self.counts.reasons),
        )

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
            task.add_done_callback(self._handlers.discard)
        try:
            await self._connection(reader, writer, task)
        except asyncio.CancelledError:
            if not self._stopping:
                raise
            # stop() ended this connection: end quietly (asyncio's stream callback would log a
            # cancelled handler as an error); frames without an ACK are resent by the sender

    async def _connection(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        task: asyncio.Task[Any] | None,
    ) -> None:
        self.counts.connections += 1
        self.metrics.connections.inc()
        peer = writer.get_extra_info("peername")
        peer_text = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "?"
        decoder = FrameDecoder(self.config.max_frame_bytes)
        try:
            while True:
                chunk = await reader.read(self.config.read_size)
                if not chunk:
                    break
                frames = decoder.feed(chunk)
                if task is not None and frames:
                    self._busy.add(task)
                try:
                    for payload in frames:
                        reply = await self.accept(payload, peer=peer_text)
                        writer.write(mllp_frame(reply.ack))
                        await writer.drain()
                finally:
                    self._busy.discard(task)
                if decoder.too_large is not None:
                    await self._refuse_oversize(writer, decoder.too_large)
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the sender went away: whatever it did not get an ACK for, it resends
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _refuse_oversize(self, writer: asyncio.StreamWriter, e: FrameTooLarge) -> None:
        self.counts.oversize += 1
        self._count("AR", "oversize")
        log.warning("MLLP frame over %d bytes refused; closing the connection", e.limit)
        ack = self._ack(e.head, "AR", OversizeInput("message is larger than the limit"))
        with contextlib.suppress(ConnectionError):
            writer.write(mllp_frame(ack))
            await writer.drain()

    # -- one message ----------------------------------------------------------------------
    async def accept(self, payload: bytes, *, peer: str = "?") -> Reply:
        """Store one payload (input topic, or dead-letter topic) and build the reply."""
        try:
            return await self._accept(payload, peer)
        except Exception as exc:  # noqa: BLE001 - a bug must not cost the sender its ACK
            log.error("MLLP message not handled: %s", type(exc).__name__)
            failed = NotStored("internal error; the message was not stored; resend it")
            return self._reply(payload, "AE", failed)

    async def _accept(self, payload: bytes, peer: str) -> Reply:
        first_seen = self.clock()
        try:
            # a partial batch is stored: the service publishes the good entries
            routed, partial = await self._route(payload)
        except InputError as error:
            return await self._dead_letter(payload, error, peer, first_seen)
        headers = [
            ("content-type", CONTENT_TYPE),
            ("source", b"mllp"),
            ("message-type", f"{routed.message_type}^{routed.trigger}".encode()),
            ("received", first_seen.isoformat().encode()),
        ]
        failed = await self._send(self.config.topic, payload, routed.key, headers)
        if failed is None and partial is not None:
            return self._reply(payload, "AE", partial)
        return self._reply(payload, "AE" if failed else "AA", failed)

    async def _route(self, payload: bytes) -> tuple[Route, PartialInput | None]:
        """Route, then the service's own parse (:func:`pipelines.ingest.parse_input`),
        before the ACK: what it would dead-letter (no narrative, a message cut inside a
        segment…) raises its input error here, so the sender hears of it. A failure that is
        not an input error (a bug) is logged and the message stored: the service decides it.

        Under the per-document budget: a large payload is routed and parsed in a child
        process killed at the budget (``DeadlineExceeded``, ``too_costly``: dead letter,
        ``AR``), so it never holds the event loop and other connections' ACKs. A partial
        batch is returned beside the route (it is stored); other input errors are raised."""
        parse = self._parse
        error: DeidstreamError | None = None
        if parse.budget is not None and len(payload) > parse.inline_bytes:
            routed, failed = await parse.call_async(_route_and_validate, payload, parse.max_bytes)
            error = rebuilt(failed) if failed is not None else None
        else:
            routed = route(payload)
            try:
                await parse.parse_async(payload, content_hint="hl7v2")
            except InputError as exc:
                error = exc
            except Exception as exc:  # noqa: BLE001 - never refuse a message over our own bug
                log.error("MLLP validation failed (%s); stored as it is", type(exc).__name__)
        if error is None or isinstance(error, PartialInput):
            return routed, error
        raise error

    async def _dead_letter(
        self, payload: bytes, error: InputError, peer: str, first_seen: datetime
    ) -> Reply:
        headers = _dead_letter_headers(error, payload) + [
            ("source", b"mllp"),
            ("source-peer", peer.encode()),
            ("first-seen", first_seen.isoformat().encode()),
            ("content-type", CONTENT_TYPE),
        ]
        failed = await self._send(self.config.deadletter_topic, payload, None, headers)
        if failed is not None:
            return self._reply(payload, "AE", failed)
        code = "AR" if error.reason_class in REJECT_CLASSES else "AE"
        return self._reply(payload, code, error)

    async def _send(
        self, topic: str, value: bytes, key: bytes | None, headers: list[tuple[str, bytes]]
    ) -> DeidstreamError | None:
        """None when the broker acknowledged the record; else the (retriable) failure."""
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self.config.send_timeout):
                await self.producer.send_and_wait(topic, value, key=key, headers=headers)
        except Exception as exc:  # noqa: BLE001 - every failure means "not stored": AE
            log.warning("MLLP publish to %s failed: %s", topic, type(exc).__name__)
            return NotStored(
                "the message was not stored (broker unavailable); resend it",
                error=type(exc).__name__,
            )
        kind = "input" if topic == self.config.topic else "deadletter"
        self.metrics.store_seconds.labels(kind).observe(time.perf_counter() - started)
        return None

    def _reply(self, payload: bytes, code: str, error: DeidstreamError | None) -> Reply:
        reason_class = error.reason_class if error is not None else ""
        self._count(code, reason_class)
        return Reply(code, reason_class, self._ack(payload, code, error))

    def _ack(self, payload: bytes, code: str, error: DeidstreamError | None) -> bytes:
        text = str(error)[:MAX_REASON_CHARS] if error is not None else ""
        if isinstance(error, InputError):  # ERR-8 names the class the dead letter carries
            text = f"{error.reason_class}: {text}"
        reason_class = error.reason_class if error is not None else ""
        options = {
            "reason_class": reason_class,
            "now": self.clock(),
            "sending_application": self.config.sending_application,
        }
        try:
            return build_ack(payload, code, text, **options)  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - a header hl7apy cannot echo: answer anyway
            log.warning("ACK addressed to the sender failed (%s); plain ACK", type(exc).__name__)
            return build_ack(b"", code, text, **options)  # type: ignore[arg-type]

    def _count(self, code: str, reason_class: str) -> None:
        self.counts.acks[code] += 1
        self.metrics.messages.labels(code).inc()
        if reason_class:
            self.counts.reasons[reason_class] += 1
            self.metrics.rejected.labels(reason_class).inc()


def _route_and_validate(
    payload: bytes, max_bytes: int
) -> tuple[Route, tuple[type[DeidstreamError], str, dict[str, Any]] | None]:
    """In the budget's child: the route (its input error raised) and the parse's input
    error, if any, as portable parts (a partial batch is stored all the same). A failure
    of the parse that is not an input error (a bug) is logged; the message is stored."""
    from pipelines.ingest import parse_input

    routed = route(payload)
    try:
        parse_input(payload, content_hint="hl7v2", max_bytes=max_bytes)
    except InputError as exc:
        return routed, portable(exc)
    except Exception as exc:  # noqa: BLE001 - never refuse a message over our own bug
        log.error("MLLP validation failed (%s); message stored as it is", type(exc).__name__)
    return routed, None


def _dead_letter_headers(error: InputError, payload: bytes) -> list[tuple[str, bytes]]:
    """reason-class, reason (and hl7apy's findings when it has some) — no values."""
    try:
        found = reason_headers(error, payload)
    except Exception:  # noqa: BLE001 - the diagnosis is a bonus; the reason is enough
        found = {"reason_class": error.reason_class, "reason": str(error)}
    return [(k.replace("_", "-"), v.encode()[:MAX_REASON_CHARS]) for k, v in found.items()]


__all__ = [
    "GatewayConfig",
    "GatewayMetrics",
    "MllpGateway",
    "Reply",
    "serve",
]


# -- running it ---------------------------------------------------------------------------


def hl7_topic(settings: Settings) -> str:
    """The HL7 input topic among the configured ones (the first naming hl7, else the first)."""
    topics = settings.input_topics
    return next(
        (t for t in topics if "hl7" in t.lower()), topics[0] if topics else "clinical.hl7v2"
    )


def make_producer(settings: Settings, bootstrap_servers: str | None = None) -> Producer:
    from aiokafka import AIOKafkaProducer

    common = settings.kafka_common()
    if bootstrap_servers:
        common["bootstrap_servers"] = bootstrap_servers
    return AIOKafkaProducer(
        acks="all",
        enable_idempotence=False,  # Tansu refuses idempotent producers
        linger_ms=0,  # one message per ACK round trip: nothing to batch, do not wait
        max_request_size=max(1024 * 1024, 2 * settings.max_message_bytes),
        **common,
    )


async def serve(
    settings: Settings,
    *,
    host: str = "127.0.0.1",
    port: int = 2575,
    bootstrap_servers: str | None = None,
    topic: str | None = None,
    stop: asyncio.Event | None = None,
    started: Callable[[tuple[str, int]], None] | None = None,
    metrics_port: int | None = None,
) -> int:
    """Connect the producer (retrying while the broker is unreachable), listen, run until
    ``stop`` (or SIGTERM/SIGINT), then drain. Returns the exit status."""
    import signal

    loop = asyncio.get_running_loop()
    stop = stop or asyncio.Event()
    config = GatewayConfig(
        topic=topic or hl7_topic(settings),
        deadletter_topic=settings.deadletter_topic,
        max_frame_bytes=settings.max_message_bytes,
        send_timeout=max(1.0, settings.request_timeout_ms / 1000),
        budget_seconds=settings.document_deadline_seconds,
    )
    metrics = GatewayMetrics()
    listening: list[MllpGateway] = []  # the gateway, once it listens: /readyz says ready
    exporter = None
    if metrics_port is not None:  # /metrics and /readyz on their own port (0: the OS picks)
        from service.mllp_http import MetricsServer

        def ready() -> bool:
            return bool(listening) and not listening[0]._stopping  # noqa: SLF001

        try:
            exporter = MetricsServer(host, metrics_port, metrics.registry, ready)
        except OSError as exc:
            reason = (exc.strerror or type(exc).__name__).lower()
            log.error("cannot listen on %s:%d (metrics): %s", host, metrics_port, reason)
            return 1
        log.info("MLLP metrics on %s:%d/metrics (and /readyz)", host, exporter.port)
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    try:
        producer = await _connect(settings, config, bootstrap_servers, stop)
        if producer is None:
            return 0
        gateway = MllpGateway(producer, config, metrics=metrics)
        try:
            address = await gateway.start(host, port)
            listening.append(gateway)
            if started is not None:
                started(address)
            await stop.wait()
        except OSError as exc:
            reason = (exc.strerror or type(exc).__name__).lower()
            log.error("cannot listen on %s:%d: %s", host, port, reason)
            return 1
        finally:
            await gateway.stop()
            await producer.stop()
    finally:
        if exporter is not None:
            exporter.close()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
    return 0


async def _connect(
    settings: Settings,
    config: GatewayConfig,
    bootstrap_servers: str | None,
    stop: asyncio.Event,
) -> Producer | None:
    """A started producer (topics created when configured), retrying while the broker is
    unreachable; None when ``stop`` came first."""
    delay = settings.retry_initial_seconds
    while not stop.is_set():  # the port opens only once messages can be stored
        producer = make_producer(settings, bootstrap_servers)
        try:
            await producer.start()
            if settings.create_topics:
                await ensure_topics(
                    settings, [config.topic, config.deadletter_topic], bootstrap_servers
                )
            return producer
        except Exception as exc:  # noqa: BLE001 - broker not reachable yet: retry
            log.warning("broker not reachable (%s); retrying in %.1f s", type(exc).__name__, delay)
            with contextlib.suppress(Exception):
                await producer.stop()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
            delay = min(delay * 2, settings.retry_max_seconds)
    return None
