"""Reviewer login: accounts with scrypt-hashed passwords in the key store, server-side
sessions that expire, and CSRF tokens.

Why accounts and not a trusted proxy header: the service ships without a proxy in front of
it (``deploy/``), and a header such as ``X-Forwarded-User`` is only as trustworthy as the
guarantee that nothing but the proxy can reach the port — one misrouted request and anyone is
anyone. Accounts work the same behind a proxy or not. The hash is the standard library's
``hashlib.scrypt`` (memory-hard; n=2^14, r=8, p=1, a 16-byte salt per password): no new
dependency, and the house rule keeps crypto to ``cryptography`` and the standard library.

Sessions live in this process's memory (a restart logs reviewers out): a random 32-byte
token in an HttpOnly, SameSite=Strict cookie (Secure unless the settings say otherwise)
maps to (user, role, CSRF token, expiry). Every POST must carry the session's CSRF token in
the ``X-CSRF-Token`` header (or a ``csrf`` form field); the login form uses a per-visit
token in its own cookie (double submit).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from pipelines.review import ReviewQueue, Role

_N, _R, _P, _SALT, _LEN = 2**14, 8, 1, 16, 32
SESSION_COOKIE = "deid_review"
LOGIN_COOKIE = "deid_review_login"


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    salt = salt or secrets.token_bytes(_SALT)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=_N, r=_R, p=_P, dklen=_LEN)
    b64 = base64.b64encode
    return f"scrypt${_N}${_R}${_P}${b64(salt).decode()}${b64(digest).decode()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        got = hashlib.scrypt(
            password.encode("utf-8"),
            salt=base64.b64decode(salt),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=len(base64.b64decode(digest)),
        )
    except ValueError:
        return False
    return hmac.compare_digest(got, base64.b64decode(digest))


_DUMMY = hash_password("not a password")  # equal time for unknown users


def add_account(queue: ReviewQueue, username: str, password: str, role: Role) -> None:
    if not username or len(username) > 64 or not username.isprintable() or "$" in username:
        raise ValueError("a user name is 1-64 printable characters")
    if len(password) < 12:
        raise ValueError("a password has at least 12 characters")
    queue.db.put_account(username, role.value, hash_password(password), time.time())
    queue.store.audit("review-account", "admin", username, role.value)


def check_login(queue: ReviewQueue, username: str, password: str) -> Role | None:
    found = queue.db.account(username)
    if found is None:
        verify_password(password, _DUMMY)
        return None
    role, stored = found
    return Role(role) if verify_password(password, stored) else None


@dataclass(frozen=True)
class Session:
    user: str
    role: Role
    csrf: str
    expires: float


class Sessions:
    def __init__(self, minutes: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = minutes * 60.0
        self._clock = clock
        self._by_token: dict[str, Session] = {}
        self._lock = threading.Lock()

    def open(self, user: str, role: Role) -> str:
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._by_token[token] = Session(
                user, role, secrets.token_urlsafe(32), self._clock() + self._ttl
            )
        return token

    def get(self, token: str | None) -> Session | None:
        if not token:
            return None
        with self._lock:
            found = self._by_token.get(token)
            if found is None:
                return None
            if found.expires <= self._clock():
                del self._by_token[token]
                return None
            return found

    def close(self, token: str | None) -> None:
        with self._lock:
            self._by_token.pop(token or "", None)


def same_token(expected: str, given: str | None) -> bool:
    return bool(given) and hmac.compare_digest(expected.encode(), (given or "").encode())
