"""Settings files: unknown keys and environment names are errors naming the key; the shipped
example (deploy/deidstream.example.toml) names every setting with its default."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from service.settings import Settings, SettingsFileError, load_settings

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "deidstream.example.toml"


def test_unknown_toml_key_is_an_error_naming_it(tmp_path: Path) -> None:
    conf = tmp_path / "d.toml"
    conf.write_text('[deidstream]\nbootstrap_server = "kafka:9092"\n', encoding="utf-8")
    with pytest.raises(SettingsFileError, match="'bootstrap_server'.*'bootstrap_servers'"):
        load_settings(conf)


def test_environment_name_inside_toml_is_an_error(tmp_path: Path) -> None:
    conf = tmp_path / "d.toml"
    conf.write_text('DEIDSTREAM_GROUP_ID = "g"\n', encoding="utf-8")
    with pytest.raises(SettingsFileError, match="DEIDSTREAM_GROUP_ID.*'group_id'"):
        load_settings(conf)


def test_unknown_env_file_key_is_an_error(tmp_path: Path) -> None:
    conf = tmp_path / "service.env"
    conf.write_text("DEIDSTREAM_GROUP_ID=g\nDEIDSTREAM_MAX_INFLIGHT=3\n", encoding="utf-8")
    with pytest.raises(SettingsFileError, match="'max_inflight'"):
        load_settings(conf)


def test_unknown_keyword_is_an_error() -> None:
    with pytest.raises(ValueError, match="not_a_setting"):
        Settings(not_a_setting=1)  # type: ignore[call-arg]


def test_run_says_one_line_for_a_bad_file(tmp_path: Path) -> None:
    from service.cli import _register_commands, app

    _register_commands()
    conf = tmp_path / "d.toml"
    conf.write_text("[deidstream]\ngroupid = 'x'\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["run", "--config", str(conf)])
    assert result.exit_code == 2
    assert "unknown setting 'groupid'" in result.output
    assert "Traceback" not in result.output


def test_example_names_every_setting_with_its_default() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    values = tomllib.loads(text)["deidstream"]
    commented = set(re.findall(r"^# ([a-z_]+)\s*[=:]", text, flags=re.MULTILINE))
    fields = set(Settings.model_fields)
    assert set(values) <= fields
    missing = fields - set(values) - commented
    assert not missing, f"not in the example: {sorted(missing)}"
    # the commented ones are exactly those without a default value
    for name in commented & fields:
        assert Settings.model_fields[name].default is None, name
    assert load_settings(EXAMPLE).model_dump() == Settings().model_dump()
