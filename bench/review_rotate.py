"""`keys rotate` with a long review queue: how long re-wrapping the queue's sealed blobs takes
(docs/review.md "Missing", docs/keystore.md "Rotation without loss").

    .venv/bin/python bench/review_rotate.py [--items 10000] [--pg URL]

Builds a key store (SQLite in a temporary directory, or a fresh schema at ``--pg``) with
``--items`` queued items of invented notes (bench/review_page.py's builder), rotates to a new
master key and prints the rotation's wall time and blobs per second, then retires the old key
and opens every item with the new key alone. Figures go in bench/README.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from review_page import build  # noqa: E402

from keystore import Keyring, open_store  # noqa: E402
from pipelines.review import ReviewQueue  # noqa: E402


def run(url: str, items: int) -> None:
    k1, k2 = Keyring.generate("bench-k1"), Keyring.generate("bench-k2")
    with open_store(url, k1) as store:
        build(ReviewQueue(store), items)
    new_first = k2.merged_with(k1)
    with open_store(url, new_first) as officer:
        start = time.perf_counter()
        report = officer.admin.rotate(new_first, operator="bench")
        took = time.perf_counter() - start
        assert report.review_rewrapped == items and not report.failed
        officer.admin.retire_key("bench-k1", operator="bench")
    print(
        f"{url.split(':', 1)[0]}: {items} review blobs re-wrapped in {took:.2f} s "
        f"({items / took:,.0f}/s)"
    )
    with open_store(url, k2) as reader:
        queue = ReviewQueue(reader)
        rows = queue.db.page(["open"], 0, items + 1)
        assert len(rows) == items and all(queue.open_item(r).text for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--pg", default="", help="postgresql://… (a fresh schema is made)")
    args = ap.parse_args()
    if args.pg:
        import psycopg

        schema = f"bench_rot_{uuid.uuid4().hex[:10]}"
        try:
            run(f"{args.pg}?schema={schema}", args.items)
        finally:
            with psycopg.connect(args.pg, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        return
    with tempfile.TemporaryDirectory() as tmp:
        run(f"sqlite:///{Path(tmp) / 'ks.sqlite3'}", args.items)


if __name__ == "__main__":
    main()
