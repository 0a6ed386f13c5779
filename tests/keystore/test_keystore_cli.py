"""`deidstream keys …` end to end in a temporary working directory."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from keystore import Keyring, open_store
from keystore.config import default_store_from_env, resolve
from keystore.errors import MissingKeyError


def _run(app: typer.Typer, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_local_default_lifecycle(cli: typer.Typer, tmp_path: Path) -> None:
    code, out = _run(cli, "keys", "init")
    assert code == 0, out
    key_file = tmp_path / ".deidstream" / "master.key"
    assert (key_file.stat().st_mode & 0o777) == 0o600
    assert (tmp_path / ".deidstream" / "keystore.sqlite3").exists()

    with default_store_from_env() as store:
        state = store.get_or_create("HOSP", "12345", lambda: store.new_state(-40))
    code, out = _run(
        cli, "keys", "reveal", state.pseudonym, "--reason", "IRB-7", "--operator", "officer"
    )
    assert code == 0, out
    assert json.loads(out.strip().splitlines()[-1]) == {"authority": "HOSP", "patient_id": "12345"}

    code, out = _run(cli, "keys", "rotate")
    assert code == 0 and "re-wrapped 1" in out, out
    assert len(Keyring.from_file(key_file)) == 2
    code, out = _run(cli, "keys", "rotate", "--retire-old")
    assert code == 0, out
    assert len(Keyring.from_file(key_file)) == 1
    with default_store_from_env() as store:
        assert store.get_or_create("HOSP", "12345", lambda: store.new_state(9)) == state

    code, out = _run(cli, "keys", "forget", "12345", "--authority", "HOSP", "--reason", "req")
    assert code == 0 and "forgotten" in out
    code, out = _run(cli, "keys", "reveal", state.pseudonym, "--reason", "IRB-7")
    assert code == 1 and "forgotten" in out

    code, out = _run(cli, "keys", "stats", "--json")
    assert code == 0
    stats = json.loads(out)
    assert stats["patients"] == 0 and stats["forgotten"] == 1 and stats["audit_entries"] >= 4
    assert "12345" not in out and "HOSP" not in out


def test_env_keys_and_print_key(
    cli: typer.Typer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = _run(cli, "keys", "init", "--print-key")
    entry = out.strip()
    key_id, b64 = entry.split(":")
    assert code == 0 and len(base64.b64decode(b64)) == 32
    assert not (tmp_path / ".deidstream").exists()  # printing touches nothing
    monkeypatch.setenv("DEIDSTREAM_MASTER_KEY", entry)
    monkeypatch.setenv("DEIDSTREAM_KEYSTORE_URL", f"sqlite:///{tmp_path / 'shared.db'}")
    code, out = _run(cli, "keys", "init")
    assert code == 0 and key_id in out and not (tmp_path / ".deidstream").exists()
    code, out = _run(cli, "keys", "rotate", "--generate")
    assert code == 2 and "init --print-key" in out
    new = Keyring.generate("second").primary.entry()
    monkeypatch.setenv("DEIDSTREAM_MASTER_KEY", f"{new},{entry}")
    code, out = _run(cli, "keys", "rotate")
    assert code == 0 and "second" in out, out


def test_configured_url_without_key_is_refused(tmp_path: Path) -> None:
    env = {"DEIDSTREAM_KEYSTORE_URL": f"sqlite:///{tmp_path / 'x.db'}"}
    with pytest.raises(MissingKeyError, match="DEIDSTREAM_MASTER_KEY"):
        resolve(env, base_dir=tmp_path)
    assert not (tmp_path / ".deidstream").exists()


def test_lost_local_key_file_is_not_silently_replaced(tmp_path: Path) -> None:
    config, keyring = resolve({}, base_dir=tmp_path)
    open_store(config.url, keyring).close()
    assert config.key_file is not None
    os.unlink(config.key_file)
    with pytest.raises(MissingKeyError, match="missing"):
        resolve({}, base_dir=tmp_path)


def test_key_file_with_loose_permissions_is_refused(tmp_path: Path) -> None:
    config, _ = resolve({}, base_dir=tmp_path)
    assert config.key_file is not None
    config.key_file.chmod(0o644)
    with pytest.raises(MissingKeyError, match="chmod 600"):
        resolve({}, base_dir=tmp_path)


def test_migrate_command(cli: typer.Typer, tmp_path: Path) -> None:
    code, out = _run(cli, "keys", "migrate")
    assert code == 0 and "schema version" in out, out
    code, out = _run(cli, "keys", "migrate", "--grant-to", "someone")
    assert code == 1 and "only a PostgreSQL" in out


def test_rotate_retire_old_keeps_the_review_queue_readable(
    cli: typer.Typer, tmp_path: Path
) -> None:
    """`keys rotate --retire-old` with a key file and a review queue: the queue's blobs are
    re-wrapped (and counted), the old key leaves the file, every item opens with what is
    left."""
    from pipelines.document import ClinicalDocument, Identifiers, PersonName
    from pipelines.phi.detector import Detector
    from pipelines.policy import Policy
    from pipelines.review import ReviewQueue

    assert _run(cli, "keys", "init")[0] == 0
    note = ClinicalDocument(  # an invented relative
        text="Seen with Orvella Stanch today.\n",
        patient_id="P-1",
        assigning_authority="H",
        identifiers=Identifiers(relative_names=(PersonName(family="Stanch", given=("Orvella",)),)),
    )
    with default_store_from_env() as store:
        ids = ReviewQueue(store).enqueue(
            note,
            Detector(Policy.from_mapping({"recognizers": {}})),
            coordinates="in:0:1",
            held_reason=("leak_guard", "r"),
        )
    code, out = _run(cli, "keys", "rotate", "--retire-old")
    assert code == 0, out
    assert f"review blobs re-wrapped {len(ids)}," in out and "Stanch" not in out
    key_file = tmp_path / ".deidstream" / "master.key"
    assert len(Keyring.from_file(key_file)) == 1
    with default_store_from_env() as store:
        queue = ReviewQueue(store)
        assert all((item := queue.item(i)) is not None and "Stanch" in item.text for i in ids)
