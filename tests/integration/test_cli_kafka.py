"""``deidstream replay`` and ``deidstream tail`` against a real broker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka_helpers import read_all, unique
from typer.testing import CliRunner

from service.broker import EmbeddedBroker
from service.cli import _register_commands, app
from service.commands.demo import demo_files

pytestmark = pytest.mark.integration


def test_replay_then_tail(tansu: EmbeddedBroker, tmp_path: Path) -> None:
    _register_commands()
    cli = CliRunner()
    topic = unique("replay")
    files = [str(p) for p in demo_files() if p.suffix == ".hl7"]
    result = cli.invoke(
        app,
        ["replay", *files, "--topic", topic, "--bootstrap-servers", tansu.bootstrap_servers],
        env={"DEIDSTREAM_INPUT_TOPICS": topic},  # an input topic: no --force needed
    )
    assert result.exit_code == 0, result.output
    assert f"published {len(files)} messages to {topic} ({len(files) - 1} keyed" in result.output

    import asyncio

    records = asyncio.run(read_all(tansu.bootstrap_servers, topic, expect=len(files)))
    by_key: dict[bytes | None, int] = {}
    for r in records:
        by_key[r.key] = by_key.get(r.key, 0) + 1
    assert by_key == {b"100234": 3, b"200871": 1, b"400918": 2, None: 1}
    # one patient's messages share a partition, in order
    vance = [r for r in records if r.key == b"100234"]
    assert len({r.partition for r in vance}) == 1
    assert [r.offset for r in vance] == sorted(r.offset for r in vance)

    result = cli.invoke(
        app,
        [
            "tail",
            topic,
            "--max",
            "3",
            "--timeout",
            "5",
            "--bootstrap-servers",
            tansu.bootstrap_servers,
        ],
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert len(lines) == 3
    assert all({"key", "headers", "value"} <= set(line) for line in lines)
    assert all(isinstance(line["value"], str) for line in lines)

    # issue 28 item 3: a topic the broker does not have is said so, exit 1 (it printed
    # nothing and exited 0); the closest existing name is offered
    missing = f"{topic}x"
    absent = cli.invoke(
        app,
        ["tail", missing, "--timeout", "1", "--bootstrap-servers", tansu.bootstrap_servers],
    )
    assert absent.exit_code == 1 and absent.stdout == ""
    assert absent.stderr.strip() == (
        f"deidstream tail: topic '{missing}' does not exist on {tansu.bootstrap_servers} "
        f"(did you mean '{topic}'?)"
    )
