"""`deidstream detect --explain` names the pass behind each span; `--passes` lists them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pipelines.phi.explain import explained
from pipelines.spans import Category, Span
from service.commands import detect, evaluate

runner = CliRunner()
# An invented note: a numeric date, a month-name date, a year after an event, a phone, an MRN.
NOTE = (
    "Seen on 3/14 for follow-up. CABG in 1998. Next visit March 3, 2019.\n"
    "Call 301-555-0187 with results. MRN: 4402913\n"
)


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False)
    detect.register(app)
    evaluate.register(app)  # two commands: typer then takes the command name
    return app


@pytest.fixture
def note(tmp_path: Path) -> Path:
    path = tmp_path / "note.txt"
    path.write_text(NOTE)
    return path


def _by_text(rows: list[tuple[int, int, str]]) -> dict[str, str]:
    return {NOTE[start:end]: source for start, end, source in rows}


def test_explain_adds_the_pass_to_each_span(app: typer.Typer, note: Path) -> None:
    result = runner.invoke(app, ["detect", str(note), "--explain"])
    assert result.exit_code == 0, result.stderr
    header, *lines = result.stdout.splitlines()
    assert header.startswith("Patient ")
    rows = [line.split("\t") for line in lines]
    assert all(len(row) == 5 for row in rows)
    passes = _by_text([(int(r[1]), int(r[2]), r[4]) for r in rows])
    assert passes["3/14"] == "dates.numeric"
    assert passes["1998"] == "years.four"
    assert passes["March 3, 2019"] == "dates.named_month"
    assert passes["301-555-0187"] == "phone.cued"  # "Call" is a phone cue
    assert passes["4402913"] == "identifiers.cued"


def test_without_explain_the_output_is_unchanged(app: typer.Typer, note: Path) -> None:
    plain = runner.invoke(app, ["detect", str(note)]).stdout.splitlines()
    explained_lines = runner.invoke(app, ["detect", str(note), "--explain"]).stdout.splitlines()
    assert [ln.rsplit("\t", 1)[0] for ln in explained_lines[1:]] == plain[1:]
    assert all(len(ln.split("\t")) == 4 for ln in plain[1:])


def test_explain_json_and_text(app: typer.Typer, note: Path) -> None:
    out = runner.invoke(app, ["detect", str(note), "--explain", "--format", "json"]).stdout
    spans = json.loads(out)["spans"]
    sources = _by_text([(s["start"], s["end"], s["source"]) for s in spans])
    assert sources["3/14"] == "dates.numeric"
    text = runner.invoke(app, ["detect", str(note), "--explain", "--format", "text"]).stdout
    assert "Seen on [DATE:dates.numeric] for follow-up." in text


def test_passes_lists_the_declared_passes(app: typer.Typer) -> None:
    result = runner.invoke(app, ["detect", "--passes"])
    assert result.exit_code == 0, result.stderr
    names = [line.split("\t")[0] for line in result.stdout.splitlines()]
    for name in ("dates.numeric", "dates.named_month", "years.four", "phone.shaped"):
        assert name in names
    assert "identifiers.cued" in names
    assert all("\t" in line for line in result.stdout.splitlines())


def test_detect_needs_a_file_without_passes(app: typer.Typer) -> None:
    result = runner.invoke(app, ["detect"])
    assert result.exit_code == 2


def test_merged_spans_name_every_pass_behind_them() -> None:
    rule = Span(5, 9, Category.NAME_PROVIDER, 0.9, "names.cue")
    tagger = Span(5, 14, Category.NAME_PROVIDER, 0.9, "tagger")
    date = Span(20, 24, Category.DATE, 0.9, "dates.numeric")
    merged = [Span(5, 14, Category.NAME_PROVIDER, 0.9, "tagger"), date]
    out = explained(merged, [tagger, rule, date])
    assert [s.source for s in out] == ["names.cue+tagger", "dates.numeric"]
    assert [(s.start, s.end, s.category) for s in out] == [
        (s.start, s.end, s.category) for s in merged
    ]
