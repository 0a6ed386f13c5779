"""`detect` / `deidentify` on HL7 v2, MLLP and FHIR input, and on empty input (issue 15 item 1).

Read as plain text, a message's PID segment (name, town, phone) went to the output and the
command said "1 note(s) de-identified". Every name and number here is invented."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from service.commands import deidentify, detect

HL7 = (
    "MSH|^~\\&|LAB|NORTHCLINIC|DEID|RESEARCH|20240305101500||ORU^R01^ORU_R01|M-77|P|2.5\r"
    "PID|1||MRN55012^^^NORTHCLINIC^MR||Quarrington^Ysolde||19580211|F|||"
    "8 Thistle Row^^Wexcombe^VT^05011||(802)555-0177\r"
    "OBR|1||ACC-9|CXR^Chest X-ray^L|||20240305090000\r"
    "OBX|1|TX|REPORT^Report^L|1|Ms. Quarrington returns from Wexcombe. "
    "Call (802)555-0177 with results.||||||F\r"
)


def _fhir() -> dict[str, object]:
    note = "Mrs. Quarrington reports less cough. Lives in Wexcombe."
    return {
        "resourceType": "DocumentReference",
        "status": "current",
        "subject": {
            "identifier": {"system": "urn:mrn:northclinic", "value": "MRN55012"},
            "display": "Ysolde Quarrington",
        },
        "type": {"coding": [{"system": "http://loinc.org", "code": "11506-3"}]},
        "date": "2024-03-05T09:00:00Z",
        "content": [
            {
                "attachment": {
                    "contentType": "text/plain",
                    "data": base64.b64encode(note.encode()).decode(),
                }
            }
        ],
    }


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False)

    @app.callback()
    def main() -> None:
        """Test root."""

    detect.register(app)
    deidentify.register(app)
    return app


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


INPUTS = {
    "report.hl7": HL7.encode(),
    "report.mllp": b"\x0b" + HL7.encode() + b"\x1c\r",
    "report.json": json.dumps(_fhir(), indent=2).encode(),
    "reports.ndjson": (json.dumps(_fhir()) + "\n" + json.dumps(_fhir()) + "\n").encode(),
}


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_detect_parses_clinical_messages_through_ingest(
    app: typer.Typer, tmp_path: Path, name: str
) -> None:
    path = _write(tmp_path, name, INPUTS[name])
    result = CliRunner().invoke(app, ["detect", str(path), "--format", "text"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    # the narrative only: no segment or JSON structure, and the message's own name is known
    assert "PID|" not in out and "MSH|" not in out and "resourceType" not in out
    assert "Quarrington" not in out and "Wexcombe" not in out
    assert "parsed as the service does" in result.stderr


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_deidentify_refuses_naming_convert(
    app: typer.Typer, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path, name, INPUTS[name])
    result = CliRunner().invoke(app, ["deidentify", str(path), "--no-store"])
    assert result.exit_code == 2
    assert f"use `deidstream convert {path}`" in result.stderr
    assert result.stderr.count("\n") == 1  # one line
    assert result.stdout == "" and "de-identified" not in result.output


@pytest.mark.parametrize("command", ["detect", "deidentify"])
@pytest.mark.parametrize("content", [b"", b"\n  \n"])
def test_empty_input_is_an_error(
    app: typer.Typer, tmp_path: Path, command: str, content: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path, "empty.txt", content)
    extra = ["--no-store"] if command == "deidentify" else []
    result = CliRunner().invoke(app, [command, str(path), *extra])
    assert result.exit_code == 1
    assert "is empty" in result.stderr
    assert "de-identified" not in result.output


def test_plain_text_note_still_works(
    app: typer.Typer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path, "note.txt", b"Seen on 3/14 for follow-up.\n")
    result = CliRunner().invoke(app, ["deidentify", str(path), "--no-store"])
    assert result.exit_code == 0, result.output
    assert "1 note(s) de-identified" in result.stderr
