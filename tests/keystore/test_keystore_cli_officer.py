"""The privacy officer's first hour (issue 15 items 9 and 10): forget and reveal find the
patient whatever the authority (or demand one), take ids as the research output carries
them, say when nothing was done; rotate and stats say what an officer needs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from keystore import Keyring
from keystore.config import default_store_from_env
from pipelines.document import Identifier, Identifiers
from pipelines.patient_context import remember_context


def _run(app: typer.Typer, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def _patient(authority: str, patient_id: str, shift: int = -20) -> str:
    with default_store_from_env() as store:
        return store.get_or_create(authority, patient_id, lambda: store.new_state(shift)).pseudonym


def test_forget_without_authority_finds_the_patient(cli: typer.Typer) -> None:
    assert _run(cli, "keys", "init")[0] == 0
    pseudonym = _patient("NORTHCLINIC", "MRN-8841")
    code, out = _run(cli, "keys", "forget", "MRN-8841", "--reason", "request 17")
    assert code == 0, out
    assert "forgotten (authority 'NORTHCLINIC')" in out
    code, out = _run(cli, "keys", "reveal", pseudonym, "--reason", "IRB-1")
    assert code == 1 and "forgotten" in out


def test_forget_nothing_is_a_failure(cli: typer.Typer) -> None:
    assert _run(cli, "keys", "init")[0] == 0
    _patient("NORTHCLINIC", "MRN-1")
    code, out = _run(cli, "keys", "forget", "MRN-404", "--reason", "request 1")
    assert code == 1 and "nothing forgotten" in out
    code, out = _run(cli, "keys", "forget", "MRN-1", "--authority", "SOUTHCLINIC", "--reason", "r")
    assert code == 1 and "nothing forgotten" in out


def test_forget_an_id_under_two_authorities_demands_one(cli: typer.Typer) -> None:
    assert _run(cli, "keys", "init")[0] == 0
    _patient("NORTHCLINIC", "MRN-2")
    keep = _patient("SOUTHCLINIC", "MRN-2")
    code, out = _run(cli, "keys", "forget", "MRN-2", "--reason", "request 2")
    assert code == 2 and "'NORTHCLINIC', 'SOUTHCLINIC'" in out and "--authority" in out
    code, out = _run(cli, "keys", "forget", "MRN-2", "--authority", "NORTHCLINIC", "--reason", "r")
    assert code == 0, out
    code, out = _run(cli, "keys", "reveal", keep, "--reason", "IRB-1")
    assert code == 0 and json.loads(out.splitlines()[-1])["authority"] == "SOUTHCLINIC"


def test_reveal_takes_the_subject_reference_as_it_is(cli: typer.Typer) -> None:
    assert _run(cli, "keys", "init")[0] == 0
    pseudonym = _patient("NORTHCLINIC", "MRN-3")
    code, out = _run(cli, "keys", "reveal", f"Patient/{pseudonym}", "--reason", "IRB-2")
    assert code == 0, out
    assert json.loads(out.splitlines()[-1]) == {"authority": "NORTHCLINIC", "patient_id": "MRN-3"}
    code, out = _run(cli, "keys", "reveal", "Patient/nosuchpseudonym", "--reason", "IRB-2")
    assert code == 1 and "not found" in out


def test_reveal_a_visit_pseudonym(cli: typer.Typer) -> None:
    assert _run(cli, "keys", "init")[0] == 0
    with default_store_from_env() as store:
        state = store.get_or_create("NORTHCLINIC", "MRN-4", lambda: store.new_state(11))
        remember_context(
            state, Identifiers(other_ids=(Identifier("V-20240305-7", "NORTHCLINIC", "VN"),))
        )
        store.save("NORTHCLINIC", "MRN-4", state)
        visit = store.pseudonym("visit", state.seed, "V-20240305-7")
    code, out = _run(
        cli, "keys", "reveal", f"Encounter/{visit}", "--reason", "IRB-3", "--operator", "officer"
    )
    assert code == 0, out
    assert json.loads(out.splitlines()[-1]) == {
        "authority": "NORTHCLINIC",
        "patient_id": "MRN-4",
        "visit_id": "V-20240305-7",
    }
    code, out = _run(cli, "keys", "reveal", "Encounter/unknownvisit", "--reason", "IRB-3")
    assert code == 1 and "not found" in out


def test_rotate_with_one_key_does_not_call_it_new(
    cli: typer.Typer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = Keyring.generate("only").primary.entry()
    monkeypatch.setenv("DEIDSTREAM_MASTER_KEY", entry)
    monkeypatch.setenv("DEIDSTREAM_KEYSTORE_URL", f"sqlite:///{tmp_path / 'k.db'}")
    _patient("NORTHCLINIC", "MRN-5")
    code, out = _run(cli, "keys", "rotate")
    assert code == 0, out
    assert not out.startswith("new master key")
    assert "no new master key: only is still the primary key" in out
    assert "DEIDSTREAM_MASTER_KEY" in out


def test_stats_for_an_officer(cli: typer.Typer) -> None:
    assert _run(cli, "keys", "init")[0] == 0
    _patient("NORTHCLINIC", "MRN-6")
    _patient("NORTHCLINIC", "MRN-7")
    code, out = _run(cli, "keys", "stats")
    assert code == 0 and "last rotation:     never" in out
    assert "patients:          2" in out and "forgotten:         0" in out
    assert _run(cli, "keys", "forget", "MRN-7", "--reason", "request 7")[0] == 0
    assert _run(cli, "keys", "rotate", "--operator", "officer")[0] == 0
    code, out = _run(cli, "keys", "stats")
    assert code == 0, out
    assert "patients:          1" in out and "forgotten:         1" in out
    assert "(1 records)" in out and "by officer" in out
    assert "cache_hits" not in out and "MRN" not in out and "NORTHCLINIC" not in out
    code, out = _run(cli, "keys", "stats", "--json")
    figures = json.loads(out)
    assert figures["last_rotation"]["operator"] == "officer"
    assert len(figures["keys_in_use"]) == 1
