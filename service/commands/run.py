"""``deidstream run``: the consumer and the HTTP server in one process, one event loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Iterator
from typing import Annotated

import typer
import uvicorn

from service.commands.options import ConfigFile
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


async def serve(
    settings: Settings,
    *,
    stop: asyncio.Event | None = None,
    runner: Runner | None = None,
    uds: str | None = None,
    review_pages: bool = True,
) -> int:
    """Run until SIGTERM/SIGINT (or ``stop``), then drain: finish the batch in flight, commit,
    leave the group. Returns the exit status (1 if the runner died on an error). ``uds``: serve
    HTTP on that Unix socket instead of the TCP port (a worker under the supervisor).
    ``review_pages``: serve the review workbench's pages and intake when it is enabled (one
    worker of several does)."""
    from service.app import create_app

    loop = asyncio.get_running_loop()
    stop = stop or asyncio.Event()
    failed: list[BaseException] = []

    def on_fatal(exc: BaseException) -> None:
        failed.append(exc)
        stop.set()

    if runner is not None:
        runner.on_fatal = on_fatal
    app = create_app(
        settings,
        runner=runner,
        on_fatal=on_fatal,
        review_pages=review_pages,
        worker_routes=uds is not None,
    )
    config = uvicorn.Config(
        app,
        host=settings.http_host,
        port=settings.http_port,
        log_level=settings.log_level,
        lifespan="on",
        access_log=False,
        uds=uds,
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


async def supervise(settings: Settings, workers: int, *, stop: asyncio.Event | None = None) -> int:
    """``workers`` worker processes under one supervisor serving the HTTP port
    (service/supervisor.py). Until SIGTERM/SIGINT (or ``stop``): then every worker drains.
    Returns 0 when every worker exited 0, else 1; 3 (uvicorn's startup failure) when the
    port cannot be bound — checked before any worker is started."""
    from service.supervisor import Supervisor, private_workdir
    from service.supervisor_app import create_supervisor_app

    host, port = settings.http_host, settings.http_port
    try:
        listener = socket.create_server(
            (host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET
        )
    except OSError as exc:
        log.error("cannot listen on %s:%d: %s", host, port, exc.strerror or exc)
        return 3
    loop = asyncio.get_running_loop()
    stop = stop or asyncio.Event()
    with listener, private_workdir() as workdir:
        supervisor = Supervisor(settings, workers, workdir)
        config = uvicorn.Config(
            create_supervisor_app(supervisor),
            host=host,
            port=port,
            log_level=settings.log_level,
            lifespan="off",
            access_log=False,
        )
        quiet_payload_loggers(settings.log_level)
        server = _Server(config)
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        serving = asyncio.create_task(server.serve(sockets=[listener]))
        log.info("starting %d workers", workers)
        await supervisor.start()
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
        log.info("stopping: every worker drains")
        status = await supervisor.stop()
        server.should_exit = True
        await serving
        stopped.cancel()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        return status


def _check_key_custody(settings: Settings) -> None:
    """A missing master key is a start-up error (one line, exit 2), not a retry loop."""
    from keystore.errors import MissingKeyError
    from service.wiring import check_key_custody

    try:
        check_key_custody(settings)
    except MissingKeyError as exc:
        typer.echo(f"deidstream run: {exc}", err=True)
        raise typer.Exit(2) from None


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        config: ConfigFile = None,
        http_port: Annotated[
            int | None, typer.Option(help="Overrides DEIDSTREAM_HTTP_PORT")
        ] = None,
        workers: Annotated[
            int | None,
            typer.Option(
                min=1,
                help="Worker processes (overrides DEIDSTREAM_WORKERS; default: the CPUs "
                "the process may use; 1: one process, no supervisor)",
            ),
        ] = None,
    ) -> None:
        """Consume the input topics, publish research documents, serve /metrics and health."""
        overrides: dict[str, int] = {}
        if http_port is not None:
            overrides["http_port"] = http_port
        if workers is not None:
            overrides["workers"] = workers
        settings = settings_or_exit(config, **overrides)
        from service.startup import brokers_or_exit, port_or_exit

        brokers_or_exit(settings.bootstrap_servers, "run", option=False)
        port_or_exit(settings.http_host, settings.http_port, "the HTTP port", "run")
        configure_logging(settings.log_level)
        if settings.cpu_affinity:
            from service.affinity import pin_process

            try:
                pinned = pin_process(settings.cpu_affinity)
            except (ValueError, OSError) as exc:
                typer.echo(f"deidstream run: cpu_affinity: {exc}", err=True)
                raise typer.Exit(2) from exc
            log.info("process pinned to CPUs %s", ",".join(map(str, sorted(pinned))))
        _check_key_custody(settings)
        from service.supervisor import worker_count

        count = worker_count(settings)
        if count > 1:  # each worker narrows itself to one of those CPUs
            raise typer.Exit(asyncio.run(supervise(settings, count)))
        raise typer.Exit(asyncio.run(serve(settings)))
