"""The review pages (server-rendered, Jinja2; a small script file for the keys).

``GET /review`` shows one queue item: the whole note, the candidate highlighted, the other
spans the detector found underlined with their category, and — for a held note — why it is
held and where its identifiers survive; the keys decide (see the page's legend and
docs/review.md). Decisions go to ``POST /review/decide`` (``/review/mark`` for a string the
machine did not propose) as JSON with the session's CSRF token; the answer names the next
page. One item is read per page by its queue number (an index range scan): the page costs
the same with 10 or 10,000 items queued. Every answer carries the security headers and
every POST body is bounded (:mod:`service.review.http`).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.concurrency import run_in_threadpool

from pipelines.phi.lists import REVIEW_SOURCE
from pipelines.review import (
    Decision,
    DecisionKind,
    ItemKind,
    ItemStatus,
    QueueItem,
    ReviewError,
    ReviewQueue,
    Role,
    Scope,
    StaleItem,
)
from pipelines.review_held import SURVIVING_SOURCE
from pipelines.spans import Category, Span
from service.review.auth import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    LoginThrottle,
    Session,
    Sessions,
    check_login,
    same_token,
    unknown_account,
)
from service.review.http import (
    DecideBody,
    MarkBody,
    Refused,
    SecureRoute,
    read_body,
    read_json,
)
from service.settings import Settings

log = logging.getLogger("deidstream.review")
_HERE = Path(__file__).parent
_TEMPLATES = Environment(
    loader=FileSystemLoader(_HERE / "templates"),
    autoescape=select_autoescape(["html"]),
)
_STATIC = {
    name: (media, (_HERE / "static" / name).read_bytes())
    for name, media in (
        ("review.js", "text/javascript"),
        ("review.css", "text/css"),
        ("favicon.svg", "image/svg+xml"),
    )
}


def highlight(item: QueueItem, decided: tuple[Span, ...] = ()) -> Markup:
    """The note as HTML: the candidate in <mark>, where an identifier survives in
    <mark class=left>, strings already decided PHI in <mark class=decided>, other spans in
    <span class=other>. Each one's title names its category and the pass that found it
    (``Span.source``, as ``deidstream detect --explain`` shows it)."""
    text = item.text
    marks: list[tuple[int, int, str, str]] = []
    cand = item.candidate
    if cand is not None:
        marks.append((cand.start, cand.end, "cand", _label(cand)))
    layers: tuple[tuple[str, tuple[Span, ...]], ...] = (
        ("left", item.left),
        ("decided", decided),
        ("other", item.others),
    )
    for cls, spans in layers:
        for s in sorted(spans):
            if any(s.start < e and b < s.end for b, e, *_ in marks):
                continue
            marks.append((s.start, s.end, cls, _label(s)))
    marks.sort()
    out: list[str] = []
    pos = 0
    for start, end, cls, cat in marks:
        out.append(str(escape(text[pos:start])))
        tag = "span" if cls == "other" else "mark"
        extra = ' id="candidate"' if cls == "cand" else ""
        title = {"left": f"survives: {cat}", "decided": f"decided PHI: {cat}"}.get(cls, cat)
        out.append(
            f'<{tag} class="{cls}"{extra} data-start="{start}" title="{escape(title)}">'
            f"{escape(text[start:end])}</{tag}>"
        )
        pos = end
    out.append(str(escape(text[pos:])))
    return Markup("".join(out))  # noqa: S704 - every piece of text above is escaped


def found_by(source: str) -> str:
    """Who found a span, for a person: the detector's pass names as ``deidstream detect
    --explain`` writes them ("names.cue+tagger"), or what put it there when no pass did (the
    leak guard, a reviewer's decision). Code, never note text."""
    return _NOT_A_PASS.get(source, source)


_NOT_A_PASS = {SURVIVING_SOURCE: "the leak guard", REVIEW_SOURCE: "a reviewer's decision"}
_TEMPLATES.filters["found_by"] = found_by


def _label(span: Span) -> str:
    """A span's category, and what found it when known ("NAME_PROVIDER · names.cue")."""
    if not span.source:
        return span.category.value
    return f"{span.category.value} · {found_by(span.source)}"


def build_router(
    settings: Settings,
    queue: ReviewQueue,
    after_decision: Callable[[list[str]], Any] | None = None,
    throttle: LoginThrottle | None = None,
) -> APIRouter:
    router = APIRouter(prefix="/review", include_in_schema=False, route_class=SecureRoute)
    sessions = Sessions(settings.review_session_minutes)
    login = _Login(queue, sessions, throttle or LoginThrottle(), settings)

    def session_of(request: Request) -> Session | None:
        return sessions.get(request.cookies.get(SESSION_COOKIE))

    def guarded(request: Request) -> Session:
        """The session of a state-changing request with its CSRF token, else refused."""
        session = session_of(request)
        if session is None:
            raise Refused(401, "sign in first")
        if not same_token(session.csrf, request.headers.get("x-csrf-token")):
            raise Refused(403, "CSRF token missing or wrong")
        return session

    @router.get("/login", response_class=HTMLResponse)
    async def login_page(failed: int = Query(0, ge=0, le=2)) -> Response:
        return login.page(failed)

    @router.post("/login")
    async def login_post(request: Request) -> Response:
        return await login.post(request)

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        guarded(request)
        await read_body(request)
        sessions.close(request.cookies.get(SESSION_COOKIE))
        return JSONResponse({"next": "/review/login"})

    @router.get("/static/{name}")
    async def static(name: str) -> Response:
        found = _STATIC.get(name)
        if found is None:
            return Response(status_code=404)
        return Response(found[1], media_type=found[0])

    @router.get("/")
    async def slash() -> Response:
        return RedirectResponse("/review", status_code=303)

    @router.get("", response_class=HTMLResponse)
    async def page(request: Request, at: int = Query(0, ge=0, lt=2**62)) -> Response:
        session = session_of(request)
        if session is None:
            return RedirectResponse("/review/login", status_code=303)
        context = await run_in_threadpool(_page_context, queue, session, at)
        return HTMLResponse(_TEMPLATES.get_template("review.html").render(**context))

    @router.get("/prev")
    async def previous(request: Request, at: int = Query(ge=0, lt=2**62)) -> Response:
        session = session_of(request)
        if session is None:
            return RedirectResponse("/review/login", status_code=303)
        found = await run_in_threadpool(queue.page, session.role, at, 1, True)
        return RedirectResponse(f"/review?at={found[0].seq if found else at}", status_code=303)

    @router.post("/decide")
    async def decide(request: Request) -> Response:
        session = guarded(request)
        body: DecideBody = await read_json(request, DecideBody)
        decision = _decision(session, body.item, body.kind, body.category, body.scope)
        decided = await _run(queue.decide, decision)
        _after(after_decision, queue, decided)
        return JSONResponse({"next": await run_in_threadpool(_next, queue, body.item)})

    @router.post("/mark")
    async def mark(request: Request) -> Response:
        session = guarded(request)
        body: MarkBody = await read_json(request, MarkBody)
        decision = _decision(session, body.item, body.kind, body.category, body.scope)
        marked, decided = await _run(queue.mark, body.item, body.start, body.end, decision)
        _after(after_decision, queue, decided)
        row = await run_in_threadpool(queue.db.item, body.item)
        return JSONResponse({"next": f"/review?at={row.seq if row else 0}", "marked": marked})

    @router.post("/undo")
    async def undo(request: Request) -> Response:
        session = guarded(request)
        await read_body(request)
        items = await run_in_threadpool(queue.undo, session.user)
        rows = [await run_in_threadpool(queue.db.item, i) for i in items]
        seqs = sorted(r.seq for r in rows if r is not None)
        return JSONResponse(
            {"next": f"/review?at={seqs[0]}" if seqs else "/review", "undone": len(items)}
        )

    return router


async def _run(call: Callable[..., Any], *args: Any) -> Any:
    """``call`` in a thread; a refused review action becomes its answer (nothing recorded:
    the queue checks before it writes)."""
    try:
        return await run_in_threadpool(call, *args)
    except StaleItem as exc:
        raise Refused(409, str(exc)) from None
    except ReviewError as exc:
        raise Refused(403, str(exc)) from None


def _decision(
    session: Session, item: str, kind: DecisionKind, category: Category | None, scope: Scope
) -> Decision:
    """The decision of a validated body; the role is the session's (a request cannot claim
    another); the page always sends a category and a scope, which only some kinds use."""
    try:
        return Decision(
            item,
            session.user,
            session.role,
            kind,
            category if kind is DecisionKind.PHI else None,
            scope if kind in (DecisionKind.PHI, DecisionKind.NOT_PHI) else Scope.NOTE,
        )
    except ReviewError as exc:
        raise Refused(400, str(exc)) from None


def _next(queue: ReviewQueue, item_id: str) -> str:
    """The page after deciding ``item_id``: the next item in queue order after it."""
    row = queue.db.item(item_id)
    return f"/review?at={row.seq + 1}" if row else "/review"


class _Login:
    """The sign-in form and its POST: CSRF, body limit, throttle before scrypt, audit."""

    def __init__(
        self, queue: ReviewQueue, sessions: Sessions, throttle: LoginThrottle, settings: Settings
    ) -> None:
        self.queue, self.sessions, self.throttle = queue, sessions, throttle
        self.secure = settings.review_cookie_secure
        self.max_age = int(settings.review_session_minutes * 60)

    def page(self, failed: int) -> Response:
        token = secrets.token_urlsafe(24)
        page = _TEMPLATES.get_template("login.html").render(csrf=token, failed=failed)
        resp = HTMLResponse(page)
        resp.set_cookie(
            LOGIN_COOKIE,
            token,
            httponly=True,
            samesite="strict",
            secure=self.secure,
            max_age=600,
            path="/review",
        )
        return resp

    async def post(self, request: Request) -> Response:
        body = await read_body(request)
        fields = parse_qs(body.decode("utf-8", "replace"), max_num_fields=8)
        form = {k: v[0] for k, v in fields.items()}
        if not same_token(request.cookies.get(LOGIN_COOKIE, ""), form.get("csrf")):
            raise Refused(403, "CSRF token missing or wrong")
        user, password = form.get("username", ""), form.get("password", "")
        client = request.client.host if request.client else "-"
        why = self.throttle.refusal(user, client)
        if why is not None:
            log.info("review: a sign-in was refused before checking it (%s)", why)
            wait = str(int(self.throttle.window))
            return RedirectResponse(
                "/review/login?failed=2", status_code=303, headers={"Retry-After": wait}
            )
        if not self.throttle.admit():
            log.info("review: a sign-in was refused before checking it (busy)")
            return Response("busy: try again", status_code=503, headers={"Retry-After": "5"})
        role = await self.throttle.check(partial(self._check, user, password))
        if role is None:
            self.throttle.failed(user, client)
            who = await run_in_threadpool(self._who, user)
            await run_in_threadpool(self.queue.store.audit, "review-login", who, "", "refused")
            return RedirectResponse("/review/login?failed=1", status_code=303)
        self.throttle.succeeded(user)
        await run_in_threadpool(self.queue.store.audit, "review-login", user, "", role.value)
        resp = RedirectResponse("/review", status_code=303)
        resp.set_cookie(
            SESSION_COOKIE,
            self.sessions.open(user, role),
            httponly=True,
            samesite="strict",
            secure=self.secure,
            max_age=self.max_age,
            path="/review",
        )
        resp.delete_cookie(LOGIN_COOKIE, path="/review")
        return resp

    def _check(self, user: str, password: str) -> Role | None:
        if not user or len(user) > 64 or len(password) > 1024:
            return None  # no such account can exist: not worth a hash
        return check_login(self.queue, user, password)

    def _who(self, user: str) -> str:
        """The audit log's operator of a refused sign-in: the account, if it exists."""
        if user and len(user) <= 64 and self.queue.db.account(user) is not None:
            return user
        return unknown_account(self.queue, user)


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


def _page_context(queue: ReviewQueue, session: Session, at: int) -> dict[str, Any]:
    found = queue.page(session.role, max(at - 1, 0), 1)
    if not found and at > 0:  # past the end: wrap round to the first open item
        found = queue.page(session.role, 0, 1)
    item = found[0] if found else None
    doc = queue.db.doc(item.doc_id) if item else None
    n, m = queue.place(session.role, item) if item else (0, 0)
    return {
        "session": session,
        "item": item,
        "whole_note": item is not None and item.kind is ItemKind.HELD_DOCUMENT,
        "held": doc,
        "note": highlight(item, _decided_phi(queue, item)) if item else "",
        "categories": [c.value for c in Category],
        "suggested": item.candidate.category.value if item and item.candidate else "NAME_OTHER",
        "progress": queue.progress(),
        "position": n,
        "total": m,
        "expert": session.role is Role.EXPERT,
    }


def _decided_phi(queue: ReviewQueue, item: QueueItem, limit: int = 200) -> tuple[Span, ...]:
    """On a held note's whole-note page: the strings of the note already decided PHI (a
    reviewer's marks among them), so the question is asked of what is left."""
    if item.kind is not ItemKind.HELD_DOCUMENT:
        return ()
    rows = [
        r
        for r in queue.db.items_of_doc(item.doc_id)[:limit]
        if r.text_ref and r.status == ItemStatus.DECIDED
    ]
    out: list[Span] = []
    for r in rows:  # the item's latest decision, an expert's first (one indexed read each)
        mine = sorted(queue.db.decisions(item_id=r.id), key=lambda d: (d.role == "expert", d.id))
        cand = queue.open_item(r).candidate if mine and mine[-1].kind == "phi" else None
        if cand is not None:
            out.append(cand)
    return tuple(out)
