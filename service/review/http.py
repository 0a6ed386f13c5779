"""What every review request and answer goes through: the body limit (from Content-Length
and while a chunked body streams, before any parsing), the validated decision bodies, and the
security headers on every answer of the /review pages."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi import Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipelines.review import DecisionKind, Scope
from pipelines.spans import Category

MAX_BODY_BYTES = 4096  # a login form or a decision: far less

# The page's script and style are files of this package (no inline script); PHI pages are
# never stored; the pages are never framed and send no referrer.
SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "Pragma": "no-cache",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self';"
    " img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none';"
    " frame-ancestors 'none'",
}


class Refused(Exception):  # noqa: N818 - an answer, not a fault
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def response(self) -> Response:
        return JSONResponse({"error": self.message}, status_code=self.status)


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request's body, refused (413) past ``limit`` bytes: at once when Content-Length
    says so, else as soon as the streamed chunks pass it — never read whole first."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isascii() or not declared.isdigit():
            raise Refused(400, "bad Content-Length")
        if int(declared) > limit:
            raise Refused(413, f"a review request's body is at most {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise Refused(413, f"a review request's body is at most {limit} bytes")
    return bytes(body)


async def read_json(request: Request, model: type[BaseModel]) -> Any:
    """The body as ``model`` (400 with no detail when it is not; nothing recorded yet)."""
    raw = await read_body(request)
    try:
        return model.model_validate(orjson.loads(raw or b"{}"))
    except (orjson.JSONDecodeError, ValidationError, TypeError, ValueError):
        raise Refused(400, "malformed request") from None


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class DecideBody(_Body):
    item: str = Field(min_length=1, max_length=128)
    seq: int | None = Field(default=None, ge=0)  # the page's; the answer uses the queue's
    kind: DecisionKind
    category: Category | None = None
    scope: Scope = Scope.NOTE


class MarkBody(_Body):
    item: str = Field(min_length=1, max_length=128)
    start: int = Field(ge=0)
    end: int = Field(gt=0)
    kind: DecisionKind = DecisionKind.PHI
    category: Category | None = None
    scope: Scope = Scope.NOTE


class SecureRoute(APIRoute):
    """A route whose every answer (pages, redirects, refusals) carries
    :data:`SECURITY_HEADERS`, and whose :class:`Refused` becomes its answer."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def secured(request: Request) -> Response:
            try:
                response = await handler(request)
            except Refused as refused:
                response = refused.response()
            for name, value in SECURITY_HEADERS.items():
                response.headers.setdefault(name, value)
            return response

        return secured
