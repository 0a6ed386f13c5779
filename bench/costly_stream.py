"""One costly document in the Kafka stream: how long do the others wait? (issue 24, item 3)

Run: .venv/bin/python bench/costly_stream.py [--budget 2] [--costly-bytes 3000000]
     [--others 30] [--gap 0.1]

A real Tansu broker (started here) and the runner in this process (one worker: the real
pipeline, a SQLite key store). The input topic has two partitions. After a warm-up,
one ordinary but long note (``--costly-bytes``: its de-identification takes longer than
``--budget``) goes to partition 0 and, right after it, ``--others`` ordinary notes go to
partition 1 one every ``--gap`` seconds. Printed: each other note's wait (its send → the
moment the service counted one more published document; partition 1 is decided in order),
the worst and the median, against the target "budget + 1 s"; the costly note's fate (dead
letter ``too_costly``) and how long after its send it was decided; the stall the service
showed meanwhile (``/readyz`` reasons, ``deidstream_stall_seconds{cause="document"}``).
No corpus needed. Figures, never asserted (bench/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "support"))

from aiokafka import AIOKafkaProducer  # noqa: E402
from hl7_gen import big_report, report  # noqa: E402

from keystore.keyring import Keyring  # noqa: E402
from service.broker import EmbeddedBroker, free_port  # noqa: E402
from service.metrics import Metrics  # noqa: E402
from service.runner import Runner  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.wiring import real_processor_factory  # noqa: E402


def settings_for(broker: EmbeddedBroker, tmp: Path, args: argparse.Namespace) -> Settings:
    base = f"costly-{uuid.uuid4().hex[:8]}"
    return Settings(
        bootstrap_servers=broker.bootstrap_servers,
        input_topics=(f"{base}.hl7v2",),
        research_topic=f"{base}.research",
        deadletter_topic=f"{base}.dlq",
        held_topic=f"{base}.held",
        group_id=f"{base}.g",
        keystore_url=f"sqlite:///{tmp / 'keystore.sqlite3'}",
        master_key=Keyring.generate().to_text(),
        http_port=free_port(),
        topic_partitions=2,
        document_deadline_seconds=args.budget,
        stall_seconds=1.0,
        max_message_bytes=8 * 1024 * 1024,
        session_timeout_ms=10_000,
        heartbeat_interval_ms=1_000,
    )


async def _until(pred: object, within: float) -> None:
    end = time.monotonic() + within
    while not pred():  # type: ignore[operator]
        if time.monotonic() > end:
            raise SystemExit("the service did not get there in time")
        await asyncio.sleep(0.02)


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp, EmbeddedBroker() as broker:
        s = settings_for(broker, Path(tmp), args)
        topic = s.input_topics[0]
        metrics = Metrics()
        runner = Runner(s, metrics, real_processor_factory(s, metrics))
        runner.start_background()
        producer = AIOKafkaProducer(
            bootstrap_servers=s.bootstrap_servers, acks="all", max_request_size=8 << 20
        )
        await producer.start()
        try:
            await _until(lambda: runner.ready, 120)
            for n in range(4):  # warm-up: first uses of the tables and the tagger
                await producer.send_and_wait(topic, report(n), key=b"w%d" % n, partition=n % 2)
            await _until(lambda: runner.counts["published"] == 4, 120)
            costly = big_report(900, args.costly_bytes)
            sent_costly = time.monotonic()
            await producer.send_and_wait(topic, costly, key=b"costly", partition=0)
            sent: list[float] = []
            published: dict[int, float] = {}
            stall_seen: list[str] = []
            max_stall = 0.0
            costly_done: float | None = None

            async def watch() -> None:
                nonlocal costly_done, max_stall
                while len(published) < args.others or costly_done is None:
                    now = time.monotonic()
                    count = runner.counts["published"] - 4
                    for k in range(count):
                        published.setdefault(k, now)
                    if costly_done is None and runner.counts["deadlettered"]:
                        costly_done = now
                    stall = metrics.value("deidstream_stall_seconds", cause="document")
                    max_stall = max(max_stall, stall)
                    stall_seen.extend(f"stalled:{c}" for c in runner.health.stalls)
                    await asyncio.sleep(0.01)

            watcher = asyncio.create_task(watch())
            for n in range(args.others):
                sent.append(time.monotonic())
                await producer.send_and_wait(topic, report(100 + n), key=b"o%d" % n, partition=1)
                await asyncio.sleep(args.gap)
            await asyncio.wait_for(watcher, 120 + args.budget * 4)
        finally:
            await producer.stop()
            await runner.stop()
    waits = [published[k] - sent[k] for k in range(args.others)]
    print(
        f"budget {args.budget:.1f} s, costly note {args.costly_bytes / 1e6:.1f} MB on partition 0, "
        f"{args.others} others on partition 1 every {args.gap:.2f} s"
    )
    print(
        f"  others' wait: worst {max(waits):.2f} s, median {statistics.median(waits):.3f} s "
        f"(target: under budget + 1 s = {args.budget + 1:.1f} s)"
    )
    print(
        f"  costly note dead-lettered {costly_done - sent_costly:.2f} s after its send"
        if costly_done is not None
        else "  costly note: not dead-lettered"
    )
    print(
        f"  stall shown: {sorted(set(stall_seen)) or 'none'}, "
        f"deidstream_stall_seconds{{cause=document}} up to {max_stall:.1f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, default=2.0)
    ap.add_argument("--costly-bytes", type=int, default=3_000_000)
    ap.add_argument("--others", type=int, default=30)
    ap.add_argument("--gap", type=float, default=0.1)
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
