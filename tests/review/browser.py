"""Playwright on Debian's chromium for the review tests: skip with a message where it is
missing (``make test`` installs it with apt when it can)."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")


def chromium_or_skip() -> str:
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        pytest.skip("the playwright package is not installed (pip install -e '.[dev]')")
    path = CHROMIUM if CHROMIUM.exists() else shutil.which("chromium")
    if not path:
        pytest.skip("no chromium browser: `apt-get install -y chromium` (make test tries)")
    return str(path)


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """``app`` on a loopback port in a thread (uvicorn); yields its base URL."""
    import uvicorn

    from service.broker import free_port

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the review app did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


async def sign_in(page: Any, base: str, user: str, password: str) -> None:
    await page.goto(f"{base}/review/login")
    # the user name field takes the focus (autofocus) once the page is loaded; on a busy
    # machine typing can start before that, so wait for it
    await page.wait_for_function(
        "document.activeElement && document.activeElement.name === 'username'"
    )
    await page.keyboard.type(user)
    await page.keyboard.press("Tab")
    await page.keyboard.type(password)
    async with page.expect_navigation():
        await page.keyboard.press("Enter")


async def press(page: Any, key: str) -> None:
    """A key that moves to another page (a decision, undo, next, previous)."""
    async with page.expect_navigation():
        await page.keyboard.press(key)
