"""Finalising a forget needs no downtime (issue 23 item 1), against a real broker: with the
service running on a key file, `keys forget --now` re-keys the store, waits for the runner to
seal with the new key (it re-reads the changed file at its heartbeat), and retires the old
one; the stream goes on publishing throughout, and everything opens with the one key left."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import typer
from hl7_gen import report
from kafka_helpers import produce, read_all
from test_stream_pipeline import pipeline_settings
from typer.testing import CliRunner

from keystore import open_store
from keystore.keyring import Keyring
from service.broker import EmbeddedBroker
from service.commands.keys import register
from service.metrics import Metrics
from service.runner import Runner
from service.wiring import real_processor_factory

pytestmark = pytest.mark.integration


def _keys_cli() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """Test root."""

    register(app)
    return app


async def _published(runner: Runner, n: int) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + 90
    while runner.counts["published"] + runner.counts["held"] < n:
        assert loop.time() < end, f"not all published: {dict(runner.counts)}"
        await asyncio.sleep(0.1)


async def test_forget_now_while_the_stream_runs(
    tansu: EmbeddedBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key_file = tmp_path / "keys" / "master.key"
    Keyring.generate().write_file(key_file)
    first = Keyring.from_file(key_file).primary.key_id
    settings = pipeline_settings(tansu, tmp_path, master_key=None)
    monkeypatch.delenv("DEIDSTREAM_MASTER_KEY", raising=False)
    monkeypatch.setenv("DEIDSTREAM_MASTER_KEY_FILE", str(key_file))
    monkeypatch.setenv("DEIDSTREAM_KEYSTORE_URL", str(settings.keystore_url))
    before = [(f"{810000 + n}".encode(), report(n, 1)) for n in range(4)]
    after = [(f"{820000 + n}".encode(), report(100 + n, 1)) for n in range(4)]
    await produce(settings.bootstrap_servers, settings.input_topics[0], before)

    metrics = Metrics()
    runner = Runner(settings, metrics, real_processor_factory(settings, metrics))
    runner.start_background()
    try:
        await _published(runner, len(before))
        with open_store(str(settings.keystore_url), Keyring.from_file(key_file)) as peek:
            victim = next(peek.admin._identities())[0]  # noqa: SLF001 - any patient
        cli = asyncio.to_thread(
            CliRunner().invoke,
            _keys_cli(),
            [
                *("keys", "forget", victim.patient_id, "--authority", victim.authority),
                *("--now", "--wait", "60", "--reason", "request"),
            ],
        )
        done, _ = await asyncio.gather(
            cli, produce(settings.bootstrap_servers, settings.input_topics[0], after)
        )
        assert done.exit_code == 0 and "final:" in done.output, done.output
        await _published(runner, len(before) + len(after))
        assert runner.ready and runner.keystore_fault is None
    finally:
        await runner.stop()
    final = Keyring.from_file(key_file)
    assert len(final) == 1 and final.primary.key_id != first
    with open_store(str(settings.keystore_url), final) as store:
        assert store.get(victim.authority, victim.patient_id) is None
        assert store.admin.forgets_not_final() == 0
        stats = store.stats()
        assert first in stats["retired_keys"]  # type: ignore[operator]
        by_key = stats["records_by_key"]
        assert isinstance(by_key, dict) and set(by_key) == {final.primary.key_id}
    dead = await read_all(settings.bootstrap_servers, settings.deadletter_topic, within=2)
    assert dead == []
