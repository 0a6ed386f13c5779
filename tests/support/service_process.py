"""``deidstream run`` as an operator starts it, for the tests that need the service as a
process (SIGKILL, SIGTERM draining, worker processes, what it logs).

:class:`ServiceProcess` runs this Python's ``-m service.cli run ARGS`` from the repository
root with the given environment (which names the port, ``DEIDSTREAM_HTTP_PORT``, and the API
token, ``DEIDSTREAM_API_TOKEN``, that ``/v1/status`` is asked with); stdout and stderr are
appended to a log file the test reads afterwards.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]

Status = dict[str, Any]


class ServiceProcess:
    """One ``deidstream run`` process; start another to restart it (same env: same port)."""

    def __init__(
        self, env: Mapping[str, str], log: Path, *args: str, port: int | None = None
    ) -> None:
        """Start it; ``port``, if given, instead of the env's ``DEIDSTREAM_HTTP_PORT``."""
        self.port = port if port is not None else int(env["DEIDSTREAM_HTTP_PORT"])
        self._token = env.get("DEIDSTREAM_API_TOKEN", "")
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "service.cli", "run", *args],
                cwd=ROOT,
                env={**env, "DEIDSTREAM_HTTP_PORT": str(self.port)},
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def status(self, pred: Callable[[Status], object], within: float = 60.0) -> Status:
        """The first ``/v1/status`` answer ``pred`` holds for; AssertionError if the process
        exits first or ``within`` seconds pass."""
        end = time.monotonic() + within
        async with httpx.AsyncClient(timeout=5) as http:
            while time.monotonic() < end:
                assert self.proc.poll() is None, "the service exited"
                try:
                    got = await http.get(
                        f"{self.url}/v1/status",
                        headers={"Authorization": f"Bearer {self._token}"},
                    )
                    found: Status | None = got.json() if got.status_code == 200 else None
                except (httpx.HTTPError, ValueError):
                    found = None
                if found is not None and pred(found):
                    return found
                await asyncio.sleep(0.1)
        raise AssertionError("the service did not reach the expected state")

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (the service drains and exits), killed if it has not exited after
        ``timeout`` seconds; its exit status (0: drained cleanly)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait()

    def kill(self) -> None:
        """SIGKILL if still running (a test's cleanup, or a crash on purpose), and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
