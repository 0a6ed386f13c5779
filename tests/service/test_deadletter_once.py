"""A dead letter is sent once per input: when a batch is replayed (a crash after its dead
letters were acknowledged, before its offsets were committed), the runner asks the
processor's marks which dead letters went out already and does not send them again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from test_runner_overlap import Out, Proc, Producer, _batch, _until, runner_with

from keystore import open_store
from keystore.keyring import Keyring
from pipelines.errors import NotHL7
from service.runner import Runner, dead_letter_mark
from service.settings import Settings
from service.wiring import ServiceProcessor, open_keystore


class Marking(Proc):
    """``bad`` is not HL7; dead-letter marks live in a dict shared across restarts."""

    def __init__(self, log: list[str], marks: dict[str, bytes]) -> None:
        super().__init__(log)
        self.marks = marks

    def process(self, raw: bytes, *, content_hint: str, now: Any) -> list[Out]:
        if raw == b"bad":
            self.log.append("process bad")
            raise NotHL7("input does not start with MSH", offset=0)
        return super().process(raw, content_hint=content_hint, now=now)

    def sent_marks(self, marks: list[str]) -> set[str]:
        return {m for m in marks if m in self.marks}

    def mark_sent(self, marks: list[str]) -> None:
        self.log.append(f"mark {len(marks)}")
        self.marks.update(dict.fromkeys(marks, b"sent"))


def _runner(proc: Any, log: list[str]) -> tuple[Runner, Producer]:
    return runner_with(proc, log)


async def test_a_replayed_batch_sends_no_second_dead_letter() -> None:
    marks: dict[str, bytes] = {}
    log: list[str] = []
    runner, producer = _runner(Marking(log, marks), log)
    await runner.prepare_processor()
    await runner.handle_batch(_batch((0, "a"), (1, "bad"), (2, "c")))
    await _until(lambda: len(producer.acks) == 3)
    await asyncio.sleep(0.05)
    assert not marks  # nothing acknowledged yet: no mark
    producer.ack_all()
    await asyncio.wait_for(runner.drain(), 2)
    assert len(marks) == 1 and "mark 1" in log and log[-1] == "commit 3"
    await runner.stop()

    # the "crash": the same batch again (as if its offsets had not been committed)
    log2: list[str] = []
    proc = Marking(log2, marks)
    proc.confirmed = {"a", "c"}
    again, producer2 = _runner(proc, log2)
    await again.prepare_processor()
    await again.handle_batch(_batch((0, "a"), (1, "bad"), (2, "c")))
    await asyncio.wait_for(again.drain(), 2)
    assert producer2.acks == []  # no second dead letter; a and c are duplicates
    assert again.counts["deadlettered"] == 1  # still accounted for as dead-lettered
    assert (
        again.metrics.value("deidstream_messages_deadlettered_total", reason_class="not_hl7") == 1
    )
    assert log2[-1] == "commit 3"
    await again.stop()


async def test_a_dead_letter_not_acknowledged_before_the_crash_is_sent_again() -> None:
    marks: dict[str, bytes] = {}
    log: list[str] = []
    runner, producer = _runner(Marking(log, marks), log)
    await runner.prepare_processor()
    await runner.handle_batch(_batch((1, "bad")))
    await _until(lambda: len(producer.acks) == 1)
    await runner.stop(grace=0.1)  # the acknowledgement never came
    assert not marks
    log2: list[str] = []
    again, producer2 = _runner(Marking(log2, marks), log2)
    await again.prepare_processor()
    await again.handle_batch(_batch((1, "bad")))
    await _until(lambda: len(producer2.acks) == 1)  # sent again
    producer2.ack_all()
    await asyncio.wait_for(again.drain(), 2)
    assert len(marks) == 1
    await again.stop()


def test_service_processor_keeps_dead_letter_marks_in_the_key_store(tmp_path: Path) -> None:
    store = open_keystore(
        Settings(
            keystore_url=f"sqlite:///{tmp_path / 'ks.sqlite3'}",
            master_key=Keyring.generate().to_text(),
        )
    )
    try:
        proc = ServiceProcessor(None, None, None, store)  # type: ignore[arg-type]

        class Rec:
            topic, partition, offset, value = "in.hl7v2", 0, 7, b"bytes"

        first, other = dead_letter_mark(Rec()), dead_letter_mark(Rec()).replace("|7|", "|8|")
        assert proc.sent_marks([first, other]) == set()
        proc.mark_sent([first, first])
        assert proc.sent_marks([first, other]) == {first}
        proc.mark_sent([first])  # already there: fine
        Rec.value = b"other bytes"  # a re-created topic: same coordinates, other input
        assert dead_letter_mark(Rec()) != first
    finally:
        store.close()


def test_dead_letter_marks_expire_and_are_pruned(tmp_path: Path) -> None:
    """Marks live ``deadletter_mark_days``; once past, the next mark_sent prunes them (at
    most hourly), and a replay after that would send the dead letter again."""
    now = [1_000_000.0]
    store = open_store(
        f"sqlite:///{tmp_path / 'ks.sqlite3'}", Keyring.generate(), clock=lambda: now[0]
    )
    try:
        proc = ServiceProcessor(
            None,
            None,
            None,
            store,  # type: ignore[arg-type]
            deadletter_mark_seconds=3600.0,
        )
        proc.mark_sent(["deadletter|t|0|1|d1"])  # prunes nothing yet (nothing due)
        now[0] += 3600.0
        proc.mark_sent(["deadletter|t|0|2|d2"])  # within the hour since the last prune
        assert proc.sent_marks(["deadletter|t|0|1|d1"]) == {"deadletter|t|0|1|d1"}
        proc._pruned_at = None  # as if an hour had passed on the monotonic clock
        proc.mark_sent(["deadletter|t|0|3|d3"])
        assert proc.sent_marks(
            ["deadletter|t|0|1|d1", "deadletter|t|0|2|d2", "deadletter|t|0|3|d3"]
        ) == {"deadletter|t|0|2|d2", "deadletter|t|0|3|d3"}
        assert store.get_mark("deadletter|t|0|1|d1") is None
    finally:
        store.close()
