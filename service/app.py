"""The HTTP side of the service (FastAPI), running in the same event loop as the consumer.

``create_app(settings)`` builds everything (metrics registry, runner, routes) — nothing happens
at import time. The app's lifespan starts the runner and drains it on shutdown, so
``uvicorn --factory`` and ``deidstream run`` behave the same.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

import orjson
from fastapi import Depends, FastAPI, HTTPException, Request, Response, status
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from pipelines.errors import DeidstreamError
from pipelines.outcome import Outcome
from service.metrics import Metrics, package_version
from service.runner import ProcessorFactory, Runner
from service.settings import Settings

log = logging.getLogger("deidstream.app")

_bearer = HTTPBearer(auto_error=False)


def _hint_from_content_type(content_type: str) -> str:
    ct = content_type.lower()
    if "fhir" in ct or "json" in ct:
        return "fhir"
    if "hl7" in ct or "er7" in ct:
        return "hl7v2"
    return "auto"


def _outcome_json(out: Outcome) -> dict[str, Any]:
    document: Any = None
    if out.value:
        try:
            document = orjson.loads(out.value)
        except orjson.JSONDecodeError:
            document = None
    return {
        "kind": out.kind.value,
        "research_key": out.research_key,
        "reason_class": out.reason_class,
        "reason": out.reason,
        "span_counts": dict(out.span_counts),
        "document": document,
    }


def _check_token(settings: Settings, credentials: HTTPAuthorizationCredentials | None) -> None:
    token = settings.api_token
    expected = token.get_secret_value().encode() if token is not None else b""
    given = (credentials.credentials if credentials else "").encode()
    if not credentials or not expected or not secrets.compare_digest(given, expected):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "a valid bearer token is required",
            headers={"WWW-Authenticate": "Bearer"},
        )


async def read_capped(request: Request, limit: int) -> bytes:
    """The body, refused with 413 as soon as it is known to exceed ``limit``: by its
    ``Content-Length`` before a byte is read, else while streaming (never held whole)."""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, "message too large")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, "message too large")
    return bytes(body)


def _not_ready_reasons(st: dict[str, Any]) -> list[str]:
    """Why the runner whose status is ``st`` is not ready."""
    if st["keystore_fault"]:
        # the key store as a whole is unusable (wrong or missing key): that is the one
        # reason. The runner opens the store before it connects, so the broker's state
        # is unknown then, not "unreachable"
        reasons = [f"keystore_fault:{st['keystore_fault']}"]
    else:
        checks = (
            ("started", "starting"),
            ("broker_reachable", "broker_unreachable"),
            ("keystore_reachable", "keystore_unreachable"),
            ("assignments", "no_partitions"),
        )
        reasons = [reason for field, reason in checks if not st[field]]
    # a stall (a document past its budget, a key store call or the broker hanging)
    reasons.extend(f"stalled:{cause}" for cause in st.get("stalls", {}))
    return reasons


def _readiness(st: dict[str, Any]) -> JSONResponse:
    """The /readyz answer for the runner status ``st``: 200 when ready, else 503 and why."""
    body = {
        "ready": st["ready"],
        "broker_reachable": st["broker_reachable"],
        "keystore_reachable": st["keystore_reachable"],
        "keystore_fault": st["keystore_fault"],
        "assigned_partitions": len(st["assignments"]),
        "stalls": st.get("stalls", {}),
        "reasons": [] if st["ready"] else _not_ready_reasons(st),
    }
    code = status.HTTP_200_OK if st["ready"] else status.HTTP_503_SERVICE_UNAVAILABLE
    return JSONResponse(body, status_code=code)


def _refused(exc: DeidstreamError) -> JSONResponse:
    """A document the pipeline refused: 503 when a retry may succeed, else 422."""
    code = (
        status.HTTP_503_SERVICE_UNAVAILABLE
        if exc.retriable
        else status.HTTP_422_UNPROCESSABLE_CONTENT
    )
    return JSONResponse({"reason_class": exc.reason_class, "reason": str(exc)}, status_code=code)


def _the_runner(
    settings: Settings,
    processor_factory: ProcessorFactory | None,
    runner: Runner | None,
    metrics: Metrics | None,
    on_fatal: Callable[[BaseException], None] | None,
) -> Runner:
    """``runner`` if given, else one made from ``processor_factory`` (default: the real
    pipeline)."""
    if runner is not None:
        return runner
    metrics = metrics or Metrics()
    if processor_factory is None:
        from service.wiring import real_processor_factory

        processor_factory = real_processor_factory(settings, metrics)
    return Runner(settings, metrics, processor_factory, on_fatal=on_fatal)


def create_app(
    settings: Settings,
    *,
    processor_factory: ProcessorFactory | None = None,
    runner: Runner | None = None,
    metrics: Metrics | None = None,
    start_runner: bool = True,
    on_fatal: Callable[[BaseException], None] | None = None,
    review_pages: bool = True,
    worker_routes: bool = False,
) -> FastAPI:
    """Build the app. Pass ``runner`` to share one you manage; otherwise one is made here
    from ``processor_factory`` (default: the real pipeline) and run by the lifespan.
    ``review_pages=False``: no review pages nor intake even when the workbench is enabled
    (the workers other than the one the supervisor sends reviewers to)."""
    the_runner = _the_runner(settings, processor_factory, runner, metrics, on_fatal)

    workbench: Any = None  # the review pages and intake (service/review), when enabled

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if start_runner:
            the_runner.start_background()
        if workbench is not None:
            workbench.start()
        try:
            yield
        finally:
            if workbench is not None:
                await workbench.stop()
            if start_runner:
                await the_runner.stop()

    docs = settings.api_docs_enabled  # off in production: the schema maps the attack surface
    app = FastAPI(
        title="deidstream",
        version=package_version(),
        description="Streaming de-identification of HL7 v2 / FHIR clinical reports.",
        lifespan=lifespan,
        docs_url="/docs" if docs else None,
        redoc_url="/redoc" if docs else None,
        openapi_url="/openapi.json" if docs else None,
    )
    app.state.settings = settings
    if settings.review_enabled and review_pages:
        from service.review import mount

        workbench = mount(app, settings)
        app.state.review = workbench
    app.state.runner = the_runner
    app.state.metrics = the_runner.metrics
    _operations_routes(app, settings, the_runner)
    if worker_routes:
        _worker_routes(app, the_runner)
    _deidentify_route(app, settings, the_runner)
    return app


def _operations_routes(app: FastAPI, settings: Settings, the_runner: Runner) -> None:
    """/healthz, /readyz, /metrics and /v1/status."""
    metrics = the_runner.metrics

    def require_status_token(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> None:
        if settings.api_token is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, "status needs DEIDSTREAM_API_TOKEN")
        _check_token(settings, credentials)

    @app.get("/healthz", tags=["operations"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process and its event loop answer."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["operations"])
    async def readyz() -> JSONResponse:
        """Readiness: broker and key store reachable, partitions assigned."""
        return _readiness(the_runner.status())

    @app.get("/metrics", tags=["operations"])
    async def metrics_endpoint() -> Response:
        """Prometheus text exposition of this instance's registry."""
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)

    @app.get("/v1/status", tags=["operations"], dependencies=[Depends(require_status_token)])
    async def status_endpoint() -> dict[str, Any]:
        """Assignments, lag and counts (no message content)."""
        return the_runner.status()


