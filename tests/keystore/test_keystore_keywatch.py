"""The key file watch of a running instance (keystore/keywatch.py): a changed file is read
once, a file that vanished or became unusable keeps the keys in use, and keys the file
dropped are kept for reading until the store retired them."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from keystore import Keyring, open_store
from keystore.keywatch import KeyFileWatch, adopt


def test_a_changed_file_is_read_once(tmp_path: Path) -> None:
    path = Keyring.generate("w-a").write_file(tmp_path / "master.key")
    watch = KeyFileWatch(path)
    assert watch.poll() is None  # unchanged since the instance read it
    Keyring.generate("w-b").merged_with(Keyring.from_file(path)).write_file(path, overwrite=True)
    got = watch.poll()
    assert got is not None and got.key_ids == ("w-b", "w-a")
    assert watch.poll() is None


def test_an_unusable_file_keeps_the_keys_in_use(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = Keyring.generate("w-a").write_file(tmp_path / "master.key")
    watch = KeyFileWatch(path)
    path.unlink()
    assert watch.poll() is None  # vanished: nothing to switch to
    Keyring.generate("w-c").write_file(path)
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="deidstream.keystore"):
        assert watch.poll() is None  # loose permissions: refused, the keys in use kept
    assert "cannot be used" in caplog.text and "w-c" not in caplog.text


def test_adopt_keeps_dropped_keys_until_retired() -> None:
    a, b = Keyring.generate("w-a"), Keyring.generate("w-b")
    current = a.merged_with(b)
    assert adopt(b, current, []).key_ids == ("w-b", "w-a")  # dropped, not retired: read
    assert adopt(b, current, ["w-a"]).key_ids == ("w-b",)  # retired: gone


def test_an_instance_on_a_key_file_seals_with_the_new_key_after_a_beat(tmp_path: Path) -> None:
    path = Keyring.generate("w-a").write_file(tmp_path / "master.key")
    url = f"sqlite:///{tmp_path / 'ks.sqlite3'}"
    with open_store(url, Keyring.from_file(path), key_file=path, heartbeat_s=0.0) as store:
        Keyring.generate("w-b").merged_with(Keyring.from_file(path)).write_file(
            path, overwrite=True
        )
        store.get_or_create("H", "1", lambda: store.new_state(2))  # beats, then seals
        assert store.admin.keyring.primary.key_id == "w-b"
        assert store.stats()["records_by_key"] == {"w-b": 1}
        mine = [i for i in store.stats()["instances"] if i["instance"] == store.instance_id]  # type: ignore[attr-defined]
        assert [i["key_id"] for i in mine] == ["w-b"]
