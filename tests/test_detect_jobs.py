"""``deidstream detect --jobs``: N worker processes write what one process writes, byte for
byte, errors included; a small input stays in one process; a failing worker loses no note."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pipelines.corpus import Note, RecordError
from pipelines.phi import registry
from service.commands import detect, detect_pool
from service.commands.detect_pool import (
    Item,
    Result,
    Run,
    choose_jobs,
    failed,
    ordered_results,
)
from tests.support.slash_numbers import SlashNumbers

runner = CliRunner()

_TEMPLATES = (
    "Seen by Dr. Quillon Barrowby on {d}/14/2091 for follow-up. Call 555-01{d:02d}.",
    "Pt. Oriel Vantwick, {d} y.o., admitted from Larkmoor Infirmary. BP 120/{d}.",
    "No change. Plan: recheck lytes in {d} days; wife Perpetua at bedside.",
    "MRN 88{d:04d}1. Discharged home to 12 Fennick Lane, Dunmore, on 4/{d}/2090.",
)


def _corpus(notes: int) -> bytes:
    """An invented PhysioNet-style file: ``notes`` notes, then three unreadable records and a
    note whose text makes the test recognizer fail."""
    records = [
        f"START_OF_RECORD={1 + i // 5}||||{1 + i % 5}||||\n"
        f"{_TEMPLATES[i % len(_TEMPLATES)].format(d=1 + i % 27)}\n||||END_OF_RECORD\n\n".encode()
        for i in range(notes)
    ]
    records.insert(7, b"START_OF_RECORD=90||||1||||\nSECRETWORD \xff\xfe\n||||END_OF_RECORD\n\n")
    records.insert(11, b"START_OF_RECORD=bad header\nSECRETWORD\n||||END_OF_RECORD\n\n")
    records.insert(20, b"START_OF_RECORD=91||||1||||\nEXPLODE 3/4\n||||END_OF_RECORD\n\n")
    return b"".join(records) + b"START_OF_RECORD=92||||1||||\nno end marker SECRETWORD\n"


@pytest.fixture(autouse=True)
def collector_as_it_was() -> Iterator[None]:
    """``ordered_results`` settles the collector (freeze, thresholds) for the process that
    runs it; the test process gets its own back."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
    gc.enable()


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False)
    detect.register(app)

    @app.command()
    def other() -> None:  # two commands: ``detect`` stays a subcommand
        """Nothing."""

    return app


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of three notes, one ahead per worker: many tasks even for a small corpus."""
    monkeypatch.setattr(detect_pool, "CHUNK", 3)
    monkeypatch.setattr(detect_pool, "AHEAD", 1)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "id.text"
    path.write_bytes(_corpus(40))
    return path


def _run(app: typer.Typer, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["detect", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("fmt", ["physionet", "json", "text"])
@pytest.mark.parametrize("explain", [False, True])
def test_two_jobs_write_what_one_writes(
    app: typer.Typer, corpus: Path, fmt: str, explain: bool
) -> None:
    args = [str(corpus), "--format", fmt, *(["--explain"] if explain else [])]
    one = _run(app, *args, "--jobs", "1")
    two = _run(app, *args, "--jobs", "2")
    assert two == one
    code, out, err = one
    notes = out.count('"patient"') if fmt == "json" else out.count("Patient ")
    assert code == 1 and notes == 41  # 40 invented notes and the EXPLODE one
    assert "3 record(s) could not be processed" in err
    assert "SECRETWORD" not in err + out


@pytest.mark.usefixtures("small_chunks")
def test_a_recognizer_failing_in_a_worker_is_a_per_record_error(
    app: typer.Typer, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(registry._REGISTRY, SlashNumbers.name, SlashNumbers)
    policy = tmp_path / "policy.toml"
    policy.write_text(f"[recognizers.{SlashNumbers.name}]\n")
    args = [str(corpus), "--format", "json", "--policy", str(policy)]
    one = _run(app, *args, "--jobs", "1")
    two = _run(app, *args, "--jobs", "2")
    assert two == one
    assert "(patient 91 note 1): detector failed (RuntimeError)" in two[2]
    assert "4 record(s) could not be processed" in two[2]
    assert "EXPLODE" not in two[2] and "boom" not in two[2]


def test_two_jobs_on_the_dev_corpus(
    app: typer.Typer, physionet_dev: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(detect_pool, "CHUNK", 8)
    head = (physionet_dev / "id.text").read_bytes().split(b"||||END_OF_RECORD\n")[:120]
    sample = tmp_path / "id.text"
    sample.write_bytes(b"||||END_OF_RECORD\n".join(head) + b"||||END_OF_RECORD\n")
    for extra in ([], ["--explain"]):
        one = _run(app, str(sample), *extra, "--jobs", "1")
        assert one[0] == 0 and one[1].count("Patient ") == 120
        assert _run(app, str(sample), *extra, "--jobs", "2") == one


def test_automatic_jobs_one_process_for_a_small_input() -> None:
    small = detect_pool.SMALL_INPUT
    assert choose_jobs(0, 1, cpus=2) == 1
    assert choose_jobs(0, small - 1, cpus=2) == 1
    assert choose_jobs(0, small, cpus=2) == 2
    assert choose_jobs(0, small, cpus=1) == 1
    assert choose_jobs(3, 1, cpus=2) == 3  # asked for: as asked


def test_the_collector_is_given_back_to_a_test_runner(app: typer.Typer, corpus: Path) -> None:
    threshold = gc.get_threshold()
    assert _run(app, str(corpus))[0] == 1
    assert gc.isenabled() and gc.get_threshold() == threshold and gc.get_freeze_count() == 0


def test_a_small_input_starts_no_pool(
    app: typer.Typer, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_pool(*args: object) -> None:
        raise AssertionError("a pool was started")

    monkeypatch.setattr(detect_pool, "_pooled", no_pool)
    code, out, _ = _run(app, str(corpus))
    assert code == 1 and out.count("Patient ") == 41


def _notes(count: int) -> list[Item]:
    return [Note("1", str(i), f"text {i}", i, 3 * i) for i in range(1, count + 1)]


def _echo_unless(bad: str, die: bool = False) -> Run:
    """A run function: each note's text, but a chunk holding note ``bad`` fails (or its
    worker process ends at once)."""

    def run(chunk: list[Item]) -> list[Result]:
        if any(isinstance(item, Note) and item.note == bad for item in chunk):
            if die and os.getpid() != parent:
                os._exit(3)
            raise ValueError("a message that must not be shown")
        return [f"{item.text}\n" if isinstance(item, Note) else failed(item, "?") for item in chunk]

    parent = os.getpid()
    return run


@pytest.mark.usefixtures("small_chunks")
def test_a_failing_chunk_reports_each_of_its_notes() -> None:
    results = list(ordered_results(_notes(20), _echo_unless("8"), jobs=2))
    assert len(results) == 20
    errors = [r for r in results if isinstance(r, RecordError)]
    assert [e.note for e in errors] == ["7", "8", "9"]  # the chunk of note 8
    assert {e.reason for e in errors} == {"detector failed (ValueError)"}
    assert [r for r in results if isinstance(r, str)][-1] == "text 20\n"


@pytest.mark.usefixtures("small_chunks")
def test_a_worker_that_dies_loses_no_note() -> None:
    results = list(ordered_results(_notes(30), _echo_unless("5", die=True), jobs=2))
    assert len(results) == 30
    keys = [r.note if isinstance(r, RecordError) else r.split()[1] for r in results]
    assert keys == [str(i) for i in range(1, 31)]  # every note once, in input order
    lost = {r.note for r in results if isinstance(r, RecordError)}
    assert {"4", "5", "6"} <= lost
    assert results[-1] == "text 30\n"  # the pool broke; the rest ran here
