"""``deidstream mllp``: the MLLP gateway — HL7 v2 over TCP in, the HL7 input topic out, an
ACK per message only after the broker acknowledged it (see service/mllp.py)."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from service.commands.options import BootstrapServers, ConfigFile


def register(app: typer.Typer) -> None:
    @app.command()
    def mllp(
        host: Annotated[
            str, typer.Option(envvar="DEIDSTREAM_MLLP_HOST", help="Address to listen on")
        ] = "127.0.0.1",
        port: Annotated[
            int, typer.Option(envvar="DEIDSTREAM_MLLP_PORT", help="TCP port (2575: HL7)")
        ] = 2575,
        bootstrap_servers: BootstrapServers = None,
        topic: Annotated[
            str | None, typer.Option(help="HL7 input topic (default: the configured one)")
        ] = None,
        metrics_port: Annotated[
            int | None,
            typer.Option(
                envvar="DEIDSTREAM_MLLP_METRICS_PORT",
                help="Serve /metrics and /readyz on this port (off)",
            ),
        ] = None,
        config: ConfigFile = None,
    ) -> None:
        """Receive HL7 v2 over MLLP, publish each message keyed by patient, ACK after the broker."""
        from service.logs import configure_logging
        from service.mllp import serve
        from service.settings import settings_or_exit

        settings = settings_or_exit(config)
        from service.startup import brokers_or_exit, port_or_exit

        brokers_or_exit(bootstrap_servers or settings.bootstrap_servers, "mllp")
        port_or_exit(host, port, "the MLLP port", "mllp")
        if metrics_port is not None:
            port_or_exit(host, metrics_port, "the metrics port", "mllp")
        configure_logging(settings.log_level)

        def started(address: tuple[str, int]) -> None:
            typer.echo(f"MLLP gateway on {address[0]}:{address[1]}", err=True)

        code = asyncio.run(
            serve(
                settings,
                host=host,
                port=port,
                bootstrap_servers=bootstrap_servers,
                topic=topic,
                started=started,
                metrics_port=metrics_port,
            )
        )
        raise typer.Exit(code)
