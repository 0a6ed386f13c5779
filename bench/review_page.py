"""The review page's render time with a long queue (issue 16's target: < 200 ms with 10,000
queued items), and the screenshots of docs/review.md.

    .venv/bin/python bench/review_page.py [--items 10000] [--requests 200]
        [--screenshots docs/img]

Builds a SQLite key store with ``--items`` queued items (invented notes, sealed as the
service seals them), signs a reviewer in, and times ``GET /review?at=K`` for random K through
the ASGI app in process (server time: queue read, unsealing, highlighting, template). With
``--screenshots`` it also drives Debian's chromium (Playwright) to save the review page and a
``deidstream review stats`` output as PNG. Figures go in bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from keystore import Keyring  # noqa: E402
from pipelines.document import ClinicalDocument  # noqa: E402
from pipelines.review import (  # noqa: E402
    Candidate,
    Decision,
    DecisionKind,
    ItemKind,
    ReviewQueue,
    Role,
)
from pipelines.spans import Category, Span  # noqa: E402
from service.app import create_app  # noqa: E402
from service.metrics import Metrics  # noqa: E402
from service.review.auth import add_account  # noqa: E402
from service.runner import Runner  # noqa: E402
from service.settings import Settings  # noqa: E402

PASSWORD = "bench password, long enough"  # noqa: S105 - a throwaway store
GIVEN = ["Quillon", "Tessaly", "Orrin", "Bettina", "Cormac", "Ivana", "Zebulon", "Maelis"]
FAMILY = ["Marbry", "Dunmore", "Vasquell", "Skarsgrove", "Thibodine", "Peltonen", "Frostwick"]
PLACES = ["Westfalls General", "Harrowgate", "Pine Hollow", "Lake Ambrin", "Saint Elswyth"]


def _note(rng: random.Random) -> tuple[str, list[Span]]:
    name = f"{rng.choice(GIVEN)} {rng.choice(FAMILY)}"
    place = rng.choice(PLACES)
    text = (
        f"Pt seen with daughter {name} today. Transferred from {place} on 3/{rng.randint(1, 28)}."
        " Afebrile, BP stable, plan unchanged. " * 3 + "\n"
    )
    spans = []
    for word, cat, conf in (
        (name, Category.NAME_RELATIVE, 0.55),
        (place, Category.LOCATION_OTHER, 0.95),
    ):
        start = text.index(word)
        spans.append(Span(start, start + len(word), cat, conf, "tagger"))
    return text, spans


def build(queue: ReviewQueue, items: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    batch = []
    now = time.time()
    for k in range(items):
        text, spans = _note(rng)
        doc = ClinicalDocument(text=text, patient_id=f"P{k % 997}", assigning_authority="H")
        doc_id = queue.store.pseudonym("review-doc", f"bench:{k}")
        batch.append(
            queue._item_row(
                doc,
                doc_id,
                Candidate(spans[0], ItemKind.BAND),  # noqa: SLF001
                spans,
                now,
            )
        )
        if len(batch) == 500:
            queue.db.add_items(batch)
            batch = []
    queue.db.add_items(batch)


def _app(tmp: Path) -> tuple[object, ReviewQueue]:
    settings = Settings(
        keystore_url=f"sqlite:///{tmp / 'ks.sqlite3'}",  # type: ignore[arg-type]
        master_key=Keyring.generate("bench").to_text(),
        review_enabled=True,
        review_cookie_secure=False,
        review_sync_seconds=0,
    )
    runner = Runner(settings, Metrics(), lambda: None)  # type: ignore[arg-type,return-value]
    app = create_app(settings, runner=runner, start_runner=False)
    queue: ReviewQueue = app.state.review.queue  # type: ignore[attr-defined]
    add_account(queue, "ana", PASSWORD, Role.REVIEWER)
    return app, queue


async def _time_pages(app: object, items: int, requests: int) -> list[float]:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),  # type: ignore[arg-type]
        base_url="http://bench",
    ) as c:
        form = await c.get("/review/login")
        token = re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)  # type: ignore[union-attr]
        await c.post("/review/login", data={"csrf": token, "username": "ana", "password": PASSWORD})
        rng = random.Random(1)
        times = []
        for _ in range(requests):
            at = rng.randint(1, items)
            began = time.perf_counter()
            r = await c.get(f"/review?at={at}")
            times.append((time.perf_counter() - began) * 1000)
            assert r.status_code == 200 and 'id="candidate"' in r.text
        return times


def _decide_for_stats(queue: ReviewQueue) -> None:
    """Three reviewers on 40 items, with some disagreement (for the stats screenshot)."""
    rng = random.Random(3)
    items = queue.page(Role.REVIEWER, 0, 40)
    queue.reviews_per_item = 3
    for item in items:
        truth = DecisionKind.PHI if rng.random() < 0.7 else DecisionKind.NOT_PHI
        for reviewer in ("ana", "bob", "cy"):
            kind = (
                truth
                if rng.random() < 0.8
                else rng.choice([DecisionKind.PHI, DecisionKind.NOT_PHI, DecisionKind.UNSURE])
            )
            queue.decide(
                Decision(
                    item.id,
                    reviewer,
                    Role.REVIEWER,
                    kind,
                    Category.NAME_RELATIVE if kind is DecisionKind.PHI else None,
                )
            )


async def _screenshots(app: object, queue: ReviewQueue, out: Path) -> None:
    from html import escape

    from playwright.async_api import async_playwright

    from service.commands.review import stats_lines
    from tests.review.browser import serve, sign_in

    with serve(app) as base:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
            page = await browser.new_page(viewport={"width": 1100, "height": 760})
            await sign_in(page, base, "ana", PASSWORD)
            await page.goto(f"{base}/review?at=57")
            await page.screenshot(path=str(out / "review-page.png"))
            _decide_for_stats(queue)
            lines = "\n".join(stats_lines(queue.stats()))
            await page.set_content(
                "<body style='margin:0;background:#111;color:#ddd'><pre style='font:14px "
                f"monospace;padding:1em'>$ deidstream review stats\n{escape(lines)}</pre></body>"
            )
            await page.set_viewport_size({"width": 760, "height": 260})
            await page.screenshot(path=str(out / "review-stats.png"))
            await browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--screenshots", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        app, queue = _app(Path(tmp))
        began = time.perf_counter()
        build(queue, args.items)
        print(f"queued {args.items} items in {time.perf_counter() - began:.1f} s")
        times = asyncio.run(_time_pages(app, args.items, args.requests))
        q = statistics.quantiles(times, n=100)
        print(
            f"GET /review with {args.items} queued: median {statistics.median(times):.1f} ms,"
            f" p95 {q[94]:.1f} ms, max {max(times):.1f} ms ({args.requests} requests)"
        )
        if args.screenshots:
            args.screenshots.mkdir(parents=True, exist_ok=True)
            asyncio.run(_screenshots(app, queue, args.screenshots))
            print(f"screenshots in {args.screenshots}")
        queue.store.close()


if __name__ == "__main__":
    main()
