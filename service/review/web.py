"""The review pages (server-rendered, Jinja2; a little vanilla JS for the keys).

``GET /review`` shows one queue item: the whole note, the candidate highlighted, the other
spans the detector found underlined with their category; the keys decide (see the page's
legend and docs/review.md). Decisions go to ``POST /review/decide`` as JSON with the
session's CSRF token; the answer names the next page. One item is read per page by its
queue number (an index range scan): the page costs the same with 10 or 10,000 items queued.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.concurrency import run_in_threadpool

from pipelines.review import (
    Decision,
    DecisionKind,
    QueueItem,
    ReviewError,
    ReviewQueue,
    Role,
    Scope,
)
from pipelines.spans import Category
from service.review.auth import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    Session,
    Sessions,
    check_login,
    same_token,
)
from service.settings import Settings

log = logging.getLogger("deidstream.review")
_TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
)
MAX_FORM_BYTES = 4096


def highlight(item: QueueItem) -> Markup:
    """The note as HTML: the candidate in <mark>, other spans in <span class=other>."""
    text = item.text
    marks: list[tuple[int, int, str, str]] = []
    cand = item.candidate
    if cand is not None:
        marks.append((cand.start, cand.end, "cand", cand.category.value))
    for s in sorted(item.others):
        if cand is not None and s.overlaps(cand):
            continue
        if marks and any(s.start < e and b < s.end for b, e, *_ in marks):
            continue
        marks.append((s.start, s.end, "other", s.category.value))
    marks.sort()
    out: list[str] = []
    pos = 0
    for start, end, cls, cat in marks:
        out.append(str(escape(text[pos:start])))
        tag = "mark" if cls == "cand" else "span"
        extra = ' id="candidate"' if cls == "cand" else ""
        out.append(
            f'<{tag} class="{cls}"{extra} title="{escape(cat)}">{escape(text[start:end])}</{tag}>'
        )
        pos = end
    out.append(str(escape(text[pos:])))
    return Markup("".join(out))  # noqa: S704 - every piece of text above is escaped


def build_router(
    settings: Settings, queue: ReviewQueue, after_decision: Callable[[list[str]], Any] | None = None
) -> APIRouter:
    router = APIRouter(prefix="/review", include_in_schema=False)
    sessions = Sessions(settings.review_session_minutes)
    secure = settings.review_cookie_secure
    max_age = int(settings.review_session_minutes * 60)

    def session_of(request: Request) -> Session | None:
        return sessions.get(request.cookies.get(SESSION_COOKIE))

    def guarded(request: Request) -> Session | Response:
        """The session of a state-changing request with its CSRF token, else the refusal."""
        session = session_of(request)
        if session is None:
            return Response(status_code=401)
        if not same_token(session.csrf, request.headers.get("x-csrf-token")):
            return Response("CSRF token missing or wrong", status_code=403)
        return session

    @router.get("/login", response_class=HTMLResponse)
    async def login_page(request: Request, failed: int = 0) -> Response:
        import secrets

        token = secrets.token_urlsafe(24)
        page = _TEMPLATES.get_template("login.html").render(csrf=token, failed=bool(failed))
        resp = HTMLResponse(page, headers=_NO_STORE)
        resp.set_cookie(
            LOGIN_COOKIE,
            token,
            httponly=True,
            samesite="strict",
            secure=secure,
            max_age=600,
            path="/review",
        )
        return resp

    @router.post("/login")
    async def login(request: Request) -> Response:
        return await _login(request, queue, sessions, secure, max_age)

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        session = guarded(request)
        if isinstance(session, Response):
            return session
        sessions.close(request.cookies.get(SESSION_COOKIE))
        return JSONResponse({"next": "/review/login"})

    @router.get("", response_class=HTMLResponse)
    async def page(request: Request, at: int = 0) -> Response:
        session = session_of(request)
        if session is None:
            return RedirectResponse("/review/login", status_code=303)
        context = await run_in_threadpool(_page_context, queue, session, at)
        return HTMLResponse(
            _TEMPLATES.get_template("review.html").render(**context), headers=_NO_STORE
        )

    @router.get("/prev")
    async def previous(request: Request, at: int) -> Response:
        session = session_of(request)
        if session is None:
            return RedirectResponse("/review/login", status_code=303)
        found = await run_in_threadpool(queue.page, session.role, at, 1, True)
        return RedirectResponse(f"/review?at={found[0].seq if found else at}", status_code=303)

    @router.post("/decide")
    async def decide(request: Request) -> Response:
        session = guarded(request)
        if isinstance(session, Response):
            return session
        try:
            body = await request.json()
            decision = _decision(body, session)
            decided = await run_in_threadpool(queue.decide, decision)
        except ReviewError as exc:
            return JSONResponse({"error": str(exc)}, status_code=403)
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "malformed decision"}, status_code=400)
        _after(after_decision, queue, decided)
        seq = int(body.get("seq", 0))
        return JSONResponse({"next": f"/review?at={seq + 1}"})

    @router.post("/undo")
    async def undo(request: Request) -> Response:
        session = guarded(request)
        if isinstance(session, Response):
            return session
        items = await run_in_threadpool(queue.undo, session.user)
        rows = [await run_in_threadpool(queue.db.item, i) for i in items]
        seqs = sorted(r.seq for r in rows if r is not None)
        return JSONResponse(
            {"next": f"/review?at={seqs[0]}" if seqs else "/review", "undone": len(items)}
        )

    return router


_NO_STORE = {
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline';"
    " script-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
}


async def _login(
    request: Request, queue: ReviewQueue, sessions: Sessions, secure: bool, max_age: int
) -> Response:
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return Response(status_code=413)
    form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
    if not same_token(request.cookies.get(LOGIN_COOKIE, ""), form.get("csrf")):
        return Response("CSRF token missing or wrong", status_code=403)
    user = form.get("username", "")
    role = await run_in_threadpool(check_login, queue, user, form.get("password", ""))
    if role is None:
        await run_in_threadpool(queue.store.audit, "review-login", user[:64], "", "refused")
        return RedirectResponse("/review/login?failed=1", status_code=303)
    await run_in_threadpool(queue.store.audit, "review-login", user, "", role.value)
    resp = RedirectResponse("/review", status_code=303)
    resp.set_cookie(
        SESSION_COOKIE,
        sessions.open(user, role),
        httponly=True,
        samesite="strict",
        secure=secure,
        max_age=max_age,
        path="/review",
    )
    resp.delete_cookie(LOGIN_COOKIE, path="/review")
    return resp


def _after(
    hook: Callable[[list[str]], Any] | None, queue: ReviewQueue, item_ids: list[str]
) -> None:
    """Settle the held documents of the items just decided (in a thread; errors logged by
    class only — the intake loop tries again)."""
    if hook is None:
        return

    def run() -> Any:
        rows = [queue.db.item(i) for i in item_ids]
        return hook(sorted({r.doc_id for r in rows if r is not None}))

    def report(done: asyncio.Future[Any]) -> None:
        error = done.exception()
        if error is not None:
            log.warning("review: settling after a decision failed (%s)", type(error).__name__)

    task = asyncio.get_running_loop().run_in_executor(None, run)
    task.add_done_callback(report)


def _decision(body: dict[str, Any], session: Session) -> Decision:
    kind = DecisionKind(str(body["kind"]))
    category = Category(str(body["category"])) if kind is DecisionKind.PHI else None
    scope = (
        Scope(str(body.get("scope", "note")))
        if kind in (DecisionKind.PHI, DecisionKind.NOT_PHI)
        else Scope.NOTE
    )
    # the role is the session's: a request cannot claim another
    return Decision(str(body["item"]), session.user, session.role, kind, category, scope)


def _page_context(queue: ReviewQueue, session: Session, at: int) -> dict[str, Any]:
    found = queue.page(session.role, max(at - 1, 0), 1)
    if not found and at > 0:  # past the end: wrap round to the first open item
        found = queue.page(session.role, 0, 1)
    progress = queue.progress()
    total = sum(progress.values())
    item = found[0] if found else None
    return {
        "session": session,
        "item": item,
        "note": highlight(item) if item else "",
        "categories": [c.value for c in Category],
        "suggested": item.candidate.category.value if item and item.candidate else "NAME_OTHER",
        "progress": progress,
        "total": total,
        "position": queue.db.position(item.seq) + 1 if item else total,
        "expert": session.role is Role.EXPERT,
    }
