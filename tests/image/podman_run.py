"""Podman for the image tests: every call reads the project's deploy/podman/containers.conf
(runc, cgroupfs, file events, explicit ulimits: what this kind of host needs), never the
host's own settings."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CONTAINERS_CONF = DEPLOY / "podman" / "containers.conf"
REPORT: list[str] = []  # figures printed at the end of the run (pytest_terminal_summary)
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"
# podman 4.3 without systemd says this on every run of an image with a HEALTHCHECK: the
# periodic check needs systemd timers; `podman healthcheck run` works without them
_SYSTEMD_NOISE = "unable to get systemd connection"


def report(line: str) -> None:
    REPORT.append(line)


def podman(
    *args: str, check: bool = True, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}
    proc = subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout, env=env, check=False
    )
    proc.stderr = "\n".join(x for x in proc.stderr.splitlines() if _SYSTEMD_NOISE not in x)
    if check and proc.returncode != 0:
        raise AssertionError(f"podman {' '.join(args[:3])}… exit {proc.returncode}: {proc.stderr}")
    return proc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str, timeout: float = 5) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - loopback
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@dataclass
class Deployment:
    """The compose file's deidstream service in a pod: the image's own broker beside it (the
    compose file's `kafka` name resolves to it), PostgreSQL of the host as `postgres`."""

    image: str
    pod: str
    service: str
    http_port: int  # inside the container (configured, not 8080)
    host_port: int  # published on 127.0.0.1, like the compose file's ports
    grace_seconds: float
    ready_seconds: float = 0.0
    env: dict[str, str] = field(default_factory=dict)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.host_port}{path}"

    def run(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """A one-off container of the image in the pod (its entry point: `deidstream ARGS`)."""
        return podman(
            "run", "--rm", "--pod", self.pod, "--no-healthcheck", self.image, *args, timeout=timeout
        )

    def exec(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return podman("exec", self.service, *args, check=check)

    def inspect(self) -> dict[str, Any]:
        return dict(json.loads(podman("inspect", self.service).stdout)[0])


@contextlib.contextmanager
def pg_schema() -> Iterator[str]:
    import psycopg

    schema = f"image_test_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError:
        pytest.fail(
            "image-test: PostgreSQL is not answering on 127.0.0.1:5432 (database test, user "
            "postgres): the compose file's key store needs it (Debian: apt-get install postgresql)",
            pytrace=False,
        )
    try:
        yield schema
    finally:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.close()
