"""Issue 23.3 on the web surface (in-process app, real SQLite key store): the login
throttle runs before scrypt and bounds its memory, an unknown user name never reaches the
audit log, every review POST refuses an oversized body before reading it (Content-Length
and chunked), a malformed decision records nothing, the security headers, scrypt at OWASP's
parameters, a reviewer cannot override an expert through the pages."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pipelines.phi.detector import Detector
from pipelines.review import ItemStatus, ReviewQueue, Role
from service.review import auth
from service.review.auth import LoginThrottle, add_account, hash_password, verify_password
from service.review.http import MAX_BODY_BYTES

from .conftest import held_document
from .test_queue import BLIND
from .test_web import PASSWORD, client, item_of, login, make_app


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[Any]:
    app = make_app(tmp_path)
    queue: ReviewQueue = app.state.review.queue
    add_account(queue, "ana", PASSWORD, Role.REVIEWER)
    add_account(queue, "eve", PASSWORD, Role.EXPERT)
    queue.enqueue(
        held_document(),
        Detector(BLIND),
        coordinates="in.hl7v2:0:1",
        held_reason=("leak_guard", "leak guard: NAME_RELATIVE=1"),
    )
    yield app
    queue.store.close()


def _calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the password hashes the sign-in computes."""
    seen: list[int] = []
    real = auth.verify_password

    def counting(password: str, stored: str) -> bool:
        seen.append(1)
        return real(password, stored)

    monkeypatch.setattr(auth, "verify_password", counting)
    return seen


async def _try(c: httpx.AsyncClient, user: str, password: str) -> httpx.Response:
    form = await c.get("/review/login")
    token = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert token
    return await c.post(
        "/review/login", data={"csrf": token.group(1), "username": user, "password": password}
    )


