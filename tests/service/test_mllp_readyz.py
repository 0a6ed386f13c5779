"""Issue 28 item 6: the MLLP gateway's metrics port answers ``/readyz`` with readiness, not
with the metrics text (prometheus_client's server answered every path with it). Ready once
the gateway listens: tests/integration/test_mllp_gateway.py; here, before — the broker is
not reachable, the gateway retries, and the port says 503."""

from __future__ import annotations

import asyncio

import httpx

from service.broker import free_port
from service.mllp import serve
from service.settings import Settings


async def test_readyz_is_503_while_the_broker_is_unreachable() -> None:
    settings = Settings(
        bootstrap_servers=f"127.0.0.1:{free_port()}",  # nothing listens there
        retry_initial_seconds=0.05,
        retry_max_seconds=0.2,
    )
    metrics_port = free_port()
    stop = asyncio.Event()
    task = asyncio.create_task(
        serve(settings, host="127.0.0.1", port=free_port(), stop=stop, metrics_port=metrics_port)
    )
    base = f"http://127.0.0.1:{metrics_port}"
    try:
        async with httpx.AsyncClient() as client:
            for _ in range(100):  # the port opens at once, before the broker is reached
                try:
                    ready = await client.get(f"{base}/readyz")
                    break
                except httpx.ConnectError:
                    await asyncio.sleep(0.05)
            else:
                raise AssertionError("the metrics port never opened")
            metrics = await client.get(f"{base}/metrics")
            other = await client.get(f"{base}/")
    finally:
        stop.set()
        assert await asyncio.wait_for(task, 20) == 0
    assert ready.status_code == 503 and ready.text.startswith("not ready")
    assert "deidstream_mllp_messages_total" not in ready.text
    assert metrics.status_code == 200 and "deidstream_mllp_connections_total" in metrics.text
    assert other.status_code == 404


async def test_a_taken_metrics_port_is_exit_status_1_before_anything() -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        settings = Settings(bootstrap_servers=f"127.0.0.1:{free_port()}")
        code = await asyncio.wait_for(
            serve(settings, host="127.0.0.1", port=free_port(), metrics_port=port), 20
        )
    assert code == 1
