"""MLLP gateway round trips: messages/s and ACK latency through a real Tansu broker.

Run: .venv/bin/python bench/mllp.py [--messages 2000] [--connections 1,4,16]

Each connection sends a message, waits for its ACK (HL7 original mode: what interface engines
do), then sends the next. Latency is frame-out → ACK-in as the sender sees it, which includes
the broker's acks=all round trip. The broker runs on this machine (loopback), started here.
Bounded: at most ``--messages`` per run and 120 s per connection count.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipelines.hl7.framing import FrameDecoder, mllp_frame  # noqa: E402
from service.broker import EmbeddedBroker  # noqa: E402
from service.mllp import serve  # noqa: E402
from service.settings import Settings  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "hl7v2" / "oru-r01-tx-ft-nte-v251.hl7"


async def _sender(host: str, port: int, count: int, latencies: list[float]) -> int:
    reader, writer = await asyncio.open_connection(host, port)
    template = FIXTURE.read_bytes()
    decoder = FrameDecoder(1 << 20)
    ok = 0
    try:
        for i in range(count):
            payload = template.replace(b"ORU-0001", f"B{i:07d}".encode(), 1)
            t0 = time.perf_counter()
            writer.write(mllp_frame(payload))
            await writer.drain()
            acks: list[bytes] = []
            while not acks:
                data = await reader.read(65536)
                if not data:
                    return ok
                acks = decoder.feed(data)
            latencies.append(time.perf_counter() - t0)
            ok += b"MSA|AA|" in acks[0]
    finally:
        writer.close()
    return ok


async def run(bootstrap: str, messages: int, connections: int) -> None:
    base = f"bench.{uuid.uuid4().hex[:8]}"
    settings = Settings(
        bootstrap_servers=bootstrap,
        input_topics=(f"{base}.hl7v2",),
        deadletter_topic=f"{base}.dlq",
    )
    stop = asyncio.Event()
    ready: asyncio.Future[tuple[str, int]] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve(settings, port=0, stop=stop, started=ready.set_result))
    host, port = await asyncio.wait_for(ready, 30)
    latencies: list[float] = []
    per = max(1, messages // connections)
    await _sender(host, port, 20, [])  # warm-up: metadata, connections
    t0 = time.perf_counter()
    oks = await asyncio.wait_for(
        asyncio.gather(*(_sender(host, port, per, latencies) for _ in range(connections))), 120
    )
    elapsed = time.perf_counter() - t0
    stop.set()
    await task
    q = statistics.quantiles(latencies, n=100)
    print(
        f"connections={connections:3d} messages={len(latencies):6d} AA={sum(oks):6d} "
        f"rate={len(latencies) / elapsed:8.0f}/s p50={q[49] * 1e3:6.2f} ms "
        f"p99={q[98] * 1e3:6.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--connections", default="1,4,16")
    args = parser.parse_args()
    with EmbeddedBroker() as broker:
        for c in (int(x) for x in args.connections.split(",")):
            asyncio.run(run(broker.bootstrap_servers, args.messages, c))


if __name__ == "__main__":
    main()
