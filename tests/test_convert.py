"""``deidstream convert`` on our fixtures and on ../shared/data/samples (skipped if absent):
research JSON lines on stdout or files under --out, per-input errors on stderr, exit status."""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path

import orjson
import pytest
import typer
from fhir.resources.R4B.documentreference import DocumentReference
from typer.testing import CliRunner

from service.commands import convert as convert_command

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "versions"
KNOWN = ("MRN448812", "Fairweather", "Ottoline", "Keller", "VIS7788", "218-555-0147", "Lakeside")


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """Test root so ``convert`` stays a subcommand."""

    convert_command.register(app)
    return app


APP = _app()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    key = base64.b64encode(os.urandom(32)).decode()
    return {
        "DEIDSTREAM_KEYSTORE_URL": f"sqlite:///{tmp_path / 'keystore.sqlite3'}",
        "DEIDSTREAM_MASTER_KEY": f"test:{key}",
    }


def invoke(env: dict[str, str], *args: str | Path):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(APP, ["convert", *map(str, args)], env=env)


def fixtures(*prefixes: str) -> list[Path]:
    return [next(FIXTURES.glob(f"{p}_*.hl7")) for p in prefixes]


def test_fixtures_to_stdout_one_document_per_line(env: dict[str, str]) -> None:
    result = invoke(env, *fixtures("00", "01", "02", "03", "04", "05", "06"))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 4  # preliminary, final, corrected, next visit
    for line in lines:
        model = DocumentReference.model_validate_json(line)
        assert model.subject.reference.startswith("Patient/")
        for value in KNOWN:
            assert value not in line
            assert value.encode() not in (model.content[0].attachment.data or b"")  # decoded
    assert "duplicate" in result.stderr
    assert "tombstone" in result.stderr
    assert "context" in result.stderr
    # a second run against the same key store publishes nothing new
    again = invoke(env, *fixtures("01", "03"))
    assert again.exit_code == 0
    assert again.stdout == ""
    assert again.stderr.count(": duplicate") == 2
    assert (
        "total (2 inputs): 0 published, 2 duplicate, 0 superseded, 0 held, "
        "0 dead-lettered" in again.stderr
    )


def test_each_input_ends_with_its_summary(env: dict[str, str]) -> None:
    """Issue 15 item 6: published / duplicate / superseded / held / dead-lettered per input."""
    files = fixtures("01", "02", "03")
    result = invoke(env, *files, files[0])
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    summaries = [ln for ln in lines if ln.endswith(" dead-lettered")]
    assert len(summaries) == 5  # one per input, then the total
    assert summaries[-1].startswith("total (4 inputs): ")
    assert summaries[-2] == (
        f"{files[0]}: 0 published, 1 duplicate, 0 superseded, 0 held, 0 dead-lettered"
    )
    assert summaries[0].startswith(f"{files[0]}: 1 published, ")