def _worker_routes(app: FastAPI, the_runner: Runner) -> None:
    """A worker's routes for its supervisor only (served on the worker's Unix socket, in a
    directory only the service's user can read): the status without a token, which the
    supervisor reads every few seconds for the group's partitions (service/supervisor.py)."""

    @app.get("/worker/status", include_in_schema=False)
    async def worker_status() -> dict[str, Any]:
        return the_runner.status()


def _deidentify_route(app: FastAPI, settings: Settings, the_runner: Runner) -> None:
    """POST /v1/deidentify (off unless enabled and a token is set)."""

    def require_token(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> None:
        if not settings.deidentify_api_enabled or settings.api_token is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, "the de-identify API is disabled")
        _check_token(settings, credentials)

    @app.post(
        "/v1/deidentify",
        tags=["integration testing"],
        dependencies=[Depends(require_token)],
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "x-application/hl7-v2+er7": {"schema": {"type": "string"}},
                    "application/fhir+json": {"schema": {"type": "object"}},
                },
            }
        },
    )
    async def deidentify(request: Request) -> JSONResponse:
        """De-identify one posted HL7 v2 message or FHIR resource, synchronously.

        Off unless ``DEIDSTREAM_DEIDENTIFY_API_ENABLED`` and ``DEIDSTREAM_API_TOKEN`` are set.
        What the stream would publish (same policy, the reviewers' lists, the patient's real
        state — so the token is a re-identification credential: docs/security.md). Neither
        dedup marks nor patient state are written (service/preview.py); every patient read
        is an audit line first, and no line, no answer (503).
        """
        raw = await read_capped(request, settings.max_message_bytes)
        hint = _hint_from_content_type(request.headers.get("content-type", ""))
        try:
            outcomes = await the_runner.deidentify(raw, hint)
        except DeidstreamError as exc:
            return _refused(exc)
        except RuntimeError:
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "not started") from None
        return JSONResponse({"outcomes": [_outcome_json(o) for o in outcomes]})
