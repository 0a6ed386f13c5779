"""`deidstream detect` and `deidstream evaluate` end to end (output format, bad input)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pipelines.phi import registry
from service.commands import detect, evaluate
from tests.support.slash_numbers import SlashNumbers

MINI = Path(__file__).resolve().parent / "fixtures" / "physionet_mini"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False)
    detect.register(app)
    evaluate.register(app)
    return app


runner = CliRunner()

PHI_HEADER = re.compile(r"^Patient \S+\tNote \S+$")
PHI_SPAN = re.compile(r"^\d+\t\d+\t\d+\t[A-Z_]+$")


def test_detect_physionet_format(app: typer.Typer) -> None:
    result = runner.invoke(
        app, ["detect", str(MINI / "id.text"), "--known-names", str(MINI / "pid_patientname.txt")]
    )
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    headers = [ln for ln in lines if PHI_HEADER.match(ln)]
    assert headers[0] == "Patient 1\tNote 1" and len(headers) == 6
    assert all(PHI_HEADER.match(ln) or PHI_SPAN.match(ln) for ln in lines)


def test_detect_json_format(app: typer.Typer) -> None:
    result = runner.invoke(app, ["detect", str(MINI / "id.text"), "--format", "json"])
    assert result.exit_code == 0
    rows = [json.loads(ln) for ln in result.stdout.splitlines()]
    assert [(r["patient"], r["note"]) for r in rows][:2] == [("1", "1"), ("1", "2")]
    assert all(isinstance(r["spans"], list) for r in rows)


def test_detect_text_input_and_text_output(app: typer.Typer, tmp_path: Path) -> None:
    note = tmp_path / "note.txt"
    note.write_text("Seen on 3/14 for follow-up.\n")
    result = runner.invoke(app, ["detect", str(note), "--format", "text"])
    assert result.exit_code == 0
    assert result.stdout.startswith("Patient -\tNote note\n")


BROKEN = (
    b"START_OF_RECORD=1||||1||||\nfine note\n||||END_OF_RECORD\n\n"
    b"START_OF_RECORD=1||||2||||\nSECRETWORD \xff\xfe\n||||END_OF_RECORD\n\n"
    b"START_OF_RECORD=1||||3||||\n||||END_OF_RECORD\n\n"
    b"START_OF_RECORD=bad header\nSECRETWORD\n||||END_OF_RECORD\n\n"
    b"START_OF_RECORD=2||||1||||\n\x00\x01\x02 binary\n||||END_OF_RECORD\n\n"
    b"START_OF_RECORD=2||||2||||\n" + b"x" * (5 * 1024 * 1024) + b"\n||||END_OF_RECORD\n\n"
    b"START_OF_RECORD=2||||3||||\nno end marker SECRETWORD\n"
)


def test_detect_bad_input_reports_records_and_goes_on(app: typer.Typer, tmp_path: Path) -> None:
    corpus = tmp_path / "id.text"
    corpus.write_bytes(BROKEN)
    result = runner.invoke(app, ["detect", str(corpus)])
    assert result.exit_code == 1
    headers = [ln for ln in result.stdout.splitlines() if ln.startswith("Patient ")]
    assert headers == [
        "Patient 1\tNote 1",
        "Patient 1\tNote 3",
        "Patient 2\tNote 1",
        "Patient 2\tNote 2",
    ]
    err = result.stderr
    assert "record 2 at line 5" in err and "UTF-8" in err
    assert "record 4 at line 12" in err and "header" in err
    assert "record 7" in err and "END_OF_RECORD" in err
    assert "SECRETWORD" not in err and "SECRETWORD" not in result.stdout
    assert "3 record(s) could not be processed" in err


def test_detect_invalid_utf8_plain_text(app: typer.Typer, tmp_path: Path) -> None:
    note = tmp_path / "bin.txt"
    note.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xff")
    result = runner.invoke(app, ["detect", str(note), "--input", "text"])
    assert result.exit_code == 1 and "record 1" in result.stderr


def test_evaluate_on_fixture(app: typer.Typer) -> None:
    result = runner.invoke(
        app, ["evaluate", "--corpus", "physionet", str(MINI), "--known-names", "--bootstrap", "50"]
    )
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    for label in (
        "token sensitivity (recall)",
        "token precision",
        "token f2",
        "phrase recall (all tokens)",
    ):
        assert label in out
    assert ">= 0.985" in out and "known names: yes" in out
    assert "notes 6  patients 3" in out and "gold phrases 11" in out


def test_evaluate_json_and_names_file(app: typer.Typer, tmp_path: Path) -> None:
    names = tmp_path / "names.txt"
    names.write_text("1||||X||||Y\n")
    result = runner.invoke(
        app, ["evaluate", str(MINI), "--names-file", str(names), "--json", "--bootstrap", "20"]
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["known_names"] is True and data["notes"] == 6
    assert data["counts"]["gold_phrases"] == 11 and data["records_failed"] == 0
    assert set(data["ci95"]) == set(data["metrics"])


def test_evaluate_show_errors_lists_missed_phrases(app: typer.Typer) -> None:
    result = runner.invoke(app, ["evaluate", str(MINI), "--show-errors", "3", "--bootstrap", "0"])
    assert result.exit_code == 0
    assert "missed gold phrases (first 3 of" in result.stdout


def test_evaluate_broken_corpus_exits_nonzero(app: typer.Typer, tmp_path: Path) -> None:
    shutil.copy(MINI / "id-phi.phrase", tmp_path / "id-phi.phrase")
    (tmp_path / "id.text").write_bytes(
        (MINI / "id.text").read_bytes() + b"START_OF_RECORD=9||||9||||\ntrunc"
    )
    result = runner.invoke(app, ["evaluate", str(tmp_path), "--bootstrap", "0"])
    assert result.exit_code == 1
    assert "record 7" in result.stderr and "token sensitivity" in result.stdout


def test_evaluate_missing_files(app: typer.Typer, tmp_path: Path) -> None:
    result = runner.invoke(app, ["evaluate", str(tmp_path)])
    assert result.exit_code == 2


@pytest.mark.corpus
def test_evaluate_dev_split_output_format(physionet_dev: Path) -> None:
    """The exact command the hook runs, via the installed entry point."""
    exe = Path(sys.executable).with_name("deidstream")
    cmd = [str(exe), "evaluate", "--corpus", "physionet", str(physionet_dev), "--known-names"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for key in ("sensitivity", "precision", "f2", "recall"):
        assert any(key in ln for ln in lines), key
    row = re.compile(
        r"^token sensitivity \(recall\)\s+(\d\.\d{4}|n/a)\s+(\[\d\.\d{4}, \d\.\d{4}\]|n/a)"
    )
    assert any(row.match(ln) for ln in lines)
    assert "notes 1624  patients 109" in proc.stdout
    for category in ("HCPName", "Date", "Location", "RelativeProxyName", "PTName", "Phone"):
        assert any(ln.strip().startswith(category) for ln in lines), category


def _gold_as_phi(path: Path, drop: int = 0) -> None:
    """Write the fixture's gold phrases as a .phi span file, dropping the first ``drop``."""
    from pipelines.corpus import load_gold

    lines = []
    for (patient, note), phrases in load_gold(MINI / "id-phi.phrase").items():
        lines.append(f"Patient {patient}\tNote {note}")
        lines += [
            f"{i}\t{p.start}\t{p.end}"
            for i, p in enumerate(phrases)
            if (patient, note, i) >= ("1", "1", drop)
        ]
    path.write_text("\n".join(lines) + "\n")


