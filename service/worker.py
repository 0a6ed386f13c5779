"""One worker process of ``deidstream run --workers N`` (started by service/supervisor.py).

    python -m service.worker --index I --socket PATH --parent PID [--cpus LIST]

It reads the settings (JSON) from stdin, dies with its parent (``PR_SET_PDEATHSIG``), pins
itself to ``--cpus`` if given, and runs the single-process service (``serve``) with its HTTP
app on the Unix socket ``PATH`` instead of a TCP port. Its metrics go to the supervisor's
``PROMETHEUS_MULTIPROC_DIR`` (set in its environment before prometheus-client is imported).
SIGTERM drains it as it drains ``deidstream run`` with one process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """SIGKILL when the supervisor dies (Linux); exit now if it died before we could ask."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def label_logs(index: int) -> None:
    """Every log line of this process names its worker."""
    from service.logs import FORMAT

    for handler in logging.getLogger().handlers:
        handler.setFormatter(
            logging.Formatter(FORMAT.replace("%(name)s", f"%(name)s[worker {index}]"))
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="service.worker")
    ap.add_argument("--index", type=int, required=True)
    ap.add_argument("--socket", required=True)
    ap.add_argument("--parent", type=int, required=True)
    ap.add_argument("--cpus", default="")
    args = ap.parse_args(argv)
    die_with_parent(args.parent)

    from service.affinity import parse_cpu_list, pin_process
    from service.commands.run import serve
    from service.logs import configure_logging
    from service.supervisor import settings_from_payload

    settings = settings_from_payload(sys.stdin.buffer.read())
    configure_logging(settings.log_level)
    label_logs(args.index)
    log = logging.getLogger("deidstream.worker")
    cpus = parse_cpu_list(args.cpus)
    if cpus:
        pin_process(cpus)
        log.info("pinned to CPUs %s", ",".join(map(str, cpus)))
    # worker 0 alone serves the review pages (the supervisor sends them there: the sessions
    # live in its memory) and runs the review intake; every worker applies the review lists
    return asyncio.run(serve(settings, uds=args.socket, review_pages=args.index == 0))


if __name__ == "__main__":
    raise SystemExit(main())
