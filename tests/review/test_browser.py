"""The review page in a real browser (Playwright + Debian chromium), in-process app on a
real SQLite key store: sign in, decide by keyboard, undo, refer; an expert takes the
referred item; no PHI in any log line written meanwhile; the time to clear 100 queued spans
by keyboard is printed (not asserted)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.document import ClinicalDocument, Identifiers, PersonName
from pipelines.phi.detector import Detector
from pipelines.review import ItemStatus, ReviewQueue, Role
from service.review.auth import add_account

from .browser import chromium_or_skip, press, serve, sign_in
from .test_queue import BLIND
from .test_web import PASSWORD, make_app

pytestmark = pytest.mark.slow
# invented name parts: 10 x 10 distinct relatives' names
_FIRST = [
    "Quillon",
    "Tessaly",
    "Orrin",
    "Bettina",
    "Cormac",
    "Ivana",
    "Zebulon",
    "Maelis",
    "Torvald",
    "Odile",
]
_LAST = [
    "Marbry",
    "Dunmore",
    "Vasquell",
    "Skarsgrove",
    "Thibodine",
    "Peltonen",
    "Frostwick",
    "Ambery",
    "Kelloway",
    "Strand",
]
NAMES = [f"{a} {b}" for a in _FIRST for b in _LAST]


def _doc(k: int) -> ClinicalDocument:
    given, family = NAMES[k].split()
    return ClinicalDocument(
        text=f"Seen today with daughter {NAMES[k]}; plan unchanged.\n",
        patient_id=f"P{k:03d}",
        assigning_authority="HOSP",
        identifiers=Identifiers(relative_names=(PersonName(family=family, given=(given,)),)),
    )


class Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def logs() -> Iterator[Captured]:
    handler = Captured()
    root = logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old)


def _app(tmp_path: Path, docs: int) -> tuple[Any, ReviewQueue]:
    app = make_app(tmp_path)
    queue: ReviewQueue = app.state.review.queue
    add_account(queue, "ana", PASSWORD, Role.REVIEWER)
    add_account(queue, "eve", PASSWORD, Role.EXPERT)
    for k in range(docs):
        queue.enqueue(
            _doc(k),
            Detector(BLIND),
            coordinates=f"in.hl7v2:0:{k}",
            held_reason=("leak_guard", "leak guard: NAME_RELATIVE=1"),
        )
    return app, queue


async def test_keyboard_decide_undo_refer_expert(tmp_path: Path, logs: Captured) -> None:
    chromium = chromium_or_skip()
    from playwright.async_api import async_playwright

    app, queue = _app(tmp_path, 2)
    with serve(app) as base:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=chromium, headless=True)
            page = await browser.new_page()
            await sign_in(page, base, "ana", PASSWORD)
            first = await page.get_attribute("#note", "data-item")
            assert await page.text_content("mark#candidate") in " ".join(NAMES[:2]).split()
            assert "item 1 of" in (await page.text_content("#progress") or "")
            await press(page, "r")  # refer to an expert
            assert queue.item(first).status is ItemStatus.REFERRED  # type: ignore[arg-type,union-attr]
            assert await page.get_attribute("#note", "data-item") != first
            await press(page, "z")  # undo: back to the same item, open again
            assert await page.get_attribute("#note", "data-item") == first
            assert queue.item(first).status is ItemStatus.OPEN  # type: ignore[arg-type,union-attr]
            await page.keyboard.press("s")  # scope: this patient
            await press(page, "p")  # PHI, the category shown
            item = queue.item(first)  # type: ignore[arg-type]
            assert item is not None and item.status is ItemStatus.DECIDED
            second = await page.get_attribute("#note", "data-item")
            await press(page, "k")  # previous: skips decided items, stays put
            await press(page, "j")  # next
            now = await page.get_attribute("#note", "data-item")
            assert now != first
            await press(page, "r")
            assert queue.item(now).status is ItemStatus.REFERRED  # type: ignore[arg-type,union-attr]
            shots = os.environ.get("DEIDSTREAM_SCREENSHOTS")
            if shots:
                await page.screenshot(path=str(Path(shots) / "review-page.png"), full_page=True)
            expert = await browser.new_page()
            await sign_in(expert, base, "eve", PASSWORD)
            assert await expert.get_attribute("#note", "data-item") == now
            await press(expert, "n")
            assert queue.item(now).status is ItemStatus.DECIDED  # type: ignore[arg-type,union-attr]
            assert second
            await browser.close()
        decided = {d.item_id: (d.reviewer, d.kind) for d in queue.db.decisions()}
    assert decided[first] == ("ana", "phi") and decided[now] == ("eve", "not_phi")  # type: ignore[index]
    text = "\n".join(logs.lines)
    for name in NAMES[:2]:
        for part in name.split():
            assert part not in text, "a name reached a log line"


async def test_time_to_clear_100_spans_by_keyboard(tmp_path: Path, logs: Captured) -> None:
    chromium = chromium_or_skip()
    from playwright.async_api import async_playwright

    app, queue = _app(tmp_path, 34)  # 34 held notes: two name parts and the note itself each
    assert sum(queue.progress().values()) == 102
    with serve(app) as base:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=chromium, headless=True)
            page = await browser.new_page()
            await sign_in(page, base, "ana", PASSWORD)
            began = time.perf_counter()
            for _ in range(100):
                await press(page, "n")
            elapsed = time.perf_counter() - began
            await browser.close()
        assert queue.progress()["decided"] == 100
    print(
        f"\ncleared 100 queued spans by keyboard in {elapsed:.1f} s "
        f"({elapsed / 100 * 1000:.0f} ms per decision, page load included)"
    )
    text = "\n".join(logs.lines)
    assert not any(part in text for name in NAMES[:34] for part in name.split())
