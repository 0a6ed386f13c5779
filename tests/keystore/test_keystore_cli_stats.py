"""Issue 28 item 6: ``keys stats`` shows each instance's heartbeat as an age, and only live
instances (a heartbeat in the last minute) unless ``--all-instances``; the command's own
registration is not listed. SQLite and PostgreSQL."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
import typer
from typer.testing import CliRunner

from keystore import Keyring, open_store


@pytest.fixture(params=["sqlite", "postgresql"])
def store_env(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, Keyring]]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('stats') / 'ks.sqlite3'}"
    else:
        url = request.getfixturevalue("pg_url")
    keyring = Keyring.generate("officer-key")
    monkeypatch.setenv("DEIDSTREAM_KEYSTORE_URL", url)
    monkeypatch.setenv("DEIDSTREAM_MASTER_KEY", keyring.to_text())
    yield url, keyring


def _stats(cli: typer.Typer, *args: str) -> str:
    result = CliRunner().invoke(cli, ["keys", "stats", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_stats_shows_live_instances_with_their_age(
    cli: typer.Typer, store_env: tuple[str, Keyring]
) -> None:
    url, keyring = store_env
    # a worker that stopped two hours ago without deregistering, and one running now
    gone = open_store(url, keyring, instance_id="worker-gone", clock=lambda: time.time() - 7200)
    live = open_store(url, keyring, instance_id="worker-live")
    try:
        out = _stats(cli)
        assert re.search(
            r"instance: +worker-live seals with officer-key, heartbeat \d+ s ago$", out, re.M
        ), out
        assert "worker-gone" not in out
        assert "not live:          1 instances (--all-instances lists them)" in out
        assert not re.search(r"\d{9,}", out)  # no raw epoch seconds
        assert out.count("instance:") == 1  # the command's own registration is not shown
        every = _stats(cli, "--all-instances")
        assert re.search(
            r"worker-gone seals with officer-key, heartbeat 2 h ago \(not live\)", every
        )
        assert "worker-live" in every and "not live:   " not in every
    finally:
        gone.close()
        live.close()
    assert "instances:         none live" in _stats(cli)
