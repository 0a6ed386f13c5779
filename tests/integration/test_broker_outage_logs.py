"""A broker outage is a visible stall that logs a bounded number of lines (issue 24, item 4),
against the real broker: ``deidstream run`` (one worker, and two under the supervisor) as an
operator starts it, the broker stopped under it for 20 s. Before, aiokafka and the runner
wrote ~200 lines per second; now each kind of line at most a few times a minute. The
service must also say so: ``/readyz`` 503 (``stalled:broker`` or ``broker_unreachable``)
and ``deidstream_stall_seconds{cause="broker"}`` above 0 — polled, never timed."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest
from kafka_helpers import unique
from service_process import ServiceProcess
from test_workers import _env, _get, _metrics

from service.broker import EmbeddedBroker, free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]

OUTAGE_SECONDS = 20.0
# each kind of line (logger and message) 5 times a minute at most (service.logs.RepeatLimit),
# per process; the kinds an outage produces are a handful
MAX_LINES = 120


def _kind(line: str) -> str:
    """A log line without its time stamp and numbers: what repeats."""
    words = line.split(" ", 2)[-1]
    return "".join("#" if c.isdigit() else c for c in words)[:90]


@pytest.mark.parametrize("workers", ["1", "2"])
async def test_a_broker_outage_is_visible_and_logs_a_bounded_number_of_lines(
    own_tansu: EmbeddedBroker, tmp_path: Path, workers: str
) -> None:
    base = unique("outage")
    port = free_port()
    env = {
        **_env(own_tansu, tmp_path, base, port),
        "DEIDSTREAM_STALL_SECONDS": "2",
        "DEIDSTREAM_RETRY_MAX_SECONDS": "1",
    }
    log = tmp_path / "service.log"
    service = ServiceProcess(env, log, "--workers", workers)
    seen: dict[str, object] = {}
    try:
        await service.status(lambda st: st["ready"], within=120)
        before = len(log.read_bytes())
        own_tansu.stop()
        stopped = time.monotonic()
        while time.monotonic() - stopped < OUTAGE_SECONDS:
            ready = await _get(port, "/readyz")
            if ready is not None and ready.status_code == 503:
                reasons = ready.json()["reasons"]
                if any("stalled:broker" in r or "broker_unreachable" in r for r in reasons):
                    seen.setdefault("readyz", reasons)
            if "metric" not in seen:
                metrics = await _metrics(port)
                if metrics.get("deidstream_stall_seconds,cause=broker", 0) > 0:
                    seen["metric"] = metrics["deidstream_stall_seconds,cause=broker"]
            await asyncio.sleep(0.5)
        lines = log.read_bytes()[before:].decode(errors="replace").splitlines()
    finally:
        service.kill()
    kinds = Counter(_kind(line) for line in lines)
    print(f"\n{workers} worker(s), broker down {OUTAGE_SECONDS:.0f} s: {len(lines)} lines")
    for kind, n in kinds.most_common(8):
        print(f"  {n:4d}  {kind}")
    assert "readyz" in seen, "the outage never reached /readyz"
    assert "metric" in seen, "deidstream_stall_seconds{cause=broker} never moved"
    assert len(lines) <= MAX_LINES, kinds.most_common(8)
