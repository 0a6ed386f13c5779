"""Reviewer login: accounts with scrypt-hashed passwords in the key store, server-side
sessions that expire, CSRF tokens, and a login throttle.

Why accounts and not a trusted proxy header: the service ships without a proxy in front of
it (``deploy/``), and a header such as ``X-Forwarded-User`` is only as trustworthy as the
guarantee that nothing but the proxy can reach the port — one misrouted request and anyone is
anyone. Accounts work the same behind a proxy or not. The hash is the standard library's
``hashlib.scrypt`` at OWASP's current parameters (the Password Storage Cheat Sheet's
N=2^14, r=8, p=5 — the lowest-memory of its equivalent settings, 16 MiB per hash; a 16-byte
salt per password). A hash made with older parameters is replaced at the next successful
login. The house rule keeps crypto to ``cryptography`` and the standard library.

Sessions live in this process's memory (a restart logs reviewers out): a random 32-byte
token in an HttpOnly, SameSite=Strict cookie (Secure unless the settings say otherwise)
maps to (user, role, CSRF token, expiry). Every POST must carry the session's CSRF token in
the ``X-CSRF-Token`` header (or a ``csrf`` form field); the login form uses a per-visit
token in its own cookie (double submit).

:class:`LoginThrottle` refuses a login before any hashing once an account or a client has
failed too often in the window, and lets only a few hashes run at once: its maps are
bounded TTL caches (``cachetools``), so a flood of wrong passwords costs neither memory nor
the event loop.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from cachetools import TTLCache

from pipelines.review import ReviewQueue, Role


@dataclass(frozen=True, slots=True)
class ScryptParams:
    n: int
    r: int
    p: int

    @property
    def maxmem(self) -> int:
        return 2 * 128 * self.n * self.r + 2**20


OWASP = ScryptParams(2**14, 8, 5)  # OWASP Password Storage Cheat Sheet (scrypt), 2023–
PARAMS = OWASP  # what new hashes use
_SALT, _LEN = 16, 32
_MAX_N, _MAX_R, _MAX_P = 2**20, 32, 16  # a stored hash asking for more is refused
SESSION_COOKIE = "deid_review"
LOGIN_COOKIE = "deid_review_login"


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    params = PARAMS
    salt = salt or secrets.token_bytes(_SALT)
    digest = hashlib.scrypt(
        password.encode("utf-8"),
        salt=salt,
        n=params.n,
        r=params.r,
        p=params.p,
        maxmem=params.maxmem,
        dklen=_LEN,
    )
    b64 = base64.b64encode
    return f"scrypt${params.n}${params.r}${params.p}${b64(salt).decode()}${b64(digest).decode()}"


def params_of(stored: str) -> ScryptParams | None:
    try:
        scheme, n, r, p, _salt, _digest = stored.split("$")
        params = ScryptParams(int(n), int(r), int(p))
    except ValueError:
        return None
    if scheme != "scrypt" or not (
        1 < params.n <= _MAX_N and 0 < params.r <= _MAX_R and 0 < params.p <= _MAX_P
    ):
        return None
    return params


def verify_password(password: str, stored: str) -> bool:
    params = params_of(stored)
    if params is None:
        return False
    try:
        salt, digest = (base64.b64decode(x) for x in stored.split("$")[4:])
        got = hashlib.scrypt(
            password.encode("utf-8"),
            salt=salt,
            n=params.n,
            r=params.r,
            p=params.p,
            maxmem=params.maxmem,
            dklen=len(digest),
        )
    except ValueError:
        return False
    return hmac.compare_digest(got, digest)


_DUMMY: list[str] = []  # one hash of nothing, made on first use: equal time for unknown users


def add_account(queue: ReviewQueue, username: str, password: str, role: Role) -> None:
    if not username or len(username) > 64 or not username.isprintable() or "$" in username:
        raise ValueError("a user name is 1-64 printable characters")
    if len(password) < 12:
        raise ValueError("a password has at least 12 characters")
    queue.db.put_account(username, role.value, hash_password(password), time.time())
    queue.store.audit("review-account", "admin", username, role.value)


def check_login(queue: ReviewQueue, username: str, password: str) -> Role | None:
    """The account's role when the password is right (its hash is renewed if made with
    older parameters), else None — in about the same time whether the account exists."""
    found = queue.db.account(username)
    if found is None:
        if not _DUMMY:
            _DUMMY.append(hash_password("not a password"))
        verify_password(password, _DUMMY[0])
        return None
    role, stored = found
    if not verify_password(password, stored):
        return None
    if params_of(stored) != PARAMS:
        queue.db.put_account(username, role, hash_password(password), time.time())
    return Role(role)


def unknown_account(queue: ReviewQueue, username: str) -> str:
    """What the audit log says for a sign-in to an account that does not exist: a keyed
    fingerprint of the typed name (which may be a password typed in the wrong field),
    never the name itself."""
    return "unknown:" + queue.store.pseudonym("review-login-name", username)[:16]


class LoginThrottle:
    """Failed sign-ins counted per account and per client over ``window_s`` in bounded TTL
    caches; :meth:`refusal` answers before any hashing. The hashes run on ``max_hashing``
    threads of their own (scrypt's 16 MiB buffers stay in those threads' malloc arenas
    instead of one per server thread) and ``max_waiting`` sign-ins may be admitted at once;
    past that a sign-in is refused as busy (:meth:`admit`)."""

    def __init__(
        self,
        *,
        per_account: int = 5,
        per_client: int = 20,
        window_s: float = 15 * 60.0,
        max_keys: int = 10_000,
        max_hashing: int = 2,
        max_waiting: int = 16,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_account, self.per_client, self.window = per_account, per_client, window_s
        self._accounts: TTLCache[str, int] = TTLCache(max_keys, window_s, timer=clock)
        self._clients: TTLCache[str, int] = TTLCache(max_keys, window_s, timer=clock)
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_hashing, thread_name_prefix="review-login")
        self._admitted = 0
        self._max_waiting = max_waiting

    @staticmethod
    def _account_key(username: str) -> str:
        # a fixed-size key whatever was typed (the form's size is bounded too)
        return hashlib.sha256(username.casefold().encode("utf-8", "replace")).hexdigest()[:32]

    def refusal(self, username: str, client: str) -> str | None:
        """Why this sign-in is refused before its password is looked at, or None."""
        with self._lock:
            if self._accounts.get(self._account_key(username), 0) >= self.per_account:
                return "account"
            if self._clients.get(client, 0) >= self.per_client:
                return "client"
            return None

    def failed(self, username: str, client: str) -> None:
        key = self._account_key(username)
        with self._lock:
            self._accounts[key] = self._accounts.get(key, 0) + 1
            self._clients[client] = self._clients.get(client, 0) + 1

    def succeeded(self, username: str) -> None:
        with self._lock:
            self._accounts.pop(self._account_key(username), None)

    def admit(self) -> bool:
        """Take a place for one password check (False: ``max_waiting`` are admitted already);
        :meth:`check` gives it back."""
        with self._lock:
            if self._admitted >= self._max_waiting:
                return False
            self._admitted += 1
            return True

    async def check(self, call: Callable[[], Role | None]) -> Role | None:
        """Run ``call`` (the password check) on the hashing threads; after :meth:`admit`."""
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, call)
        finally:
            with self._lock:
                self._admitted -= 1

    def sizes(self) -> tuple[int, int]:
        with self._lock:
            return len(self._accounts), len(self._clients)


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
            now = self._clock()
            for old in [t for t, s in self._by_token.items() if s.expires <= now]:
                del self._by_token[old]
            self._by_token[token] = Session(user, role, secrets.token_urlsafe(32), now + self._ttl)
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
