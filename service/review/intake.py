"""Held documents into the review queue, and decided ones back through the service.

``sync`` reads the held topic (:func:`service.commands.held.read_held`), fetches each held
input (from its topic, or the secure held topic's copy), parses it as the service does and
queues its documents with their coordinates and reason (an input already queued is skipped:
item ids are keyed by coordinates). ``settle`` releases every held document whose items are
all decided through the held-release path (:func:`service.commands.held.release`): the
service decides the input again, now with the reviewers' lists and the note's decided places
(:meth:`pipelines.review.ReviewQueue.settle` writes them first and waits the detectors' list
refresh), and its version marks make the research topic get it exactly once. Nothing here
logs or prints text.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from pipelines.errors import DeidstreamError
from pipelines.phi.detector import Detector
from pipelines.review import DocStatus, ReviewQueue
from service.commands.held import Coordinates, HeldEntry, _fetch_input, read_held, release
from service.runner.contract import content_hint
from service.settings import Settings

log = logging.getLogger("deidstream.review")


async def _input_of(settings: Settings, entry: HeldEntry) -> tuple[bytes, str | None] | None:
    rec = await _fetch_input(
        settings.bootstrap_servers, entry.coordinates, settings.kafka_security(), 15.0
    )
    if rec is not None and rec.value:
        return rec.value, content_hint(entry.coordinates.topic, list(rec.headers or ()))
    if entry.value:
        return entry.value, content_hint(entry.coordinates.topic, None)
    return None


async def sync(settings: Settings, queue: ReviewQueue, detector: Detector) -> int:
    """Queue every held input not queued yet; how many documents were queued."""
    from pipelines.ingest import DEFAULT_MAX_BYTES, parse_input

    entries = await read_held(
        settings.bootstrap_servers,
        settings.held_topic,
        secure=settings.held_topic_secure,
        security=settings.kafka_security(),
    )
    latest = {e.coordinates: e for e in entries}
    queued = 0
    for coords, entry in latest.items():
        if queue.has_document(str(coords)):
            continue
        found = await _input_of(settings, entry)
        if found is None:
            log.warning("review: held input %s is gone from its topic; not queued", coords)
            continue
        raw, hint = found
        try:
            documents = parse_input(
                raw, content_hint=hint, max_bytes=max(settings.max_message_bytes, DEFAULT_MAX_BYTES)
            )
        except DeidstreamError as exc:
            log.warning("review: held input %s does not parse (%s)", coords, type(exc).__name__)
            continue
        for k, document in enumerate(documents):
            where = str(coords) if len(documents) == 1 else f"{coords}#{k}"
            await asyncio.to_thread(
                queue.enqueue,
                document,
                detector,
                coordinates=where,
                held_reason=(entry.reason_class, entry.reason),
            )
            queued += 1
    return queued


def settle(
    settings: Settings, queue: ReviewQueue, doc_ids: list[str] | None = None
) -> list[tuple[str, DocStatus]]:
    """Release (or keep held) every fully decided held document (of ``doc_ids`` when given;
    blocking: run it in a thread)."""
    released: set[str] = set()

    def send(doc: Any) -> None:
        coords = Coordinates.parse(doc.coordinates.split("#", 1)[0])
        if str(coords) in released:
            return  # several documents of one input: one release
        asyncio.run(
            release(
                settings.bootstrap_servers,
                settings.held_topic,
                [coords],
                secure=settings.held_topic_secure,
                security=settings.kafka_security(),
                max_request_size=settings.max_message_bytes,
            )
        )
        released.add(str(coords))

    done = queue.settle(send, doc_ids)
    for coords, status in done:
        log.info("review: held input %s %s", coords, status.value)
    return done


async def loop(settings: Settings, queue: ReviewQueue, detector: Detector) -> None:
    """``sync`` and ``settle`` every ``review_sync_seconds`` until cancelled; a broker or
    store fault is logged (class only) and tried again on the next pass."""
    while True:
        try:
            await sync(settings, queue, detector)
            await asyncio.to_thread(settle, settings, queue)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - retried next pass; class only (no PHI)
            log.warning("review: intake pass failed (%s); retrying", type(exc).__name__)
        await asyncio.sleep(settings.review_sync_seconds)