async def test_wrong_passwords_are_throttled_before_scrypt(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashes = _calls(monkeypatch)
    async with client(app) as c:
        for _ in range(5):
            r = await _try(c, "ana", "not the password")
            assert r.headers["location"] == "/review/login?failed=1"
        assert len(hashes) == 5
        for _ in range(20):  # the flood: refused without hashing
            r = await _try(c, "ana", "not the password")
            assert r.headers["location"] == "/review/login?failed=2" and "retry-after" in r.headers
        # the right password too, while the account is locked
        r = await _try(c, "ana", PASSWORD)
        assert r.headers["location"] == "/review/login?failed=2"
        assert len(hashes) == 5
        # another account from this client still signs in (the client limit is higher)
        assert await login(c, "eve")
    page = await client(app).get("/review/login?failed=2")
    assert "Too many failed sign-ins" in page.text


async def test_a_client_is_throttled_across_accounts(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashes = _calls(monkeypatch)
    async with client(app) as c:
        for k in range(30):
            await _try(c, f"guess{k}", "whatever password")
    assert len(hashes) == 20  # per_client: the rest never hashed


def test_the_throttle_memory_is_bounded() -> None:
    now = [0.0]
    throttle = LoginThrottle(max_keys=100, clock=lambda: now[0])
    for k in range(20_000):
        throttle.failed(f"user-{k}" * 50, f"10.0.{k // 250}.{k % 250}")
    assert throttle.sizes() == (100, 100)
    assert throttle.refusal("user-19999" * 50, "10.0.79.249") is None  # 1 failure < 5
    for _ in range(5):
        throttle.failed("x", "c")
    assert throttle.refusal("x", "c") == "account"
    now[0] += throttle.window + 1  # the window passes
    assert throttle.refusal("x", "c") is None


async def test_hashing_runs_a_few_at_once_and_refuses_a_flood() -> None:
    throttle = LoginThrottle(max_hashing=1, max_waiting=3)
    gate = threading.Event()
    running: list[int] = []
    peak: list[int] = []
    threads: set[str] = set()

    def slow() -> None:
        running.append(1)
        peak.append(len(running))
        threads.add(threading.current_thread().name)
        gate.wait(5)
        running.pop()
        return None

    admitted = [throttle.admit() for _ in range(5)]
    assert admitted == [True, True, True, False, False]  # the flood past 3: busy at once
    checks = [asyncio.ensure_future(throttle.check(slow)) for _ in range(3)]
    await asyncio.sleep(0.2)
    assert not throttle.admit()
    gate.set()
    await asyncio.gather(*checks)
    assert max(peak) == 1 and len(threads) == 1  # one hashing thread of its own
    assert throttle.admit()


async def test_an_unknown_user_name_is_not_audited_in_clear(app: Any) -> None:
    typed = "my-password-typed-in-the-wrong-field"
    async with client(app) as c:
        await _try(c, typed, "anything at all")
        await _try(c, "ana", "not the password")
    lines = app.state.review.queue.store.admin.audit_log()
    logins = [line for line in lines if line[1] == "review-login"]
    assert typed not in repr(lines)
    assert logins[0][2].startswith("unknown:") and logins[1][2] == "ana"


class _Chunks:
    """A chunked request body of ``n`` chunks; counts how many were read."""

    def __init__(self, n: int, size: int = 1024) -> None:
        self.n, self.size, self.read = n, size, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for _ in range(self.n):
            self.read += 1
            yield b"a" * self.size


@pytest.mark.parametrize("path", ["/review/login", "/review/decide", "/review/mark"])
async def test_an_oversized_body_is_refused_before_it_is_read(app: Any, path: str) -> None:
    async with client(app) as c:
        csrf = await login(c, "ana")
        h = {"X-CSRF-Token": csrf, "Content-Type": "application/json"}
        big = {**h, "Content-Length": str(256 * 1024 * 1024)}
        r = await c.post(path, content=b"x" * 10, headers=big)
        assert r.status_code == 413
        body = _Chunks(10_000)  # 10 MB, chunked (no Content-Length)
        r = await c.post(path, content=body, headers=h)
        assert r.status_code == 413
        assert body.read <= MAX_BODY_BYTES // body.size + 2


async def test_a_malformed_decision_records_nothing(app: Any) -> None:
    queue: ReviewQueue = app.state.review.queue
    async with client(app) as c:
        csrf = await login(c, "ana")
        item, seq = item_of((await c.get("/review")).text)
        h = {"X-CSRF-Token": csrf}
        for body in (
            {"item": item, "seq": "abc", "kind": "not_phi"},
            {"item": item, "seq": seq, "kind": "not_phi", "scope": ["site"]},
            {"item": item, "seq": seq, "kind": "phi", "category": "NOT_A_CATEGORY"},
            {"item": 5, "kind": "not_phi"},
            [1, 2],
        ):
            r = await c.post("/review/decide", json=body, headers=h)
            assert r.status_code == 400, body
        r = await c.post("/review/decide", content=b"{not json", headers=h)
        assert r.status_code == 400
    assert queue.db.decisions() == []
    assert queue.item(item).status is ItemStatus.OPEN  # type: ignore[union-attr]


async def test_security_headers_on_every_review_answer(app: Any) -> None:
    async with client(app) as c:
        answers = [await c.get("/review/login"), await c.get("/review")]
        csrf = await login(c, "ana")
        page = await c.get("/review")
        answers += [
            page,
            await c.post("/review/decide", json={}, headers={"X-CSRF-Token": csrf}),
            await c.post("/review/undo", headers={"X-CSRF-Token": "wrong"}),
        ]
    for r in answers:
        csp = r.headers["content-security-policy"]
        script = next(p for p in csp.split(";") if "script-src" in p)
        assert "unsafe-inline" not in script and "'self'" in script
        assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
        assert r.headers["referrer-policy"] == "no-referrer"
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["cache-control"] == "no-store"
    # no inline script nor inline handler on the page that shows PHI
    assert re.findall(r"<script(?![^>]*\ssrc=)", page.text) == []
    assert not re.search(r"\son[a-z]+=", page.text)


def test_scrypt_at_owasp_parameters_and_old_hashes_renewed(app: Any) -> None:
    stored = hash_password(PASSWORD)
    assert stored.split("$")[1:4] == ["16384", "8", "5"]  # OWASP: N=2^14, r=8, p=5
    queue: ReviewQueue = app.state.review.queue
    old = auth.ScryptParams(2**14, 8, 1)
    auth_params = auth.PARAMS
    try:
        auth.PARAMS = old
        add_account(queue, "olga", PASSWORD, Role.REVIEWER)
    finally:
        auth.PARAMS = auth_params
    assert queue.db.account("olga")[1].split("$")[3] == "1"  # type: ignore[index]
    assert auth.check_login(queue, "olga", PASSWORD) is Role.REVIEWER
    renewed = queue.db.account("olga")[1]  # type: ignore[index]
    assert renewed.split("$")[1:4] == ["16384", "8", "5"] and verify_password(PASSWORD, renewed)
    assert not verify_password(PASSWORD, "scrypt$1073741824$8$1$AAAA$AAAA")  # no DoS hash


async def test_a_reviewer_cannot_override_an_expert_through_the_page(app: Any) -> None:
    queue: ReviewQueue = app.state.review.queue
    async with client(app) as c:
        csrf = await login(c, "eve")
        item, seq = item_of((await c.get("/review")).text)
        r = await c.post(
            "/review/decide",
            json={"item": item, "kind": "phi", "category": "NAME_RELATIVE", "scope": "site"},
            headers={"X-CSRF-Token": csrf},
        )
        assert r.status_code == 200
    async with client(app) as c:
        csrf = await login(c, "ana")
        for body in (
            {"item": item, "kind": "not_phi", "scope": "site"},
            {"item": item, "kind": "not_phi", "scope": "note"},
        ):
            r = await c.post("/review/decide", json=body, headers={"X-CSRF-Token": csrf})
            assert r.status_code == 403 and "expert" in r.json()["error"]
    assert {d.reviewer for d in queue.db.decisions()} == {"eve"}


async def test_a_mark_outside_the_note_records_nothing(app: Any) -> None:
    queue: ReviewQueue = app.state.review.queue
    before = len(queue.db.counts())
    async with client(app) as c:
        csrf = await login(c, "ana")
        item, _seq = item_of((await c.get("/review")).text)
        h = {"X-CSRF-Token": csrf}
        for start, end in ((0, 10_000), (5, 5), (0, 500), (-1, 3)):
            body = {"item": item, "start": start, "end": end, "category": "NAME_OTHER"}
            r = await c.post("/review/mark", json=body, headers=h)
            assert r.status_code in (400, 403), (start, end)
        r = await c.post(
            "/review/mark", json={"item": item, "start": 0, "end": 4, "kind": "unsure"}, headers=h
        )
        assert r.status_code == 403
    assert queue.db.decisions() == [] and len(queue.db.counts()) == before
    assert sum(queue.progress().values()) == len(queue.db.items_of_doc(queue.item(item).doc_id))  # type: ignore[union-attr]
