"""``deidstream run``: the consumer and the HTTP server in one process, one event loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
import uvicorn

from service.logs import configure_logging, quiet_payload_loggers
from service.runner import Runner
from service.settings import Settings, settings_or_exit

log = logging.getLogger("deidstream.run")


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: ``serve_forever`` owns SIGTERM/SIGINT so the
    consumer drains before the process exits."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve(settings: Settings, *, stop: asyncio.Event | None = None,
                runner: Runner | None = None) -> int:
    """Run until SIGTERM/SIGINT (or ``stop``), then drain: finish the batch in flight, commit,
    leave the group. Returns the exit status (1 if the runner died on an error)."""
    from service.app import create_app

    loop = asyncio.get_running_loop()
    stop = stop or asyncio.Event()
    failed: list[BaseException] = []

    def on_fatal(exc: BaseException) -> None:
        failed.append(exc)
        stop.set()

    if runner is not None:
        runner.on_fatal = on_fatal
    app = create_app(settings, runner=runner, on_fatal=on_fatal)
    config = uvicorn.Config(
        app,
        host=settings.http_host,
        port=settings.http_port,
        log_level=settings.log_level,
        lifespan="on",
        access_log=False,
    )
    quiet_payload_loggers(settings.log_level)  # uvicorn's Config just set its loggers' levels
    server = _Server(config)
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)

    async def watch() -> None:
        await stop.wait()
        server.should_exit = True

    watcher = asyncio.create_task(watch())
    try:
        await server.serve()  # the lifespan starts the runner and drains it on shutdown
    finally:
        stop.set()
        await watcher
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
    if not server.started and not failed:
        return 1  # could not bind the HTTP port
    return 1 if failed else 0


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        config: Annotated[
            Path | None, typer.Option("--config", "-c", help="TOML, JSON or .env settings file")
        ] = None,
        http_port: Annotated[int | None, typer.Option(help="Overrides DEIDSTREAM_HTTP_PORT")] = None,
    ) -> None:
        """Consume the input topics, publish research documents, serve /metrics and health."""
        overrides = {"http_port": http_port} if http_port is not None else {}
        settings = settings_or_exit(config, **overrides)
        configure_logging(settings.log_level)
        if settings.cpu_affinity:
            from service.affinity import pin_process

            try:
                pinned = pin_process(settings.cpu_affinity)
            except (ValueError, OSError) as exc:
                typer.echo(f"deidstream run: cpu_affinity: {exc}", err=True)
                raise typer.Exit(2) from exc
            log.info("process pinned to CPUs %s", ",".join(map(str, sorted(pinned))))
        raise typer.Exit(asyncio.run(serve(settings)))
