"""Issues 28.7 and 23.7 on the review page in a real browser (Playwright + Debian
chromium, in-process app on a real SQLite key store): no failed request on the first page;
"item N of M" counts what is left to decide and agrees with ``?at=``; fast key presses after
a decision that settled other items act on the items the pages showed, in order; a held
note's page says why it is held, marks where its identifier survives, asks the whole-note
question, and lets the reviewer mark a string the machine did not propose."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from pipelines.phi.detector import Detector
from pipelines.review import ItemKind, ItemStatus, ReviewQueue, Role
from service.review.auth import add_account

from .browser import chromium_or_skip, press, serve, sign_in
from .conftest import held_document
from .test_held_marks import MRN, TEXT, _detector, _doc
from .test_queue import BLIND
from .test_web import PASSWORD, make_app

pytestmark = pytest.mark.slow


def _app(tmp_path: Path) -> tuple[Any, ReviewQueue]:
    app = make_app(tmp_path)
    queue: ReviewQueue = app.state.review.queue
    add_account(queue, "ana", PASSWORD, Role.REVIEWER)
    return app, queue


async def _failed_requests(page: Any) -> list[str]:
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("console", lambda m: failed.append(m.text) if m.type == "error" else None)
    return failed


async def _progress(page: Any) -> tuple[int, int]:
    text = await page.text_content("#progress") or ""
    found = re.search(r"item (\d+) of (\d+)", text)
    assert found, text
    return int(found.group(1)), int(found.group(2))


async def test_fast_presses_act_on_the_items_shown(tmp_path: Path) -> None:
    chromium = chromium_or_skip()
    from playwright.async_api import async_playwright

    app, queue = _app(tmp_path)
    for k in range(3):  # each note names the relative twice: a note-scope decision settles both
        queue.enqueue(
            held_document(),
            Detector(BLIND),
            coordinates=f"in.hl7v2:0:{k}",
            held_reason=("leak_guard", "leak guard: NAME_RELATIVE=2"),
        )
    order = [i.id for i in queue.page(Role.REVIEWER, 0, 100)]
    with serve(app) as base:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=chromium, headless=True)
            page = await browser.new_page()
            failed = await _failed_requests(page)
            await sign_in(page, base, "ana", PASSWORD)
            assert failed == [], failed  # the first page: no 404, no CSP error
            assert await _progress(page) == (1, len(order))
            first = await page.get_attribute("#note", "data-item")
            shown = [first]
            await press(page, "p")  # the first string, PHI: its twin in the note goes too
            settled = [i.id for i in queue.page(Role.REVIEWER, 0, 100)]
            assert len(settled) == len(order) - 2
            # "item N of M" counts what is left, and agrees with ?at=
            assert await _progress(page) == (1, len(settled))
            at = int(re.search(r"at=(\d+)", page.url).group(1))  # type: ignore[union-attr]
            assert queue.item(settled[0]).seq >= at  # type: ignore[union-attr]
            await press(page, "j")
            assert await _progress(page) == (2, len(settled))
            await press(page, "k")
            assert await _progress(page) == (1, len(settled))
            shown.append(await page.get_attribute("#note", "data-item"))
            # four fast presses, not waiting for any page: each acts on the page it reaches
            for _ in range(4):
                await page.keyboard.press("n")
            # wait (a loaded machine: up to 30 s) until the last press's page has loaded
            deadline = asyncio.get_running_loop().time() + 30
            while True:
                await asyncio.sleep(0.5)
                await page.wait_for_load_state()
                now = await page.get_attribute("#note", "data-item")
                mine = [d.item_id for d in queue.db.decisions() if d.reviewer == "ana"]
                done = [d for d in mine if d in settled]
                if now == settled[len(done)] or asyncio.get_running_loop().time() > deadline:
                    break
            await browser.close()
    pressed = [d for d in mine if d in settled]
    # the decisions land on the queue's items in order, none twice, none skipped, and the
    # page shows the item after the last one decided
    assert pressed == settled[: len(pressed)] and len(pressed) >= 1
    assert len(set(pressed)) == len(pressed)
    assert now == settled[len(pressed)]
    assert failed == [], failed


async def test_a_held_page_says_why_and_takes_a_marked_string(tmp_path: Path) -> None:
    chromium = chromium_or_skip()
    from playwright.async_api import async_playwright

    app, queue = _app(tmp_path)
    items = queue.enqueue(
        _doc(), _detector(queue), coordinates="in.hl7v2:0:1", held_reason=("leak_guard", "x")
    )
    queue.db.set_doc_status(queue.item(items[0]).doc_id, "open", "open", 0.0, "leak guard: MRN=1")  # type: ignore[union-attr]
    whole = next(i for i in items if queue.item(i).kind is ItemKind.HELD_DOCUMENT)  # type: ignore[union-attr]
    with serve(app) as base:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=chromium, headless=True)
            page = await browser.new_page()
            failed = await _failed_requests(page)
            await sign_in(page, base, "ana", PASSWORD)
            assert "leak guard: MRN=1" in (await page.text_content("#reason") or "")
            while await page.get_attribute("#note", "data-kind") != "held_document":
                await press(page, "p")  # the names and the glued MRN: PHI
            question = await page.text_content("#question") or ""
            assert "Is any PHI left in this note?" in question
            assert await page.text_content("#note mark.left") == MRN  # where it survives
            # select the nickname no recognizer proposed, and mark it
            start = TEXT.index("Tezzy")
            await page.evaluate(
                """([start, end]) => {
                  const note = document.getElementById('note');
                  const walker = document.createTreeWalker(note, NodeFilter.SHOW_TEXT);
                  let pos = 0, node, range = document.createRange();
                  while ((node = walker.nextNode())) {
                    const len = node.textContent.length;
                    if (pos <= start && start < pos + len) range.setStart(node, start - pos);
                    if (pos < end && end <= pos + len) range.setEnd(node, end - pos);
                    pos += len;
                  }
                  getSelection().removeAllRanges(); getSelection().addRange(range);
                }""",
                [start, start + 5],
            )
            await press(page, "m")
            assert await page.get_attribute("#note", "data-item") == whole
            assert "Tezzy" in await page.locator("#note mark.decided").all_text_contents()
            shots = __import__("os").environ.get("DEIDSTREAM_SCREENSHOTS")
            if shots:
                await page.screenshot(path=str(Path(shots) / "review-held.png"), full_page=True)
            await press(page, "n")  # nothing else is left
            assert await page.query_selector("#empty") is not None
            await browser.close()
        assert failed == [], failed
        marked = [
            i
            for i in (queue.item(r.id) for r in queue.db.items_of_doc(queue.item(whole).doc_id))  # type: ignore[union-attr]
            if i and i.kind is ItemKind.MARKED
        ]
        assert [m.string for m in marked] == ["Tezzy"]
        states = [r.status for r in queue.db.items_of_doc(marked[0].doc_id)]
        assert states == [ItemStatus.DECIDED] * len(states)
