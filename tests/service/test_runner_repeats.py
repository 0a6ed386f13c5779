"""Issue 23 item 8 in the runner: re-sends arriving while the earlier batch still waits for
the broker's acknowledgements (overlapping batches, as under a backlog) are decided exactly as
when they arrive after it — the real processor (``ServiceProcessor`` around the pipeline, an
in-memory key store, a stub de-identifier that holds what says "hold"), the broker's acks
held back by a fake producer."""

from __future__ import annotations

import asyncio
from collections import Counter

import orjson

from service.preview import PreviewStore
from service.runner import Runner
from service.wiring import ServiceProcessor
from tests.service.test_runner_overlap import TP, Rec, _until, runner_with
from tests.test_repeats_property import _processor


def _service_processor() -> ServiceProcessor:
    stream = _processor()
    marks = PreviewStore(stream.store, lambda authority, patient_id: None)
    return ServiceProcessor(stream, _processor(), marks, stream.store)  # type: ignore[arg-type]


def _record(offset: int, variant: int) -> Rec:
    return Rec(offset, orjson.dumps([0, variant, offset]))


async def _run(batches: list[list[tuple[int, int]]]) -> tuple[Runner, list[str]]:
    """The batches handed to the runner while the acks are held back, then acknowledged."""
    log: list[str] = []
    runner, producer = runner_with(_service_processor(), log)
    await runner.prepare_processor()

    async def feed() -> None:  # each batch handed over before the earlier acks come back
        offset = 0
        for batch in batches:
            recs = []
            for _report, variant in batch:
                recs.append(_record(offset, variant))
                offset += 1
            await runner.handle_batch({TP: recs})

    feeding = asyncio.create_task(feed())
    await asyncio.sleep(0.05)

    def acked() -> bool:  # each batch sends after the previous acks: ack as they come
        producer.ack_all()
        return feeding.done() and runner.finishing.all_done()

    await _until(acked)
    await feeding
    await asyncio.wait_for(runner.drain(), 5)
    await runner.stop()
    sent = [entry.removeprefix("send ") for entry in log if entry.startswith("send ")]
    return runner, sent


async def test_resends_of_a_held_report_in_overlapping_batches_are_each_held_again() -> None:
    batches = [[(0, 3)]] + [[(0, 3)] for _ in range(6)]
    runner, sent = await _run(batches)
    assert runner.counts["held"] == 7
    assert runner.counts.get("duplicate", 0) == 0


async def test_resends_of_a_published_report_in_overlapping_batches_are_dropped() -> None:
    batches = [[(0, 1)], [(0, 1), (0, 1)], [(0, 1)], [(0, 1), (0, 1), (0, 1)]]
    runner, sent = await _run(batches)
    assert runner.counts["published"] == 1
    assert runner.counts["duplicate"] == 6
    assert Counter(sent) == Counter({sent[0]: 1})
