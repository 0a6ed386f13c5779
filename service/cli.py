"""The ``deidstream`` command line (typer). Each command group lives in service/commands/."""

from __future__ import annotations

import importlib
import pkgutil

import typer

app = typer.Typer(
    name="deidstream",
    help="De-identify HL7 v2 / FHIR clinical reports: detect PHI, replace it, stream it.",
    no_args_is_help=True,
    add_completion=False,
    # Tracebacks with local variables would print message text: never show them.
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
)


@app.command()
def version() -> None:
    """Print the installed deidstream version."""
    from importlib.metadata import version as dist_version

    typer.echo(dist_version("deidstream"))


def _register_commands() -> None:
    """Every module in service.commands exposes ``register(app)``."""
    import service.commands as pkg

    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        hook = getattr(module, "register", None)
        if hook is not None:
            hook(app)


def main() -> None:
    _register_commands()
    app()


if __name__ == "__main__":
    main()
