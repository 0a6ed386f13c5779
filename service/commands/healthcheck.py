"""``deidstream healthcheck [--ready]``: the image's HEALTHCHECK. Asks the service's own HTTP
listener — the configured ``http_host``/``http_port`` (environment, ``DEIDSTREAM_CONFIG_FILE``
or ``--config``), not a port written into the image — for ``/healthz`` (liveness) or, with
``--ready``, ``/readyz``. Exit 0 when it answers 200, 1 otherwise, with one line saying why.

Imports only the settings: it runs every few seconds inside the container, and the whole
command line would load the pipelines first (``python -m service.commands.healthcheck`` is
the same check with the lightest start)."""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Annotated

import typer

# an address that means "every interface" is probed on the loopback of the same family
_ANY = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}  # noqa: S104 - not a bind


def probe_url(host: str, port: int, *, ready: bool) -> str:
    target = _ANY.get(host, host)
    if ":" in target:
        target = f"[{target}]"
    return f"http://{target}:{port}/{'readyz' if ready else 'healthz'}"


def probe(url: str, timeout: float) -> tuple[bool, str]:
    """(answered 200, one line for the health log). Never raises for a network fault."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - http only
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return False, f"unhealthy: {url}: {type(exc).__name__}: {reason}"
    return status == 200, f"{'healthy' if status == 200 else 'unhealthy'}: {url}: {status}"


def healthcheck(config: Path | None, *, ready: bool, timeout: float) -> int:
    from service.settings import settings_or_exit

    settings = settings_or_exit(config)
    if settings.http_port == 0:
        typer.echo("unhealthy: http_port is 0 (a port the kernel picks): nothing to probe")
        return 1
    ok, line = probe(probe_url(settings.http_host, settings.http_port, ready=ready), timeout)
    typer.echo(line)
    return 0 if ok else 1


def register(app: typer.Typer) -> None:
    @app.command("healthcheck")
    def healthcheck_command(
        config: Annotated[
            Path | None, typer.Option("--config", "-c", help="TOML, JSON or .env settings file")
        ] = None,
        ready: Annotated[
            bool, typer.Option("--ready", help="Probe /readyz (broker, key store, partitions).")
        ] = False,
        timeout: Annotated[float, typer.Option(help="Seconds to wait for the answer.")] = 2.0,
    ) -> None:
        """Probe this instance's /healthz (or /readyz) on its configured port: exit 0 if 200."""
        raise typer.Exit(healthcheck(config, ready=ready, timeout=timeout))


def main(argv: list[str] | None = None) -> int:
    """``python -m service.commands.healthcheck [--ready]``: the check without the CLI."""
    args = sys.argv[1:] if argv is None else argv
    unknown = [a for a in args if a != "--ready"]
    if unknown:
        print(f"usage: python -m service.commands.healthcheck [--ready] (not {unknown[0]!r})")
        return 2
    try:
        return healthcheck(None, ready="--ready" in args, timeout=2.0)
    except typer.Exit as exc:  # settings_or_exit: a bad setting, already reported
        return int(exc.exit_code)


if __name__ == "__main__":
    sys.exit(main())
