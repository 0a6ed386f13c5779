"""The root command line (issue 15 item 6): --version, completion, flags shown as flags."""

from __future__ import annotations

import re
from importlib.metadata import version

from click.testing import CliRunner

from service import cli


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(
        cli.command(), list(args), prog_name="deidstream", env={"COLUMNS": "120", "TERM": "dumb"}
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_version_option() -> None:
    assert _invoke("--version").strip() == f"deidstream {version('deidstream')}"
    assert _invoke("-V").strip() == f"deidstream {version('deidstream')}"


def test_shell_completion_is_offered() -> None:
    out = _invoke("--help")
    assert "--install-completion" in out and "--show-completion" in out


def test_boolean_flags_take_no_value_in_help() -> None:
    for args in (
        ("--help",),
        ("demo", "--help"),
        ("convert", "--help"),
        ("keys", "rotate", "--help"),
        ("deidentify", "--help"),
    ):
        out = _invoke(*args)
        assert "<bool>" not in out, (args, out)
    convert = _invoke("convert", "--help")
    assert re.search(r"--text\s", convert) and re.search(r"--annotations\s", convert)
