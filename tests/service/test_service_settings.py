"""Settings: env prefix, file + env precedence, secrets never printed, security pass-through."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from service.settings import Settings, load_settings


def test_environment_with_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEIDSTREAM_BOOTSTRAP_SERVERS", "kafka-1:9093,kafka-2:9093")
    monkeypatch.setenv("DEIDSTREAM_INPUT_TOPICS", "a.hl7, b.fhir")
    monkeypatch.setenv("DEIDSTREAM_HTTP_PORT", "9100")
    monkeypatch.setenv("DEIDSTREAM_KEYSTORE_URL", "postgresql://u@db:5432/x")
    s = load_settings()
    assert s.bootstrap_servers == "kafka-1:9093,kafka-2:9093"
    assert s.input_topics == ("a.hl7", "b.fhir")
    assert s.http_port == 9100
    assert s.keystore_url == "postgresql://u@db:5432/x"


def test_defaults_match_the_issue() -> None:
    s = Settings()
    assert s.input_topics == ("clinical.hl7v2", "clinical.fhir")
    assert s.research_topic == "research.documents"
    assert s.deadletter_topic == "clinical.deadletter"
    assert s.held_topic == "clinical.held"
    assert not s.deidentify_api_enabled
    assert not s.held_topic_secure


def test_file_then_environment_then_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "deidstream.toml"
    conf.write_text(
        '[deidstream]\ngroup_id = "from-file"\nmax_in_flight = 7\nhttp_port = 1111\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("DEIDSTREAM_HTTP_PORT", "2222")
    s = load_settings(conf, max_in_flight=9)
    assert s.group_id == "from-file"
    assert s.http_port == 2222  # environment beats the file
    assert s.max_in_flight == 9  # explicit override beats both


def test_env_file_format(tmp_path: Path) -> None:
    conf = tmp_path / "service.env"
    conf.write_text("# comment\nDEIDSTREAM_GROUP_ID='g1'\nresearch_topic=r.out\n", encoding="utf-8")
    s = load_settings(conf)
    assert (s.group_id, s.research_topic) == ("g1", "r.out")


def test_frozen_and_validated() -> None:
    s = Settings()
    with pytest.raises(ValidationError):
        s.group_id = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Settings(max_in_flight=0)
    with pytest.raises(ValidationError):
        Settings(security_protocol="TLS")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="request_timeout_ms"):
        Settings(session_timeout_ms=6000, request_timeout_ms=3000)
    with pytest.raises(ValidationError, match="heartbeat"):
        Settings(session_timeout_ms=6000, heartbeat_interval_ms=6000)


def test_secrets_do_not_print() -> None:
    s = Settings(master_key="c2VjcmV0LWtleQ==", api_token="tok-123", sasl_password="hunter2")
    text = repr(s) + str(s) + s.model_dump_json()
    for secret in ("c2VjcmV0LWtleQ==", "tok-123", "hunter2"):
        assert secret not in text


def test_sasl_settings_pass_through() -> None:
    s = Settings(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="svc",
        sasl_password="pw",
    )
    sec = s.kafka_security()
    assert sec == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "svc",
        "sasl_plain_password": "pw",
    }
    assert Settings().kafka_security() == {"security_protocol": "PLAINTEXT"}


def test_tls_builds_an_ssl_context() -> None:
    sec = Settings(security_protocol="SSL", ssl_check_hostname=False).kafka_security()
    assert sec["security_protocol"] == "SSL"
    assert sec["ssl_context"].check_hostname is False


def test_no_processor_switch_in_production_settings() -> None:
    """The de-identifier is not swappable by configuration: tests inject a processor through
    ``create_app(processor_factory=...)`` or the runner's constructor."""
    assert "processor" not in Settings.model_fields
    with pytest.raises(ValidationError, match="processor"):
        Settings(processor="toy_processor:factory")  # type: ignore[call-arg]
