"""Key custody (issue 23 item 5): a configured store takes its key only from the configured
variables or files. With ``DEIDSTREAM_KEYSTORE_URL`` set and no master key, deidstream used
``./.deidstream/master.key`` when that file happened to be in the working directory and
sealed the configured store under it. Now: one line and a non-zero exit — for ``run`` too,
at start-up, not a retry loop."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from keystore import Keyring
from keystore.config import resolve
from keystore.errors import MissingKeyError

URL = "DEIDSTREAM_KEYSTORE_URL"


def _local_default_key(base: Path) -> Path:
    """A demo's ``./.deidstream/master.key`` left in the working directory."""
    return Keyring.generate("local-demo").write_file(base / ".deidstream" / "master.key")


def test_a_configured_url_never_takes_the_local_default_key(tmp_path: Path) -> None:
    _local_default_key(tmp_path)
    shared = tmp_path / "shared.db"
    with pytest.raises(MissingKeyError, match="DEIDSTREAM_MASTER_KEY"):
        resolve({URL: f"sqlite:///{shared}"}, base_dir=tmp_path)
    assert not shared.exists()
    # the configured variables still work, and the local file is then not what is used
    entry = Keyring.generate("configured").primary.entry()
    config, keyring = resolve(
        {URL: f"sqlite:///{shared}", "DEIDSTREAM_MASTER_KEY": entry}, base_dir=tmp_path
    )
    assert keyring.key_ids == ("configured",) and config.key_file is None
    # without a URL the local default (a demo) is still used
    _, local = resolve({}, base_dir=tmp_path)
    assert local.key_ids == ("local-demo",)


def test_keys_commands_refuse_in_one_line(
    cli: typer.Typer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _local_default_key(tmp_path)
    shared = tmp_path / "shared.db"
    monkeypatch.setenv(URL, f"sqlite:///{shared}")
    result = CliRunner().invoke(cli, ["keys", "init"])
    assert result.exit_code == 1, result.output
    assert result.output.count("\n") == 1 and "DEIDSTREAM_MASTER_KEY" in result.output
    assert not shared.exists()


def test_run_without_a_key_is_a_start_up_error(tmp_path: Path) -> None:
    """`deidstream run` exits at once with one line (no broker, no retry loop)."""
    _local_default_key(tmp_path)
    shared = tmp_path / "shared.db"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("DEIDSTREAM_")  # the test's own settings only
    }
    env[URL] = f"sqlite:///{shared}"
    exe = Path(sys.executable).with_name("deidstream")
    done = subprocess.run(  # noqa: S603 - our own entry point
        [str(exe), "run", "--workers", "1", "--http-port", "0"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "DEIDSTREAM_MASTER_KEY" in lines[0], done.stderr
    assert not shared.exists()
