"""The ``deidstream`` command line (typer). Each command group lives in service/commands/."""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import sys
from typing import Annotated, Any

import typer
import typer.main

app = typer.Typer(
    name="deidstream",
    help="De-identify HL7 v2 / FHIR clinical reports: detect PHI, replace it, stream it.",
    no_args_is_help=True,
    # `deidstream --install-completion` / `--show-completion` (bash, zsh, fish, PowerShell)
    add_completion=True,
    # Tracebacks with local variables would print message text: never show them.
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
)


_ENV_PREFIX = "DEIDSTREAM_"  # service.settings.ENV_PREFIX (tests/service/test_cli_root.py)


def _installed_version() -> str:
    from importlib.metadata import version as dist_version

    return dist_version("deidstream")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"deidstream {_installed_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            callback=_print_version,
            is_eager=True,
            help="Print the installed version and exit.",
        ),
    ] = False,
) -> None:
    """De-identify HL7 v2 / FHIR clinical reports: detect PHI, replace it, stream it."""
    # every command: a misspelt DEIDSTREAM_* variable would be ignored and a default used.
    # Without any such variable there is nothing to check, and the settings model (pydantic
    # settings, a tenth of a short run's start-up) is not loaded for it.
    if any(name.upper().startswith(_ENV_PREFIX) for name in os.environ):
        from service.settings import environment_or_exit

        environment_or_exit()


@app.command()
def version() -> None:
    """Print the installed deidstream version."""
    typer.echo(_installed_version())


_registered: dict[str, bool] = {}  # command module -> has it a ``register`` hook


def _register_commands(only: str | None = None) -> None:
    """Every module in service.commands exposes ``register(app)`` (once per process); with
    ``only`` the name of such a module, that module alone (the command of that name)."""
    import service.commands as pkg

    modules = sorted(info.name for info in pkgutil.iter_modules(pkg.__path__))
    if only in modules and _register(f"{pkg.__name__}.{only}"):
        return
    for name in modules:
        _register(f"{pkg.__name__}.{name}")


def _register(module: str) -> bool:
    """Register the commands of ``module`` (once); does it have any?"""
    if module not in _registered:
        hook = getattr(importlib.import_module(module), "register", None)
        if hook is not None:
            hook(app)
        _registered[module] = hook is not None
    return _registered[module]


def _bare(param: Any) -> Any:
    if param is not None and getattr(param, "is_flag", False) and param.metavar is None:
        param.metavar = ""
    return param


def _flags_as_flags(command: Any) -> None:
    """typer (0.29) labels boolean flags ``<bool>`` in help, as if they took a value
    (``--keep <bool>``). A flag takes none: show it bare, in every subcommand, --help too.
    Duck-typed: typer ships its own copy of click."""
    for param in command.params:
        _bare(param)
    get_help_option = command.get_help_option
    command.get_help_option = lambda ctx: _bare(get_help_option(ctx))
    for sub in (getattr(command, "commands", None) or {}).values():
        _flags_as_flags(sub)


def _prose(text: str | None) -> str | None:
    """A help text as typer's rich help shows it well: each paragraph one line (rich wraps
    it to the terminal; typer kept a docstring's line breaks in command lists, so a summary
    broke mid-sentence), and ``[...]`` shown as written (not taken as rich markup, which
    dropped ``[categories]`` from a sentence)."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    prose = "\n\n".join(" ".join(p.split()) for p in paragraphs)
    if "[" not in prose and not prose.endswith("\\"):
        return prose  # what escape gives: rich (its import) only for a text it would change
    from rich.markup import escape

    return escape(prose)


def _tidy_help(command: Any) -> None:
    """:func:`_prose` on every command's and option's help, in every subcommand."""
    command.help = _prose(command.help)
    for param in command.params:
        if getattr(param, "help", None):
            param.help = _prose(param.help)
    for sub in (getattr(command, "commands", None) or {}).values():
        _tidy_help(sub)


def command(only: str | None = None) -> Any:
    """The whole command line as one click command (what ``deidstream`` runs); with
    ``only``, the command line of that one command when a module registers it (the others'
    imports are a large part of a short run's start-up)."""
    _register_commands(only)
    cmd = typer.main.get_command(app)
    _flags_as_flags(cmd)
    _tidy_help(cmd)
    return cmd


def main() -> None:
    args = sys.argv[1:2]
    command(args[0] if args and not args[0].startswith("-") else None)(prog_name="deidstream")


if __name__ == "__main__":
    main()
