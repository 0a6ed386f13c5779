"""`deidstream evaluate --patients even|odd`: tune on one half of the patients, report the other."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from service.commands import evaluate

MINI = Path(__file__).resolve().parent / "fixtures" / "physionet_mini"


def _report(half: str) -> dict[str, object]:
    app = typer.Typer(pretty_exceptions_enable=False)
    evaluate.register(app)  # one command: typer makes it the root (no command name in args)
    args = [str(MINI), "--json", "--bootstrap", "0", "--patients", half]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.output)
    return data


def test_halves_split_the_patients_by_number() -> None:
    everyone, even, odd = _report("all"), _report("even"), _report("odd")
    assert even["patients"] == 2 and odd["patients"] == 1  # patients 2, 4 | 1
    assert everyone["patients"] == 3
    assert even["notes"] + odd["notes"] == everyone["notes"]  # type: ignore[operator]


def test_a_half_keys_non_numeric_patients_stably() -> None:
    assert evaluate._in_half("17", evaluate.PatientHalf.ODD)
    assert evaluate._in_half("17", evaluate.PatientHalf.ALL)
    assert not evaluate._in_half("17", evaluate.PatientHalf.EVEN)
    one = evaluate._in_half("abc", evaluate.PatientHalf.EVEN)
    assert one is evaluate._in_half("abc", evaluate.PatientHalf.EVEN)
    assert one is not evaluate._in_half("abc", evaluate.PatientHalf.ODD)
