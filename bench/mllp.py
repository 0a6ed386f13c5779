"""MLLP gateway round trips: messages/s and ACK latency through a real Tansu broker.

Run: .venv/bin/python bench/mllp.py [--messages 2000] [--connections 1,4,16]
     .venv/bin/python bench/mllp.py --costly 8 [--costly-bytes 4000000] [--budget 0.5]

Each connection sends a message, waits for its ACK (HL7 original mode: what interface engines
do), then sends the next. Latency is frame-out → ACK-in as the sender sees it, which includes
the broker's acks=all round trip. The broker runs on this machine (loopback), started here.
Bounded: at most ``--messages`` per run and 120 s per connection count.

``--costly N`` (issue 24): N connections each send one ordinary large note (``--costly-bytes``)
at once, while one more connection sends small messages one after the other; it prints the
small messages' worst ACK wait during that time (the target: under the budget + 1 s) and
what the large ones got (AR too_costly past ``--budget``, the per-document budget).
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


def big_note(n: int, size: int) -> bytes:
    """An ordinary progress note of about ``size`` bytes (many OBX lines of plain prose)."""
    head = FIXTURE.read_bytes().split(b"\r")[:4]
    segments = [s.replace(b"ORU-0001", f"C{n:07d}".encode(), 1) for s in head]
    i, total = 0, sum(len(s) for s in segments)
    while total < size:
        seg = (
            f"OBX|{i + 1}|TX|11506-3^Progress note^LN||Seen today, reports cough day {i}; "
            "vitals normal, exam unremarkable, plan unchanged.||||||F"
        ).encode()
        segments.append(seg)
        total, i = total + len(seg) + 1, i + 1
    return b"\r".join(segments) + b"\r"


async def _one(host: str, port: int, payload: bytes) -> tuple[float, bytes]:
    reader, writer = await asyncio.open_connection(host, port)
    decoder = FrameDecoder(1 << 20)
    t0 = time.perf_counter()
    try:
        writer.write(mllp_frame(payload))
        await writer.drain()
        acks: list[bytes] = []
        while not acks:
            data = await reader.read(65536)
            if not data:
                return time.perf_counter() - t0, b""
            acks = decoder.feed(data)
        return time.perf_counter() - t0, acks[0]
    finally:
        writer.close()


async def run_costly(bootstrap: str, costly: int, size: int, budget: float) -> None:
    base = f"bench.{uuid.uuid4().hex[:8]}"
    settings = Settings(
        bootstrap_servers=bootstrap,
        input_topics=(f"{base}.hl7v2",),
        deadletter_topic=f"{base}.dlq",
        document_deadline_seconds=budget,
        max_message_bytes=max(4 * 1024 * 1024, 2 * size),
    )
    stop = asyncio.Event()
    ready: asyncio.Future[tuple[str, int]] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve(settings, port=0, stop=stop, started=ready.set_result))
    host, port = await asyncio.wait_for(ready, 30)
    await _sender(host, port, 20, [])  # warm-up
    notes = [big_note(n, size) for n in range(costly)]
    await _one(host, port, notes[0][: 20 * 1024])  # the parse children are up
    small: list[float] = []
    big = asyncio.gather(*(_one(host, port, note) for note in notes))
    t0 = time.perf_counter()
    while not big.done():
        await _sender(host, port, 1, small)
    elapsed = time.perf_counter() - t0
    results = await big
    stop.set()
    await task
    codes = sorted({_code(ack) for _, ack in results})
    print(
        f"costly={costly} x {size / 1e6:.1f} MB budget={budget:.2f} s: over {elapsed:5.1f} s, "
        f"{len(small)} unrelated ACKs, worst wait {max(small) * 1e3:7.1f} ms "
        f"(p50 {statistics.median(small) * 1e3:.1f} ms); costly answered "
        f"{b','.join(codes).decode()} in {min(t for t, _ in results):.2f}-"
        f"{max(t for t, _ in results):.2f} s"
    )


def _code(ack: bytes) -> bytes:
    for seg in ack.split(b"\r"):
        if seg.startswith(b"MSA|"):
            code = seg.split(b"|")[1]
            err = [s for s in ack.split(b"\r") if s.startswith(b"ERR|")]
            reason = err[0].split(b"|")[8].split(b":")[0] if err else b""
            return code + (b" " + reason if reason else b"")
    return b"?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--connections", default="1,4,16")
    parser.add_argument("--costly", type=int, default=0, help="large notes sent at once")
    parser.add_argument("--costly-bytes", type=int, default=4_000_000)
    parser.add_argument("--budget", type=float, default=0.5, help="document_deadline_seconds")
    args = parser.parse_args()
    with EmbeddedBroker() as broker:
        if args.costly:
            asyncio.run(
                run_costly(broker.bootstrap_servers, args.costly, args.costly_bytes, args.budget)
            )
            return
        for c in (int(x) for x in args.connections.split(",")):
            asyncio.run(run(broker.bootstrap_servers, args.messages, c))


if __name__ == "__main__":
    main()
