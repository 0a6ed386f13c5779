"""Service configuration: one frozen pydantic-settings object.

Values come from, highest priority first: keyword arguments, ``DEIDSTREAM_*`` environment
variables, then an optional file (TOML, JSON or ``.env``) named by ``--config`` or
``DEIDSTREAM_CONFIG_FILE``. Nothing is read at import time; call :func:`load_settings`.
"""

from __future__ import annotations

import io
import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from keystore.errors import DeidstreamError

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER"]


class Settings(BaseSettings):
    """Everything ``deidstream run`` needs. Secrets are ``SecretStr`` so they never print."""

    model_config = SettingsConfigDict(
        env_prefix="DEIDSTREAM_", frozen=True, extra="forbid", validate_default=True
    )

    # Kafka
    bootstrap_servers: str = "localhost:9092"
    input_topics: Annotated[tuple[str, ...], NoDecode] = ("clinical.hl7v2", "clinical.fhir")
    research_topic: str = "research.documents"
    deadletter_topic: str = "clinical.deadletter"
    held_topic: str = "clinical.held"
    group_id: str = "deidstream"
    client_id: str = "deidstream"
    create_topics: bool = True
    topic_partitions: int = Field(default=3, ge=1)
    replication_factor: int = Field(default=1, ge=1)
    session_timeout_ms: int = Field(default=10_000, ge=1_000)
    heartbeat_interval_ms: int = Field(default=1_000, ge=100)
    request_timeout_ms: int = Field(default=15_000, ge=1_000)
    # How long a fetch may wait for data. Kafka answers as soon as a record arrives, but Tansu
    # waits the whole time, so aiokafka's default made the latency (bench/README.md, "Latency").
    # The cost is idle polling.
    fetch_max_wait_ms: int = Field(default=25, ge=1, le=10_000)
    # The wait adapts up to this when fetches come back empty while records wait (Tansu on
    # s3:// storage starves at 25 ms: service/runner/fetchwait.py); = fetch_max_wait_ms: fixed.
    fetch_max_wait_ceiling_ms: int = Field(default=1_000, ge=1, le=10_000)
    # Longest time between two fetches before the consumer leaves the group by itself (a
    # batch stuck retrying a key store outage): its partitions go to other members; it joins
    # again once the batch is done (docs/operations.md, "Key store outages and the group").
    max_poll_interval_ms: int = Field(default=300_000, ge=1_000)

    # Kafka security (passed through to aiokafka unchanged)
    security_protocol: SecurityProtocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_cafile: Path | None = None
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_check_hostname: bool = True

    # Key store and policy
    # unset: the keystore package's local default (./.deidstream/, key created on first use)
    keystore_url: str | None = None
    master_key: SecretStr | None = None
    # Apply pending key store migrations at start (needs a role that owns the tables).
    # Production with a DML-only role: false, and `deidstream keys migrate` once per
    # upgrade under the owner role (docs/keystore.md); the service then waits (not ready,
    # keystore_schema) until the schema is current. A current store is never altered.
    keystore_migrate: bool = True
    policy_file: Path | None = None
    # Held-back documents: the held topic gets coordinates and the reason only, unless the
    # operator declares it a secure topic (same protection as the input topics); then the
    # original input bytes go there too, so a reviewer can look. Never the cleaned text.
    held_topic_secure: bool = False
    # A dead letter's "sent" mark (so a replayed batch sends no second dead letter) is kept
    # this long, then pruned: a replay older than the input topics' retention cannot happen.
    # Kafka's default retention is 7 days; the default leaves room for a longer one.
    deadletter_mark_days: float = Field(default=30.0, gt=0)

    # Limits
    max_in_flight: int = Field(default=256, ge=1)
    # Records per batch (one worker-thread hop, one offset commit). Below max_in_flight, so
    # that under a backlog the next batch is fetched and processed while the previous one
    # waits for its acknowledgements: a batch of max_in_flight records left the worker idle
    # for every batch's send, acks, confirmation and commit (bench/stream.py).
    max_batch_records: int = Field(default=64, ge=1)
    # The producer's record batch limit (per partition, per request). aiokafka sends one
    # request per broker at a time with one batch per partition: with its 16 KiB default a
    # batch of research documents took dozens of round trips. Keep it below the broker's
    # message.max.bytes (Kafka's default: 1 MiB) — a bigger record still goes alone.
    producer_batch_bytes: int = Field(default=256 * 1024, ge=16 * 1024)
    max_message_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    # One document's budget: its message's parse (text extraction included) and its
    # de-identification together. Past it the input is dead-lettered, reason class
    # "too_costly" (never retried; the MLLP gateway answers AR): a large input is parsed in a
    # child process killed at the budget, de-identification checks it between steps. A
    # normal note takes milliseconds, a 4 MiB one a few seconds (docs/operations.md).
    document_deadline_seconds: float = Field(default=30.0, gt=0)
    # A worker busy on one key store call, or the broker unreachable, for longer than this
    # is a stall: /readyz answers 503 with its cause, deidstream_stall_seconds{cause} shows
    # it (a document counts once it is past its budget). Checked every second.
    stall_seconds: float = Field(default=5.0, gt=0)
    # Partitions of the input topics that no worker of this instance holds (while it is the
    # whole consumer group) for longer than this: /readyz answers 503
    # partitions_unassigned:N. Shorter gaps are rebalances (a worker restarting, a member
    # leaving); deidstream_partitions_unassigned shows them all.
    unassigned_seconds: float = Field(default=30.0, gt=0)
    retry_initial_seconds: float = Field(default=0.2, gt=0)
    retry_max_seconds: float = Field(default=10.0, gt=0)

    # HTTP
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8080, ge=0, le=65535)
    deidentify_api_enabled: bool = False
    # bearer token of /v1/deidentify and /v1/status (without one, both answer 404)
    api_token: SecretStr | None = None
    # /docs, /redoc and /openapi.json: off unless asked for (development, the demo)
    api_docs_enabled: bool = False

    # The review workbench (docs/review.md): the /review pages, reviewer accounts (hashed
    # passwords in the key store), and a loop that queues held documents and releases the
    # decided ones. Off by default.
    review_enabled: bool = False
    review_session_minutes: float = Field(default=30.0, gt=0, le=24 * 60)
    # the session cookie is Secure (HTTPS only) unless this is false (a loopback test)
    review_cookie_secure: bool = True
    # distinct reviewers an item needs before it counts as decided (2+: agreement studies)
    review_reviews_per_item: int = Field(default=1, ge=1, le=10)
    # seconds between two passes of the held topic (queue new, release decided); 0: never
    review_sync_seconds: float = Field(default=5.0, ge=0)
    # also queue every streamed document's tagger spans in the policy's [review] band and
    # rule/tagger disagreements (sealed store writes on the stream's path)
    review_queue_spans: bool = False

    log_level: str = "info"
    # CPUs the whole process is pinned to at `deidstream run` ("0", "0,2", "2-3"; empty: the
    # kernel places it). One CPU keeps the GIL's hand-overs between the event loop and the
    # processing thread on one core (service/affinity.py, docs/operations.md).
    cpu_affinity: Annotated[tuple[int, ...], NoDecode] = ()
    # Worker processes of `deidstream run` (each a member of the consumer group with its own
    # key store connection) under one supervisor that serves /metrics and /readyz; unset:
    # the CPUs the process may use (service/supervisor.py, docs/operations.md "Scaling").
    # 1: the single-process service, no supervisor.
    workers: int | None = Field(default=None, ge=1, le=256)

    @field_validator("input_topics", mode="before")
    @classmethod
    def _split_topics(cls, value: Any) -> Any:
        """Accept ``a,b`` as well as a JSON list from the environment."""
        if isinstance(value, str):
            stripped = value.strip()
            if stripped.startswith("["):
                return tuple(json.loads(stripped))
            return tuple(t.strip() for t in stripped.split(",") if t.strip())
        return value

    @field_validator("cpu_affinity", mode="before")
    @classmethod
    def _parse_cpus(cls, value: Any) -> Any:
        """Accept the cpuset list format (``0,2-3``) or a JSON list from the environment."""
        if isinstance(value, int) and not isinstance(value, bool):
            return (value,)
        if isinstance(value, str):
            stripped = value.strip()
            if stripped.startswith("["):
                return tuple(json.loads(stripped))
            from service.affinity import parse_cpu_list

            return parse_cpu_list(stripped)
        return value

    @field_validator("cpu_affinity")
    @classmethod
    def _cpus_non_negative(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if any(cpu < 0 for cpu in value):
            raise ValueError("CPU numbers are >= 0")
        return tuple(sorted(set(value)))

    @model_validator(mode="after")
    def _timeouts_fit(self) -> Settings:
        # aiokafka waits for JoinGroup with the request timeout, and a broker may hold the join
        # for up to the session timeout (Tansu: about half of it): a shorter request timeout
        # makes every join fail and the member never gets partitions
        if self.request_timeout_ms <= self.session_timeout_ms:
            raise ValueError("request_timeout_ms must be greater than session_timeout_ms")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be less than session_timeout_ms")
        if self.fetch_max_wait_ceiling_ms >= self.request_timeout_ms:
            raise ValueError("fetch_max_wait_ceiling_ms must be less than request_timeout_ms")
        return self

    def kafka_security(self) -> dict[str, Any]:
        """aiokafka keyword arguments for security; empty for PLAINTEXT."""
        out: dict[str, Any] = {"security_protocol": self.security_protocol}
        if self.security_protocol in ("SSL", "SASL_SSL"):
            from aiokafka.helpers import create_ssl_context

            ctx = create_ssl_context(
                cafile=str(self.ssl_cafile) if self.ssl_cafile else None,
                certfile=str(self.ssl_certfile) if self.ssl_certfile else None,
                keyfile=str(self.ssl_keyfile) if self.ssl_keyfile else None,
            )
            ctx.check_hostname = self.ssl_check_hostname
            out["ssl_context"] = ctx
        if self.security_protocol.startswith("SASL"):
            out["sasl_mechanism"] = self.sasl_mechanism or "PLAIN"
            out["sasl_plain_username"] = self.sasl_username
            out["sasl_plain_password"] = (
                self.sasl_password.get_secret_value() if self.sasl_password else None
            )
        return out

    def kafka_common(self) -> dict[str, Any]:
        return {
            "bootstrap_servers": self.bootstrap_servers,
            "client_id": self.client_id,
            "request_timeout_ms": self.request_timeout_ms,
            **self.kafka_security(),
        }

    def output_topics(self) -> tuple[str, ...]:
        return (self.research_topic, self.deadletter_topic, self.held_topic)


class SettingsFileError(DeidstreamError, ValueError):
    """A settings file that cannot be used as it is: unknown keys, environment names in TOML.
    The message names the file and the key, never a value (a value may be a secret)."""

    reason_class = "settings"


ENV_PREFIX = "DEIDSTREAM_"
# DEIDSTREAM_* variables that are not fields of Settings but that deidstream reads all the
# same: the settings file's name, the keystore package's key file, options of single commands,
# and knobs of the tests and benchmarks. Any other DEIDSTREAM_* name is a mistake (a typo
# would otherwise be ignored and the default used): :func:`check_environment`.
OTHER_ENV_NAMES = frozenset(
    {
        "DEIDSTREAM_CONFIG_FILE",  # load_settings
        "DEIDSTREAM_MASTER_KEY_FILE",  # keystore.keyring
        "DEIDSTREAM_MLLP_HOST",  # deidstream mllp --host
        "DEIDSTREAM_MLLP_PORT",  # deidstream mllp --port
        "DEIDSTREAM_MLLP_METRICS_PORT",  # deidstream mllp --metrics-port
        "DEIDSTREAM_REVIEW_PASSWORD",  # deidstream review add-user
        "DEIDSTREAM_TANSU_BIN",  # service.broker: the Tansu binary
        "DEIDSTREAM_FUZZ_EXAMPLES",  # tests: Hypothesis examples per fuzz property
        "DEIDSTREAM_SCREENSHOTS",  # tests: where the review browser test saves pictures
        "DEIDSTREAM_IMAGE",  # make image / image-test: the image to build and run
    }
)


def known_env_names() -> frozenset[str]:
    """Every DEIDSTREAM_* variable deidstream reads (settings fields and the others)."""
    fields = {ENV_PREFIX + name.upper() for name in Settings.model_fields}
    return frozenset(fields) | OTHER_ENV_NAMES


class SettingsEnvError(DeidstreamError, ValueError):
    """A ``DEIDSTREAM_*`` environment variable deidstream does not read (a typo): names the
    variable and the closest known one, never a value."""

    reason_class = "settings"


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`SettingsEnvError` naming every unknown ``DEIDSTREAM_*`` variable, each
    with the closest known name (difflib), all on one line."""
    import difflib

    env = os.environ if environ is None else environ
    known = known_env_names()
    problems = []
    for name in sorted(env):
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX) or upper in known:
            continue
        close = difflib.get_close_matches(upper, sorted(known), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        problems.append(f"unknown environment variable {name}{hint}")
    if problems:
        raise SettingsEnvError("; ".join(problems))


def _check_keys(path: Path, values: dict[str, Any], *, env_names_allowed: bool) -> None:
    import difflib

    known = set(Settings.model_fields)
    for key in values:
        if not env_names_allowed and key.upper().startswith("DEIDSTREAM_"):
            raise SettingsFileError(
                f"{path}: {key!r} is an environment variable name; in a settings file write "
                f"{key[len('DEIDSTREAM_') :].lower()!r}"
            )
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise SettingsFileError(f"{path}: unknown setting {key!r}{hint}")


def _read_file(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".toml":
        data = tomllib.loads(text)
        # allow either top-level keys or a [deidstream] table
        values = dict(data.get("deidstream", data))
        _check_keys(path, values, env_names_allowed=False)
        return values
    if path.suffix == ".json":
        values = dict(json.loads(text))
        _check_keys(path, values, env_names_allowed=False)
        return values
    # .env style, read by python-dotenv (the parser of pydantic-settings' ``env_file``): KEY=VALUE,
    # the DEIDSTREAM_ prefix optional here (pydantic-settings' own env_file would require it)
    from dotenv import dotenv_values

    out = {
        key.lower().removeprefix("deidstream_"): value
        for key, value in dotenv_values(stream=io.StringIO(text)).items()
        if value is not None
    }
    _check_keys(path, out, env_names_allowed=True)
    return out


def load_settings(config_file: str | Path | None = None, **overrides: Any) -> Settings:
    """Settings from the file (if any), overridden by the environment, then by ``overrides``.

    Raises :class:`SettingsFileError` for a key the file must not have, and
    :class:`SettingsEnvError` for a ``DEIDSTREAM_*`` variable that is no setting."""
    check_environment()
    path = config_file or os.environ.get("DEIDSTREAM_CONFIG_FILE")
    file_values = _read_file(Path(path)) if path else {}
    from_env = Settings()
    env_values = {name: getattr(from_env, name) for name in from_env.model_fields_set}
    return Settings(**{**file_values, **env_values, **overrides})


def settings_or_exit(config_file: str | Path | None = None, **overrides: Any) -> Settings:
    """:func:`load_settings` for a command: a bad file or value is one line on stderr and
    exit status 2, not a traceback."""
    import typer
    from pydantic import ValidationError

    try:
        return load_settings(config_file, **overrides)
    except (SettingsFileError, SettingsEnvError) as exc:
        typer.echo(f"deidstream: {exc}", err=True)
        raise typer.Exit(2) from None
    except ValidationError as exc:
        where = ", ".join(
            f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in exc.errors()
        )
        typer.echo(f"deidstream: invalid settings ({where})", err=True)
        raise typer.Exit(2) from None
    except (OSError, tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        path = config_file or os.environ.get("DEIDSTREAM_CONFIG_FILE")
        typer.echo(
            f"deidstream: cannot read the settings file {path}: "
            f"{getattr(exc, 'strerror', None) or exc}",
            err=True,
        )
        raise typer.Exit(2) from None


def environment_or_exit() -> None:
    """:func:`check_environment` for a command: one line on stderr and exit status 2."""
    import typer

    try:
        check_environment()
    except SettingsEnvError as exc:
        typer.echo(f"deidstream: {exc}", err=True)
        raise typer.Exit(2) from None
