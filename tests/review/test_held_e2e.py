"""Issue 16 end to end: the service as a process (real Tansu, SQLite key store) holds a
report its detector misses; the held input enters the review queue; a reviewer decides its
items by keyboard in chromium; the document is re-processed with the reviewers' lists and
published exactly once; no PHI in the service's log."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hl7_gen import report
from kafka_helpers import produce, read_all, unique
from service_process import ServiceProcess

from keystore.keyring import Keyring
from service.broker import free_port

from .browser import chromium_or_skip, press, sign_in

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
TOKEN = "status-token-for-review-tests"
PASSWORD = "a reviewer's long password"
# what report(3) carries (tests/support/hl7_gen.py: invented data)
MRN, PHONE = "700003", "555-1003"


def _env(broker: Any, base: str, tmp: Path) -> dict[str, str]:
    blind = tmp / "blind.toml"  # a detector with no recognizers: the guard must hold
    blind.write_text("[recognizers]\n", encoding="utf-8")
    return {
        **os.environ,
        "DEIDSTREAM_BOOTSTRAP_SERVERS": broker.bootstrap_servers,
        "DEIDSTREAM_API_TOKEN": TOKEN,
        "DEIDSTREAM_INPUT_TOPICS": f"{base}.hl7v2",
        "DEIDSTREAM_RESEARCH_TOPIC": f"{base}.research",
        "DEIDSTREAM_DEADLETTER_TOPIC": f"{base}.dlq",
        "DEIDSTREAM_HELD_TOPIC": f"{base}.held",
        "DEIDSTREAM_GROUP_ID": f"{base}.g",
        "DEIDSTREAM_KEYSTORE_URL": f"sqlite:///{tmp / 'ks.sqlite3'}",
        "DEIDSTREAM_MASTER_KEY": Keyring.generate("e2e").to_text(),
        "DEIDSTREAM_POLICY_FILE": str(blind),
        "DEIDSTREAM_REVIEW_ENABLED": "true",
        "DEIDSTREAM_REVIEW_COOKIE_SECURE": "false",
        "DEIDSTREAM_REVIEW_SYNC_SECONDS": "1",
        "DEIDSTREAM_LOG_LEVEL": "debug",
        "DEIDSTREAM_HTTP_PORT": str(free_port()),
    }


async def _review_all(base_url: str, chromium: str) -> int:
    """Sign in, wait for the held note's items, decide them all by keyboard."""
    from playwright.async_api import async_playwright

    decided = 0
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium, headless=True)
        page = await browser.new_page()
        await sign_in(page, base_url, "ana", PASSWORD)
        end = time.monotonic() + 120
        while not await _item_shown(page):  # the intake loop runs every second
            assert time.monotonic() < end, "the held note never entered the review queue"
            await asyncio.sleep(0.5)
            await page.reload()
        first = await page.get_attribute("#note", "data-item")
        await press(page, "r")  # refer, then think better of it
        await press(page, "z")
        assert await page.get_attribute("#note", "data-item") == first
        while await page.get_attribute("#note", "data-item"):
            if await page.query_selector("mark#candidate") is None:
                await press(page, "n")  # the note as a whole: nothing else left
            else:
                await page.keyboard.press("s")  # this patient
                await press(page, "p")  # PHI, of the category shown
            decided += 1
            assert decided < 20
        await browser.close()
    return decided


async def _item_shown(page: Any) -> bool:
    """Whether the page shows a queued item (not waiting: a slow reload on a loaded machine
    must not spend the whole budget on one locator)."""
    note = await page.query_selector("#note")
    return note is not None and bool(await note.get_attribute("data-item"))


def _add_user(env: dict[str, str]) -> None:
    add = subprocess.run(
        [sys.executable, "-m", "service.cli", "review", "add-user", "ana"],
        cwd=ROOT,
        env={**env, "DEIDSTREAM_REVIEW_PASSWORD": PASSWORD},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert add.returncode == 0, add.stderr


async def test_held_note_reviewed_in_the_browser_is_published_once(
    tansu: Any, tmp_path: Path
) -> None:
    chromium = chromium_or_skip()
    base = unique("review")
    env = _env(tansu, base, tmp_path)
    _add_user(env)
    log = tmp_path / "service.log"
    service = ServiceProcess(env, log)
    body = report(3)
    try:
        await service.status(lambda st: st["ready"], within=180)  # a loaded 2-CPU machine
        await produce(tansu.bootstrap_servers, f"{base}.hl7v2", [(b"700003", body)])
        await service.status(lambda st: st["counts"].get("held", 0) == 1)
        decided = await _review_all(service.url, chromium)
        assert decided >= 2
        await service.status(
            lambda st: st["counts"].get("published", 0) == 1 and st["total_lag"] == 0
        )
        await asyncio.sleep(3)  # a few more intake passes: nothing is released twice
        st = await service.status(lambda st: st["total_lag"] == 0)
        assert st["counts"].get("published", 0) == 1
    finally:
        service.stop()
    research = await read_all(tansu.bootstrap_servers, f"{base}.research", expect=1, settle=1.0)
    assert len(research) == 1 and research[0].value
    pid = body.split(b"PID|")[1].split(b"\r")[0].decode()
    family, given = pid.split("|")[4].split("^")[:2]
    for secret in (family, given, MRN, PHONE):
        assert secret.encode() not in research[0].value
    text = log.read_text(encoding="utf-8", errors="replace")
    assert text.strip(), "the service wrote no log at all"
    for secret in (family, given, MRN, PHONE):
        assert secret not in text, "PHI in the service's log"
