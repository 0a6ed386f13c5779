"""A wrong master key at start (issue 15 item 11): /readyz names keystore_fault and nothing
else (the broker was never tried, so it is not "unreachable"), and the log names the key id
that is missing."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import httpx
import pytest

from pipelines.errors import MissingKeyError
from service.app import create_app
from service.metrics import Metrics
from service.runner import Runner
from service.settings import Settings


def _no_store() -> object:
    raise MissingKeyError(
        "the master key that sealed this record is not configured", key_id="clinic-2024"
    )


async def test_wrong_key_at_start_is_the_only_reason(caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(
        retry_initial_seconds=0.01, retry_max_seconds=0.02, bootstrap_servers="127.0.0.1:9"
    )
    runner = Runner(settings, Metrics(), _no_store)
    app = create_app(settings, runner=runner, start_runner=False)
    caplog.set_level(logging.ERROR, logger="deidstream.runner")
    task = asyncio.create_task(runner.prepare_processor())
    try:
        for _ in range(500):
            if runner.keystore_fault:
                break
            await asyncio.sleep(0.01)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t"
        ) as client:
            ready = await client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["reasons"] == ["keystore_fault:missing_key"]
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert any("key_id=clinic-2024" in m and "missing_key" in m for m in errors), errors
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        await runner.stop()