def test_text_writes_decoded_text_beside_the_json(env: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "research"
    result = invoke(env, *fixtures("01"), "--out", out, "--text")
    assert result.exit_code == 0, result.stderr
    [doc] = out.glob("*.json")
    text = doc.with_suffix(".txt").read_text(encoding="utf-8")
    data = orjson.loads(doc.read_bytes())["content"][0]["attachment"]["data"]
    assert text == base64.b64decode(data).decode() and text.strip()
    assert invoke(env, *fixtures("01"), "--text").exit_code == 2  # needs --out


def test_out_dir_gets_one_file_per_document(env: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "research"
    result = invoke(env, *fixtures("01", "03"), "--out", out)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    files = sorted(out.glob("*.json"))
    assert len(files) == 2
    for path in files:
        resource = orjson.loads(path.read_bytes())
        assert path.stem == resource["id"]
        DocumentReference.model_validate(resource)


def test_bad_inputs_are_reported_per_file_and_the_rest_still_converts(
    env: dict[str, str], tmp_path: Path
) -> None:
    missing = tmp_path / "absent.hl7"
    result = invoke(env, *fixtures("07"), missing, *fixtures("03"))
    assert result.exit_code == 1
    assert len(result.stdout.splitlines()) == 1
    assert "Traceback" not in result.stderr
    assert re.search(r"07_not_hl7\.hl7: error \[not_hl7\] ", result.stderr)
    assert re.search(r"absent\.hl7: error \[unreadable\]", result.stderr)
    assert "2 of 3 inputs failed" in result.stderr


def test_missing_key_for_a_configured_store_is_a_clean_start_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the local default key file is ./.deidstream/master.key: run where there is none
    monkeypatch.chdir(tmp_path)
    env = {"DEIDSTREAM_KEYSTORE_URL": f"sqlite:///{tmp_path / 'k.sqlite3'}"}
    env.update({"DEIDSTREAM_MASTER_KEY": "", "DEIDSTREAM_MASTER_KEY_FILE": ""})
    result = invoke(env, *fixtures("03"))
    assert result.exit_code == 2
    assert "missing_key" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.corpus
def test_every_sample_converts_or_fails_with_a_reason(
    env: dict[str, str], samples_dir: Path
) -> None:
    files = sorted(p for p in samples_dir.rglob("*") if p.suffix in (".hl7", ".json", ".ndjson"))
    result = invoke(env, *files)
    assert "Traceback" not in result.stderr
    assert "[internal_error]" not in result.stderr
    for line in result.stdout.splitlines():
        DocumentReference.model_validate_json(line)
    mentioned = {line.split(": ", 1)[0] for line in result.stderr.splitlines() if ": " in line}
    silent = [p for p in files if str(p) not in mentioned]
    # every input either produced documents or is named on stderr
    assert len(result.stdout.splitlines()) >= len(silent)
    assert result.stdout.strip(), "some sample must convert"
    assert result.exit_code == (
        1 if re.search(r": (error|document \d+: held) ", result.stderr) else 0
    )


def test_annotations_option_adds_surrogate_offsets(env: dict[str, str]) -> None:
    from pipelines.research import ANNOTATION_URL, attachment_text

    result = invoke(env, "--annotations", *fixtures("03"))
    assert result.exit_code == 0, result.stderr
    resource = orjson.loads(result.stdout.splitlines()[0])
    DocumentReference.model_validate(resource)
    text = attachment_text(resource)
    notes = resource["content"][0]["extension"]
    assert notes and all(n["url"] == ANNOTATION_URL for n in notes)
    for note in notes:
        fields = {e["url"]: e.get("valueInteger", e.get("valueCode")) for e in note["extension"]}
        start, end = fields["start"], fields["end"]
        assert 0 <= start < end <= len(text)
        assert text[start:end] not in KNOWN  # the annotated span holds the surrogate


def test_content_hint_follows_the_file_suffix() -> None:
    hint = convert_command.content_hint
    assert hint(Path("a.hl7")) == "hl7v2"
    assert hint(Path("a.JSON")) == "fhir"
    assert hint(Path("a.ndjson")) == "ndjson"  # one resource per line, not one JSON document
    assert hint(Path("a.bin")) is None


def test_held_input_converts_once_the_policy_is_fixed(env: dict[str, str], tmp_path: Path) -> None:
    """Issue 15 item 2 with convert: held under a blind policy, then the same file under the
    fixed one is published (not `duplicate`), and a third run is a duplicate."""
    blind = tmp_path / "blind.toml"
    blind.write_text("[recognizers]\n", encoding="utf-8")
    report = fixtures("03")
    held = invoke(env, "--policy", blind, *report)
    assert held.exit_code == 1 and ": held [leak_guard]" in held.stderr
    assert held.stdout == ""
    fixed = invoke(env, *report)
    assert fixed.exit_code == 0, fixed.stderr
    assert len(fixed.stdout.splitlines()) == 1
    for value in KNOWN:
        assert value not in fixed.stdout
    again = invoke(env, *report)
    assert again.exit_code == 0 and again.stdout == "" and ": duplicate" in again.stderr
