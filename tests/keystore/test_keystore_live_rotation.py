"""Finalising a forget needs no downtime, and the key file stays bounded (issue 23 item 1),
on SQLite and PostgreSQL.

Before: with a key file and a running service, `keys rotate --retire-old` was refused while
live instances sealed with the old key, and running it again added yet another key (the file
grew to three keys; the docs' "run it again" looped). Now a running instance re-reads a
changed key file at its heartbeat and seals with the new key; the step waits for it, then
retires the old key while the service runs. A step refused half-way (an instance that cannot
pick the key up) leaves two keys, and running it again adds none. The replaced key files'
bytes are zeroed: no old key stays readable in them."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from keystore import EncryptedStore, Keyring, open_store
from keystore.config import default_store_from_env


@pytest.fixture(params=["sqlite", "postgresql"])
def keys_env(
    request: pytest.FixtureRequest,
    cli: typer.Typer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Path]:
    """A configured store (SQLite file or a PostgreSQL schema) and a key file; the key
    file's path."""
    url = f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    if request.param == "postgresql":
        url = request.getfixturevalue("pg_url")
    key_file = tmp_path / "keys" / "master.key"
    Keyring.generate().write_file(key_file)
    monkeypatch.setenv("DEIDSTREAM_KEYSTORE_URL", url)
    monkeypatch.setenv("DEIDSTREAM_MASTER_KEY_FILE", str(key_file))
    yield key_file


def _run(app: typer.Typer, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


class Service(threading.Thread):
    """A running instance: a new patient every few milliseconds (each one sealed), beating
    every 0.2 s — what the stream does, in a thread."""

    def __init__(self, store: EncryptedStore) -> None:
        super().__init__(daemon=True)
        self.store = store
        self.stop = threading.Event()
        self.written: list[str] = []
        self.sealed_with: set[str] = set()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.wait(0.02):
                pid = f"live-{len(self.written)}"
                self.store.get_or_create("HOSP", pid, lambda: self.store.new_state(4))
                self.store.heartbeat()
                self.written.append(pid)
                self.sealed_with.add(self.store.admin.keyring.primary.key_id)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def __enter__(self) -> Service:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.join(timeout=30)
        self.store.close()


def test_retire_old_completes_while_an_instance_runs(cli: typer.Typer, keys_env: Path) -> None:
    first = Keyring.from_file(keys_env).primary.key_id
    with Service(default_store_from_env(heartbeat_s=0.2)) as service:
        code, out = _run(cli, "keys", "rotate", "--retire-old", "--wait", "30")
        assert code == 0, out
        assert service.error is None
        final = Keyring.from_file(keys_env)
        assert len(final) == 1 and final.primary.key_id != first
        done = len(service.written)
        while len(service.written) < done + 5 and service.is_alive():
            service.stop.wait(0.05)  # it goes on sealing, now with the new key
        assert service.error is None and service.store.admin.keyring.primary == final.primary
        assert first in service.sealed_with and final.primary.key_id in service.sealed_with
        # again, with the service still running: one key before, one key after
        code, out = _run(cli, "keys", "rotate", "--retire-old", "--wait", "30")
        assert code == 0, out
        assert len(Keyring.from_file(keys_env)) == 1
        assert service.error is None
    # everything the service wrote throughout opens with the one key left
    with default_store_from_env() as store:
        assert store.admin.keyring.key_ids == Keyring.from_file(keys_env).key_ids
        assert all(store.get("HOSP", pid) is not None for pid in service.written)
        assert store.stats()["retired_keys"] and len(store.stats()["active_keys"]) == 1  # type: ignore[arg-type]


def test_forget_now_completes_while_an_instance_runs(cli: typer.Typer, keys_env: Path) -> None:
    with default_store_from_env() as store:
        store.get_or_create("HOSP", "victim-1", lambda: store.new_state(9))
    with Service(default_store_from_env(heartbeat_s=0.2)) as service:
        code, out = _run(
            cli,
            "keys",
            "forget",
            "victim-1",
            "--authority",
            "HOSP",
            "--now",
            "--wait",
            "30",
            "--reason",
            "test",
        )
        assert code == 0 and "final:" in out, out
        assert len(Keyring.from_file(keys_env)) == 1 and service.error is None
    with default_store_from_env() as store:
        assert store.get("HOSP", "victim-1") is None
        assert store.admin.forgets_not_final() == 0


def test_a_refused_step_never_grows_the_key_file(cli: typer.Typer, keys_env: Path) -> None:
    """An instance that cannot pick the key up (keys given directly, as from the environment)
    keeps beating: refused after --wait, two keys in the file; again: still two; once it is
    gone the step completes with one."""
    stuck = open_store(
        os.environ["DEIDSTREAM_KEYSTORE_URL"],
        Keyring.from_file(keys_env),
        heartbeat_s=0.2,
    )
    with Service(stuck) as service:
        for _ in range(2):
            code, out = _run(cli, "keys", "rotate", "--retire-old", "--wait", "1")
            assert code == 1 and "live instances" in out, out
            assert len(Keyring.from_file(keys_env)) == 2
        code, out = _run(cli, "keys", "rotate")  # plain rotate adds none either
        assert code == 0 and "pending" in out, out
        assert len(Keyring.from_file(keys_env)) == 2
        code, out = _run(cli, "keys", "rotate", "--generate")
        assert code == 2 and "pending" in out
        assert service.error is None
    code, out = _run(cli, "keys", "rotate", "--retire-old", "--wait", "5")
    assert code == 0, out
    assert len(Keyring.from_file(keys_env)) == 1
    with default_store_from_env() as store:
        assert all(store.get("HOSP", pid) is not None for pid in service.written)


def test_replaced_key_files_keep_no_key(cli: typer.Typer, keys_env: Path) -> None:
    """Every key file the step replaced is zeroed: a hard link taken before each step (as a
    reader holding the old inode would) reads no key afterwards."""
    links = []
    for step in (("rotate",), ("rotate", "--retire-old", "--wait", "5")):
        link = keys_env.with_name(f"seen-{len(links)}")
        link.hardlink_to(keys_env)
        links.append((link, Keyring.from_file(keys_env)))
        code, out = _run(cli, "keys", *step)
        assert code == 0, out
    for link, ring in links:
        content = link.read_bytes()
        assert content.strip(b"\0") == b"", (link.name, len(content))
        for key in ring.key_ids:
            assert key.encode() not in content
