"""`deidstream keys audit verify` and `keys forget --now` from the command line."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from keystore import Keyring
from keystore.config import default_store_from_env


def _run(app: typer.Typer, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_verify_prints_the_head_and_names_the_broken_line(cli: typer.Typer, tmp_path: Path) -> None:
    assert _run(cli, "keys", "init")[0] == 0
    with default_store_from_env() as store:
        state = store.get_or_create("H", "5511", lambda: store.new_state(3))
    for reason in ("IRB-1", "IRB-2", "IRB-3"):
        assert _run(cli, "keys", "reveal", state.pseudonym, "--reason", reason)[0] == 0
    code, out = _run(cli, "keys", "audit", "verify")
    assert code == 0 and "intact: 3 lines" in out, out
    head = out.rsplit("head ", 1)[1].strip()
    assert head.startswith("3:")
    with sqlite3.connect(tmp_path / ".deidstream" / "keystore.sqlite3") as conn:
        conn.executescript(
            "DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;"
            "UPDATE audit SET reason = 'IRB-9' WHERE seq = 2;"
        )
    code, out = _run(cli, "keys", "audit", "verify")
    assert code == 1 and "(seq 2)" in out and "changed" in out, out
    with sqlite3.connect(tmp_path / ".deidstream" / "keystore.sqlite3") as conn:
        conn.execute("DELETE FROM audit WHERE seq >= 2")
    code, out = _run(cli, "keys", "audit", "verify")  # the sealed anchor: no --head needed
    assert code == 1 and "tail was deleted" in out, out
    code, out = _run(cli, "keys", "audit", "verify", "--head", head)
    assert code == 1 and "tail was deleted" in out, out


def test_forget_now_with_keys_from_the_environment_says_what_to_do(
    cli: typer.Typer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEIDSTREAM_MASTER_KEY", Keyring.generate("env-a").primary.entry())
    monkeypatch.setenv("DEIDSTREAM_KEYSTORE_URL", f"sqlite:///{tmp_path / 'ks.db'}")
    code, out = _run(cli, "keys", "forget", "5511", "--authority", "H", "--now", "--reason", "r")
    assert code == 2 and "destroy the old keys" in out, out
