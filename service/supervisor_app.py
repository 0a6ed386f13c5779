"""The supervisor's HTTP app (``deidstream run`` with more than one worker): one port for
the whole service. ``/metrics`` merges the workers' metric files; ``/readyz`` and
``/v1/status`` ask every worker over its Unix socket; ``/v1/deidentify`` is handed to a
worker, which checks the token itself (service/supervisor.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import httpx
from fastapi import FastAPI, HTTPException, Request, Response, status
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from service.app import _bearer, _check_token, read_capped
from service.metrics import package_version
from service.supervisor import Supervisor

FORWARDED_HEADERS = ("authorization", "content-type")
LAG = "deidstream_consumer_lag_messages"


def merged_registry(supervisor: Supervisor) -> CollectorRegistry:
    """The workers' files (live and archived) and the supervisor's own instruments."""
    registry = CollectorRegistry()
    files = CollectorRegistry()
    collect = cast(Callable[..., object], MultiProcessCollector)  # untyped in prometheus_client
    collect(files, path=str(supervisor.metrics_dir))
    registry.register(_KnownLagOnly(files))
    registry.register(_Own(supervisor.metrics.registry))
    return registry


class _KnownLagOnly:
    """The workers' merged metrics without the lag of partitions no live worker holds: a
    worker that lost a partition writes ``PartitionGauge.UNKNOWN`` (-1) for it, the merge
    keeps the owner's value (``livemax``), so what is still negative is nobody's lag —
    unknown, left out rather than shown as 0 (service/runner/group.py)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Any:
        for family in self._registry.collect():
            if family.name == LAG:
                family.samples = [s for s in family.samples if s.value >= 0]
            yield family


class _Own:
    """The supervisor's registry as one collector of the merged registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Any:
        return self._registry.collect()


def create_supervisor_app(supervisor: Supervisor) -> FastAPI:
    settings = supervisor.settings
    app = FastAPI(
        title="deidstream",
        version=package_version(),
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    registry = merged_registry(supervisor)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        """Liveness: the supervisor answers (it restarts dead workers itself)."""
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        """Ready when every worker runs and is ready; else why not, per worker."""
        body = await supervisor.readiness()
        code = status.HTTP_200_OK if body["ready"] else status.HTTP_503_SERVICE_UNAVAILABLE
        return JSONResponse(body, status_code=code)

    @app.get("/metrics")
    async def metrics() -> Response:
        """Every worker's metrics merged, and the supervisor's."""
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/v1/status")
    async def status_endpoint(request: Request) -> dict[str, Any]:
        """The workers' statuses merged (needs the API token, as in one process)."""
        if settings.api_token is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, "status needs DEIDSTREAM_API_TOKEN")
        _check_token(settings, await _bearer(request))
        return await supervisor.status(_forwarded(request))

    @app.post("/v1/deidentify")
    async def deidentify(request: Request) -> Response:
        """Handed to a running worker, headers and body as they came."""
        body = await read_capped(request, settings.max_message_bytes)
        worker = supervisor.pick()
        if worker is None:
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "no worker running")
        try:
            async with supervisor.client(worker) as http:
                got = await http.post(
                    "/v1/deidentify", content=body, headers=_forwarded(request), timeout=None
                )
        except httpx.HTTPError:
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "worker unavailable") from None
        return Response(
            got.content, status_code=got.status_code, media_type=got.headers.get("content-type")
        )

    if settings.review_enabled:
        _review_proxy(app, supervisor, settings.max_message_bytes)
    return app


# Hop-by-hop headers and those the proxy sets itself are not passed on (RFC 9110 §7.6.1).
_NOT_PROXIED = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "upgrade",
        "te",
        "trailer",
        "proxy-authorization",
        "proxy-authenticate",
    }
)


def _review_proxy(app: FastAPI, supervisor: Supervisor, max_bytes: int) -> None:
    """The review pages, served by worker 0 only: it alone runs the review intake and holds
    the reviewers' sessions (service/worker.py), so every request of a session reaches the
    same process. Cookies, CSRF form fields and redirects pass through unchanged."""

    async def review(path: str, request: Request) -> Response:
        worker = supervisor.workers[0]
        if not worker.running:
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "review worker restarting")
        body = await read_capped(request, max_bytes)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_PROXIED}
        target = f"/review{'/' + path if path else ''}"
        try:
            async with supervisor.client(worker) as http:
                got = await http.request(
                    request.method,
                    target,
                    content=body,
                    headers=headers,
                    params=request.query_params,
                    timeout=None,
                )
        except httpx.HTTPError:
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "worker unavailable") from None
        response = Response(got.content, status_code=got.status_code)
        for key, value in got.headers.multi_items():
            if key.lower() not in _NOT_PROXIED and key.lower() != "content-encoding":
                response.headers.append(key, value)
        return response

    async def review_root(request: Request) -> Response:
        return await review("", request)

    app.add_api_route("/review", review_root, methods=["GET", "POST"], include_in_schema=False)
    app.add_api_route(
        "/review/{path:path}", review, methods=["GET", "POST"], include_in_schema=False
    )


def _forwarded(request: Request) -> dict[str, str]:
    return {k: v for k, v in request.headers.items() if k.lower() in FORWARDED_HEADERS}
