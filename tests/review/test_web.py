"""The review pages in-process (httpx ASGI transport, a real SQLite key store): no page
without a session, CSRF on every state change, a reviewer cannot act as an expert,
sessions expire, text is escaped."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from keystore import Keyring
from pipelines.phi.detector import Detector
from pipelines.review import ItemStatus, ReviewQueue, Role
from service.app import create_app
from service.metrics import Metrics
from service.review.auth import Sessions, add_account, hash_password, verify_password
from service.review.web import found_by
from service.runner import Runner
from service.settings import Settings

from .conftest import held_document
from .test_queue import BLIND

PASSWORD = "correct horse battery"


def make_app(tmp_path: Path, **over: Any) -> Any:
    values: dict[str, Any] = {
        "keystore_url": f"sqlite:///{tmp_path / 'ks.sqlite3'}",
        "master_key": Keyring.generate("web").to_text(),
        "review_enabled": True,
        "review_cookie_secure": False,
        "review_sync_seconds": 0,
        **over,
    }
    settings = Settings(**values)
    runner = Runner(settings, Metrics(), lambda: None)  # type: ignore[arg-type,return-value]
    return create_app(settings, runner=runner, start_runner=False)


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[Any]:
    app = make_app(tmp_path)
    queue: ReviewQueue = app.state.review.queue
    add_account(queue, "ana", PASSWORD, Role.REVIEWER)
    add_account(queue, "eve", PASSWORD, Role.EXPERT)
    doc = held_document("Seen <script>alert(1)</script> with daughter Quillon Marbry.\n")
    queue.enqueue(
        doc,
        Detector(BLIND),
        coordinates="in.hl7v2:0:1",
        held_reason=("leak_guard", "leak guard: NAME_RELATIVE=1"),
    )
    yield app
    queue.store.close()


def client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def login(c: httpx.AsyncClient, user: str, password: str = PASSWORD) -> str:
    """Signs in; returns the page's CSRF token."""
    form = await c.get("/review/login")
    token = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert token
    r = await c.post(
        "/review/login", data={"csrf": token.group(1), "username": user, "password": password}
    )
    assert r.status_code == 303
    page = await c.get("/review")
    found = re.search(r'<meta name="csrf" content="([^"]+)"', page.text)
    return found.group(1) if found else ""


def item_of(page: str) -> tuple[str, int]:
    found = re.search(r'data-item="([^"]*)" data-seq="(\d+)"', page)
    assert found
    return found.group(1), int(found.group(2))


async def test_no_page_without_a_session(app: Any) -> None:
    async with client(app) as c:
        for path in ("/review", "/review?at=3", "/review/prev?at=2"):
            r = await c.get(path)
            assert r.status_code == 303 and r.headers["location"] == "/review/login"
        for path in ("/review/decide", "/review/undo", "/review/logout"):
            assert (await c.post(path, json={})).status_code == 401
        c.cookies.set("deid_review", "forged-session-token")
        assert (await c.get("/review")).status_code == 303


async def test_login_needs_its_csrf_token_and_the_password(app: Any) -> None:
    async with client(app) as c:
        await c.get("/review/login")
        r = await c.post(
            "/review/login", data={"csrf": "wrong", "username": "ana", "password": PASSWORD}
        )
        assert r.status_code == 403
        assert await login(c, "ana", "not the password") == ""
        assert (await c.get("/review")).status_code == 303
        assert await login(c, "nobody") == ""
    lines = app.state.review.queue.store.admin.audit_log()
    assert [line[5] for line in lines if line[1] == "review-login"] == ["refused", "refused"]


async def test_decisions_need_the_csrf_token(app: Any) -> None:
    async with client(app) as c:
        csrf = await login(c, "ana")
        page = await c.get("/review")
        assert page.status_code == 200 and "&lt;script&gt;" in page.text
        assert "<script>alert" not in page.text
        item, seq = item_of(page.text)
        body = {"item": item, "seq": seq, "kind": "not_phi"}
        assert (await c.post("/review/decide", json=body)).status_code == 403
        assert (
            await c.post("/review/decide", json=body, headers={"X-CSRF-Token": "x" + csrf})
        ).status_code == 403
        queue: ReviewQueue = app.state.review.queue
        assert queue.item(item).status is ItemStatus.OPEN  # type: ignore[union-attr]
        ok = await c.post("/review/decide", json=body, headers={"X-CSRF-Token": csrf})
        assert ok.status_code == 200 and ok.json()["next"] == f"/review?at={seq + 1}"
        assert queue.item(item).status is ItemStatus.DECIDED  # type: ignore[union-attr]
        undo = await c.post("/review/undo", headers={"X-CSRF-Token": csrf})
        assert undo.json()["next"] == f"/review?at={seq}"
        assert queue.item(item).status is ItemStatus.OPEN  # type: ignore[union-attr]


