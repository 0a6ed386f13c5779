"""The first large inputs after the service starts, under a short budget (issue 24, item 3).

Run: .venv/bin/python bench/budget_start.py [--budget 1.0] [--sizes 20000,20000,300000,1000000]
     [--cold]

Builds the real processor (SQLite key store), de-identifies three small notes, then one
ordinary note per ``--sizes`` (bytes; over 16 KiB they are parsed in a child process under the
budget) and prints each one's wall and CPU time and outcome. ``--cold`` skips the parse
child's warm-up, as before session 18: the first large note then waits for the child to
start, and that wait counts against its budget. No corpus needed; figures, never asserted.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "support"))

from hl7_gen import big_report, report  # noqa: E402

from keystore.keyring import Keyring  # noqa: E402
from service.budget import BudgetedParse  # noqa: E402
from service.metrics import Metrics  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.wiring import real_processor_factory  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, default=1.0)
    ap.add_argument("--sizes", default="20000,20000,300000,1000000")
    ap.add_argument("--cold", action="store_true", help="no warm-up of the parse child")
    args = ap.parse_args()
    if args.cold:
        BudgetedParse.warm = lambda self: False  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            keystore_url=f"sqlite:///{tmp}/keystore.sqlite3",
            master_key=Keyring.generate().to_text(),
            document_deadline_seconds=args.budget,
            max_message_bytes=8 * 1024 * 1024,
        )
        started = time.perf_counter()
        processor = real_processor_factory(settings, Metrics())()
        print(f"processor built in {time.perf_counter() - started:.2f} s")
        now = datetime.now(UTC)
        try:
            for n in range(3):
                processor.process_many([(report(n), None, now)])
            for i, size in enumerate(int(x) for x in args.sizes.split(",")):
                raw = big_report(900 + i, size)
                wall, cpu = time.perf_counter(), time.process_time()
                [result] = processor.process_many([(raw, None, now)])
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                fate = (
                    getattr(result, "reason_class", type(result).__name__)
                    if isinstance(result, BaseException)
                    else ",".join(o.kind for o in result)
                )
                print(
                    f"{size / 1e6:5.2f} MB, budget {args.budget:.1f} s: wall {wall:.2f} s, "
                    f"cpu {cpu:.2f} s -> {fate}"
                )
        finally:
            processor.close()


if __name__ == "__main__":
    main()
