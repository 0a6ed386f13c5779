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


def _wide(*args: str) -> str:
    result = CliRunner().invoke(
        cli.command(), list(args), prog_name="deidstream", env={"COLUMNS": "250", "TERM": "dumb"}
    )
    assert result.exit_code == 0, result.output
    return result.output


def _summaries(out: str) -> dict[str, str]:
    """A command list's rows: name → summary (continuation rows joined)."""
    rows: dict[str, str] = {}
    last = ""
    for line in out.splitlines():
        cells = re.match(r"│ (\S*)\s+(.*?)\s*│$", line)
        if cells and cells.group(1) and not cells.group(1).startswith("-"):
            last = cells.group(1)
            rows[last] = cells.group(2)
        elif cells and last:
            rows[last] += "\n" + cells.group(2)
    return rows


def test_help_texts_do_not_break_mid_sentence() -> None:
    """Issue 28 item 6: a summary in a command list is one line on a wide terminal (typer kept
    the docstring's line breaks), and brackets in a help text are shown, not eaten as rich
    markup."""
    for group in ((), ("keys",), ("held",), ("review",), ("keys", "audit")):
        for name, summary in _summaries(_wide(*group, "--help")).items():
            assert "\n" not in summary, (group, name, summary)
    assert "retire" in _summaries(_wide("keys", "--help"))
    assert "[evaluation.category_map] renames" in _wide("train", "--help")
    assert "needs moto[server])" in _wide("broker", "--help")


def test_readme_lists_every_command() -> None:
    """Issue 28 item 6: `held`, `keys migrate` and `keys retire` were missing."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index("## Command line") :].split("```")[1]
    lines = [line.split("#")[0] for line in block.splitlines()]
    root = cli.command()
    listed = {line.split()[1] for line in lines if line.startswith("deidstream ")}
    assert set(root.commands) - {"version"} <= listed | {"--version"}, set(root.commands) - listed
    for group in ("keys", "held", "review"):
        words = {
            w.strip("|[]")
            for line in lines
            if line.startswith(f"deidstream {group} ")
            for w in line.split()
        }
        missing = set(root.commands[group].commands) - words
        assert not missing, (group, missing)


def test_the_cli_checks_the_environment_under_the_settings_prefix() -> None:
    """The root callback loads the settings model only when some variable has this prefix."""
    from service.settings import ENV_PREFIX

    assert cli._ENV_PREFIX == ENV_PREFIX  # noqa: SLF001
