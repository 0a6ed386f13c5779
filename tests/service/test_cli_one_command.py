"""``deidstream <command>`` imports only the module of that command (``service.cli.main``):
so each command module must register the command of its own name."""

from __future__ import annotations

import importlib
import pkgutil

import typer
import typer.main

import service.commands as pkg


def _commands_of(module: str) -> set[str]:
    app = typer.Typer()
    app.callback()(lambda: None)  # a group, even with one command
    hook = getattr(importlib.import_module(f"{pkg.__name__}.{module}"), "register", None)
    if hook is None:
        return set()
    hook(app)
    return set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def test_each_command_module_registers_its_own_name() -> None:
    modules = [info.name for info in pkgutil.iter_modules(pkg.__path__)]
    registering = {m: _commands_of(m) for m in modules}
    for module, commands in registering.items():
        if commands:
            assert module in commands, (module, commands)
    # the detection command is among them, so ``deidstream detect`` starts lean
    assert "detect" in registering["detect"]