async def test_a_reviewer_cannot_act_as_an_expert(app: Any) -> None:
    queue: ReviewQueue = app.state.review.queue
    async with client(app) as c:
        csrf = await login(c, "ana")
        item, seq = item_of((await c.get("/review")).text)
        h = {"X-CSRF-Token": csrf}
        assert (
            await c.post(
                "/review/decide", json={"item": item, "seq": seq, "kind": "refer"}, headers=h
            )
        ).is_success
        # the referred item is gone from the reviewer's queue…
        assert item_of((await c.get("/review")).text)[0] != item
        # …and deciding it (even claiming the expert role) is refused
        r = await c.post(
            "/review/decide",
            json={"item": item, "seq": seq, "kind": "not_phi", "role": "expert"},
            headers=h,
        )
        assert r.status_code == 403 and "referred" in r.json()["error"]
    assert queue.item(item).status is ItemStatus.REFERRED  # type: ignore[union-attr]
    async with client(app) as c:
        csrf = await login(c, "eve")
        page = await c.get("/review")
        assert item_of(page.text)[0] == item and "referred to an expert" in page.text
        r = await c.post(
            "/review/decide",
            json={"item": item, "seq": seq, "kind": "phi", "category": "NAME_RELATIVE"},
            headers={"X-CSRF-Token": csrf},
        )
        assert r.status_code == 200
    assert queue.item(item).status is ItemStatus.DECIDED  # type: ignore[union-attr]
    roles = {d.reviewer: d.role for d in queue.db.decisions()}
    assert roles == {"ana": "reviewer", "eve": "expert"}


async def test_malformed_decisions_are_refused(app: Any) -> None:
    async with client(app) as c:
        csrf = await login(c, "ana")
        item, seq = item_of((await c.get("/review")).text)
        h = {"X-CSRF-Token": csrf}
        for body in (
            {"item": item, "kind": "maybe"},
            {"item": item, "kind": "phi"},
            {"kind": "not_phi"},
        ):
            assert (await c.post("/review/decide", json=body, headers=h)).status_code == 400
        r = await c.post("/review/decide", json={"item": "nope", "kind": "not_phi"}, headers=h)
        assert r.status_code == 403


async def test_pages_are_absent_when_the_workbench_is_off(tmp_path: Path) -> None:
    app = make_app(tmp_path, review_enabled=False)
    async with client(app) as c:
        assert (await c.get("/review")).status_code == 404
        assert (await c.get("/review/login")).status_code == 404


def test_sessions_expire() -> None:
    now = [0.0]
    sessions = Sessions(30, clock=lambda: now[0])
    token = sessions.open("ana", Role.REVIEWER)
    assert sessions.get(token) is not None
    now[0] = 30 * 60 - 1
    assert sessions.get(token) is not None
    now[0] = 30 * 60
    assert sessions.get(token) is None
    assert sessions.get("") is None


def test_password_hashes() -> None:
    stored = hash_password(PASSWORD)
    assert stored.startswith("scrypt$") and PASSWORD not in stored
    assert verify_password(PASSWORD, stored)
    assert not verify_password(PASSWORD + "!", stored)
    assert not verify_password(PASSWORD, "bcrypt$x")
    assert hash_password(PASSWORD) != stored  # a salt per password


async def test_the_page_names_the_pass_behind_each_span(app: Any) -> None:
    """Issue 25: the review page shows which pass found a span (its ``source``), as
    ``deidstream detect --explain`` does; a pass name, never note text."""
    async with client(app) as c:
        await login(c, "ana")
        page = (await c.get("/review")).text
    marked = r'<(?:mark|span) class="(?:cand|left|decided|other)"[^>]* title="([^"]*)"'
    titles = re.findall(marked, page)
    assert titles, page
    named = [t for t in titles if " · " in t]
    assert named, titles
    for title in named:
        category, source = title.split(" · ")
        assert re.fullmatch(r"((survives|decided PHI): )?[A-Z_]+", category), category
        assert re.fullmatch(r"[a-z_]+(\.[a-z_]+)?(\+[a-z_]+(\.[a-z_]+)?)*|the leak guard", source)
        assert "Quillon" not in source and "Marbry" not in source
    found = re.search(r'found by <code id="found-by">([^<]+)</code>', page)
    assert found and found.group(1) == "the leak guard", page


def test_found_by_names_passes_and_what_is_not_a_pass() -> None:
    assert found_by("names.cue+tagger") == "names.cue+tagger"
    assert found_by("held") == "the leak guard"
    assert found_by("review") == "a reviewer's decision"