def test_evaluate_scores_a_span_file(app: typer.Typer, tmp_path: Path) -> None:
    phi = tmp_path / "gold.phi"
    _gold_as_phi(phi)
    result = runner.invoke(
        app, ["evaluate", str(MINI), "--predictions", str(phi), "--json", "--bootstrap", "20"]
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["metrics"]["sensitivity"] == 1.0 and data["metrics"]["precision"] == 1.0
    assert data["metrics"]["phrase_recall"] == 1.0


def test_evaluate_error_category_filter(app: typer.Typer, tmp_path: Path) -> None:
    phi = tmp_path / "partial.phi"
    _gold_as_phi(phi, drop=1)  # "Ada" (PTName) is missed
    args = [
        "evaluate",
        str(MINI),
        "--predictions",
        str(phi),
        "--show-errors",
        "5",
        "--bootstrap",
        "0",
    ]
    shown = runner.invoke(app, [*args, "--error-category", "ptname"])
    assert "missed gold phrases (first 5 of 1)" in shown.stdout and "[[Ada]]" in shown.stdout
    hidden = runner.invoke(app, [*args, "--error-category", "Date"])
    assert "missed gold phrases (first 5 of 0)" in hidden.stdout


@pytest.fixture
def slash_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setitem(registry._REGISTRY, SlashNumbers.name, SlashNumbers)
    policy = tmp_path / "policy.toml"
    policy.write_text(f"[recognizers.{SlashNumbers.name}]\n")
    return policy


def test_detect_writes_span_offsets(app: typer.Typer, slash_policy: Path) -> None:
    result = runner.invoke(app, ["detect", str(MINI / "id.text"), "--policy", str(slash_policy)])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    # note 1 1: "3/14" at 41 and "120/80" in the second line; note 2 2 "3/10"
    assert out.startswith(
        "Patient 1\tNote 1\n1\t41\t45\tDATE\n2\t92\t98\tDATE\nPatient 1\tNote 2\n"
    )
    assert "Patient 2\tNote 1\n1\t32\t36\tDATE\n" in out


def test_detect_text_output_redacts(app: typer.Typer, slash_policy: Path, tmp_path: Path) -> None:
    note = tmp_path / "n.txt"
    note.write_text("seen 3/14, BP 120/80")
    result = runner.invoke(
        app, ["detect", str(note), "--format", "text", "--policy", str(slash_policy)]
    )
    assert result.stdout == "Patient -\tNote n\nseen [DATE], BP [DATE]\n"


def test_detector_failure_is_reported_per_record(
    app: typer.Typer, slash_policy: Path, tmp_path: Path
) -> None:
    corpus = tmp_path / "id.text"
    corpus.write_bytes(
        b"START_OF_RECORD=1||||1||||\nEXPLODE 1/2\n||||END_OF_RECORD\n\n"
        b"START_OF_RECORD=1||||2||||\nok 1/2\n||||END_OF_RECORD\n"
    )
    result = runner.invoke(
        app, ["detect", str(corpus), "--format", "json", "--policy", str(slash_policy)]
    )
    assert result.exit_code == 1
    assert "record 1 at line 1 (patient 1 note 1): detector failed (RuntimeError)" in result.stderr
    assert "EXPLODE" not in result.stderr
    rows = [json.loads(ln) for ln in result.stdout.splitlines()]
    assert rows == [
        {
            "patient": "1",
            "note": "2",
            "spans": [
                {
                    "start": 3,
                    "end": 6,
                    "category": "DATE",
                    "confidence": 1.0,
                    "source": SlashNumbers.name,
                }
            ],
        }
    ]


def test_evaluate_with_a_recognizer(app: typer.Typer, slash_policy: Path) -> None:
    result = runner.invoke(
        app, ["evaluate", str(MINI), "--policy", str(slash_policy), "--json", "--bootstrap", "0"]
    )
    data = json.loads(result.stdout)
    # gold tokens 14 (3/14 is two); predicted 3,14 (gold) + 120,80,3,10 (not gold)
    assert data["counts"]["tp"] == 2 and data["counts"]["fp"] == 4
    assert data["per_category"]["Date"]["phrase_recall"] == 1.0
    assert data["false_positive_tokens_by_category"] == {"DATE": 4}
