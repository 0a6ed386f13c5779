"""Issue 23 item 2: `keys audit show [--since] [--patient]` reads who revealed, forgot or
rotated what and why (no SQL); `keys forget` needs `--reason` as `reveal` does."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import typer
from typer.testing import CliRunner

from keystore.config import default_store_from_env


def _run(app: typer.Typer, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def _patient(authority: str, patient_id: str) -> str:
    with default_store_from_env() as store:
        return store.get_or_create(authority, patient_id, lambda: store.new_state(5)).pseudonym


def test_forget_requires_a_reason(cli: typer.Typer) -> None:
    assert _run(cli, "keys", "init")[0] == 0
    _patient("H", "MRN-1")
    code, out = _run(cli, "keys", "forget", "MRN-1", "--authority", "H")
    assert code == 2 and "--reason" in out
    code, out = _run(cli, "keys", "forget", "MRN-1", "--authority", "H", "--reason", "  ")
    assert code == 2 and "must say why" in out
    with default_store_from_env() as store:
        assert store.get("H", "MRN-1") is not None  # nothing was forgotten
        assert store.admin.audit_lines() == []


def test_show_reads_who_did_what_and_why(cli: typer.Typer) -> None:
    assert _run(cli, "keys", "init")[0] == 0
    one = _patient("H", "MRN-1")
    _patient("H", "MRN-2")
    assert _run(cli, "keys", "reveal", one, "--reason", "IRB-7", "--operator", "ana")[0] == 0
    assert _run(cli, "keys", "rotate", "--operator", "ben")[0] == 0
    forget = ("keys", "forget", "MRN-2", "--authority", "H", "--operator", "ana")
    assert _run(cli, *forget, "--reason", "request 12")[0] == 0

    code, out = _run(cli, "keys", "audit", "show")
    assert code == 0, out
    assert "reveal  by ana  revealed" in out and "reason: IRB-7" in out
    assert "rotate  by ben" in out
    assert "forget  by ana  deleted" in out and "reason: request 12" in out
    assert "3 of 3 lines; chain intact" in out

    code, out = _run(cli, "keys", "audit", "show", "--patient", "MRN-1")
    assert code == 0 and "IRB-7" in out and "request 12" not in out and "rotate" not in out
    # a forgotten patient: no live record, its lines by authority and id
    code, out = _run(cli, "keys", "audit", "show", "--patient", "MRN-2")
    assert code == 1 and "--authority" in out
    code, out = _run(cli, "keys", "audit", "show", "--patient", "MRN-2", "--authority", "H")
    assert code == 0 and "request 12" in out and "IRB-7" not in out
    code, out = _run(cli, "keys", "audit", "show", "--patient", f"Patient/{one}")
    assert code == 0 and "IRB-7" in out and "request 12" not in out

    code, out = _run(cli, "keys", "audit", "show", "--since", "2999-01-01")
    assert code == 0 and "0 of 3 lines" in out
    code, out = _run(cli, "keys", "audit", "show", "--since", "yesterday")
    assert code == 2 and "ISO 8601" in out
    code, out = _run(cli, "keys", "audit", "show", "--json", "--action", "forget")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["reason"] for r in rows] == ["request 12"]
    assert rows[0]["operator"] == "ana" and rows[0]["seq"] == 3


def test_show_says_when_the_log_is_broken(cli: typer.Typer) -> None:
    assert _run(cli, "keys", "init")[0] == 0
    _patient("H", "MRN-1")
    assert _run(cli, "keys", "forget", "MRN-1", "--authority", "H", "--reason", "r")[0] == 0
    with sqlite3.connect(Path(".deidstream") / "keystore.sqlite3") as conn:
        conn.execute("DELETE FROM audit_head")  # a writer with the database file
    code, out = _run(cli, "keys", "audit", "show")
    assert code == 1 and "forget" in out and "anchor was deleted" in out
    code, out = _run(cli, "keys", "audit", "reanchor", "--reason", "incident 3")
    assert code == 0 and "anchored at head 2" in out, out
    code, out = _run(cli, "keys", "audit", "show", "--action", "audit-reanchor")
    assert code == 0 and "incident 3" in out and "anchor none->1" in out
