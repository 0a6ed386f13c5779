"""HTTP endpoints, in-process (httpx ASGI transport), with a runner that is not consuming."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest
from toy_processor import ToyProcessor

from service.app import create_app
from service.metrics import Metrics
from service.runner import Runner
from service.settings import Settings

TOKEN = "test-token-123"


def _app(**over: object) -> tuple[object, Runner]:
    settings = Settings(**over)  # type: ignore[arg-type]
    runner = Runner(settings, Metrics(), ToyProcessor)
    return create_app(settings, runner=runner, start_runner=False), runner


def _client(app: object) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def test_health_ready_status_metrics_docs() -> None:
    app, runner = _app(api_token=TOKEN, api_docs_enabled=True)
    async with _client(app) as c:
        assert (await c.get("/healthz")).json() == {"status": "ok"}
        ready = await c.get("/readyz")
        assert ready.status_code == 503 and ready.json()["ready"] is False
        status = (await c.get("/v1/status", headers={"Authorization": f"Bearer {TOKEN}"})).json()
        assert status["assignments"] == [] and status["ready"] is False
        metrics = await c.get("/metrics")
        assert metrics.status_code == 200
        assert "deidstream_build_info{" in metrics.text
        assert metrics.headers["content-type"].startswith("text/plain")
        spec = (await c.get("/openapi.json")).json()
        assert {"/healthz", "/readyz", "/metrics", "/v1/status", "/v1/deidentify"} <= set(
            spec["paths"]
        )
        assert (await c.get("/docs")).status_code == 200
    await runner.stop()


# -- issue 14, item 11 ------------------------------------------------------------------------


@pytest.mark.parametrize("auth", [None, "Bearer wrong", f"Bearer {TOKEN}x", "Basic dGVzdA=="])
async def test_status_requires_the_token(auth: str | None) -> None:
    app, runner = _app(api_token=TOKEN)
    async with _client(app) as c:
        r = await c.get("/v1/status", headers={"Authorization": auth} if auth else {})
        assert r.status_code == 401 and "assignments" not in r.text
    await runner.stop()


async def test_status_without_a_configured_token_is_not_served() -> None:
    app, runner = _app()
    async with _client(app) as c:
        assert (await c.get("/v1/status")).status_code == 404
        assert (await c.get("/v1/status", headers={"Authorization": "Bearer "})).status_code == 404
    await runner.stop()


async def test_docs_and_schema_are_off_by_default() -> None:
    app, runner = _app(api_token=TOKEN, deidentify_api_enabled=True)
    async with _client(app) as c:
        for path in ("/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"):
            assert (await c.get(path)).status_code == 404, path
    await runner.stop()


class _Body:
    """A request body of ``total`` bytes in 1 MiB chunks, counting what the server read."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.read = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunk = b"x" * (1 << 20)
        while self.read < self.total:
            self.read += len(chunk)
            yield chunk


@pytest.mark.parametrize("declared", [True, False])
async def test_an_oversize_body_is_refused_before_it_is_read_whole(declared: bool) -> None:
    limit = 4 * 1024 * 1024
    app, runner = _app(deidentify_api_enabled=True, api_token=TOKEN, max_message_bytes=limit)
    await runner.prepare_processor()
    body = _Body(400 * 1024 * 1024)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/fhir+json"}
    if declared:
        headers["Content-Length"] = str(body.total)
    async with _client(app) as c:
        r = await c.post("/v1/deidentify", content=body, headers=headers)
    assert r.status_code == 413
    # declared: refused on the header, before the body; streamed: at the cap (+ one chunk)
    assert body.read <= (1 << 20 if declared else limit + (1 << 20))
    await runner.stop()


async def test_a_body_at_the_limit_is_taken() -> None:
    app, runner = _app(deidentify_api_enabled=True, api_token=TOKEN, max_message_bytes=1024)
    await runner.prepare_processor()
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/fhir+json"}
    body = json.dumps({"patient": "p1", "doc": "d1", "v": 1, "text": "x"}).encode()
    async with _client(app) as c:
        ok = await c.post("/v1/deidentify", content=body.ljust(1024), headers=auth)
        big = await c.post("/v1/deidentify", content=body.ljust(1025), headers=auth)
    assert ok.status_code == 200 and big.status_code == 413
    await runner.stop()


async def test_deidentify_is_off_by_default() -> None:
    app, runner = _app(api_token=TOKEN)
    async with _client(app) as c:
        r = await c.post(
            "/v1/deidentify", content=b"{}", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert r.status_code == 404
    await runner.stop()


@pytest.mark.parametrize("auth", [None, "Bearer wrong", "Basic dGVzdA==", f"Bearer {TOKEN}x"])
async def test_deidentify_requires_the_token(auth: str | None) -> None:
    app, runner = _app(deidentify_api_enabled=True, api_token=TOKEN)
    headers = {"Authorization": auth} if auth else {}
    async with _client(app) as c:
        r = await c.post("/v1/deidentify", content=b"{}", headers=headers)
        assert r.status_code == 401
    await runner.stop()


async def test_deidentify_runs_the_processor_without_confirming() -> None:
    app, runner = _app(deidentify_api_enabled=True, api_token=TOKEN)
    await runner.prepare_processor()
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/fhir+json"}
    body = json.dumps({"patient": "p1", "doc": "d1", "v": 1, "text": "hello"}).encode()
    async with _client(app) as c:
        first = await c.post("/v1/deidentify", content=body, headers=auth)
        again = await c.post("/v1/deidentify", content=body, headers=auth)
        bad = await c.post("/v1/deidentify", content=b"not json", headers=auth)
    assert first.status_code == 200
    out = first.json()["outcomes"]
    assert out[0]["kind"] == "publish"
    assert out[0]["document"]["text"] == "[REDACTED] HELLO"
    # nothing was confirmed, so the same message is still "new" for the stream
    assert again.json()["outcomes"][0]["kind"] == "publish"
    assert bad.status_code == 422
    assert bad.json()["reason_class"] == "invalid_json"
    assert "not json" not in bad.text
    await runner.stop()
