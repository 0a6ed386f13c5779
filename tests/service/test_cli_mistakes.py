"""Issue 28: mistakes that did nothing and said nothing, through the real command line
(``python -m service.cli`` as a subprocess, the environment cleared of DEIDSTREAM_*).

1. unknown ``DEIDSTREAM_*`` variables: one line with "did you mean", exit 2, every command;
2. start-up errors exit: an unresolvable broker host, a port in use, a missing --config file;
3. ``replay`` to a non-input topic needs --force; an empty file is an error;
5. ``convert --no-store`` leaves the key store untouched.
(``tail`` of a missing topic needs a broker: tests/integration/test_cli_kafka.py.)"""

from __future__ import annotations

import base64
import os
import re
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from service.cli import command
from service.settings import OTHER_ENV_NAMES, SettingsEnvError, check_environment, known_env_names
from service.startup import broker_addresses, listen_problem, unresolvable_hosts

ROOT = Path(__file__).resolve().parents[2]
NOTE = b"MSH|^~\\&|A|B|C|D|20240101||ORU^R01|1|P|2.5\rPID|1||X1\r"
# a broker address nothing listens on (replay/tail must fail before reaching it)
DEAD = "127.0.0.1:9"


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def cli(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path = ROOT,
    timeout: float = 60,
    real: bool = False,
) -> Ran:
    """The command line with the environment cleared of DEIDSTREAM_* but ``env``: in this
    process (click's runner) or, ``real``, as ``python -m service.cli`` in a subprocess."""
    if real:
        clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("DEIDSTREAM_")}
        done = subprocess.run(
            [sys.executable, "-m", "service.cli", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            env={**clean, **(env or {})},
            check=False,
        )
        return Ran(done.returncode, done.stdout, done.stderr)
    unset: dict[str, str | None] = {
        k: None for k in os.environ if k.upper().startswith("DEIDSTREAM_")
    }
    before = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(
            command(), list(args), prog_name="deidstream", env={**unset, **(env or {})}
        )
    finally:
        os.chdir(before)
    return Ran(result.exit_code, result.stdout, result.stderr)


def one_line(result: Ran, code: int, *needles: str) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # no traceback, no retry log
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------- 1. environment


@pytest.mark.parametrize(
    ("args", "typo", "meant"),
    [
        (("run",), "DEIDSTREAM_BOOTSTRAP_SERVER", "DEIDSTREAM_BOOTSTRAP_SERVERS"),
        (("mllp",), "DEIDSTREAM_MLLP_PORTT", "DEIDSTREAM_MLLP_PORT"),
        (("keys", "stats"), "DEIDSTREAM_KEYSTORE_UR", "DEIDSTREAM_KEYSTORE_URL"),
        (("tail", "x"), "DEIDSTREAM_GROUPID", "DEIDSTREAM_GROUP_ID"),
        (("convert", "nosuch.hl7"), "DEIDSTREAM_MASTER_KEYFILE", "DEIDSTREAM_MASTER_KEY_FILE"),
    ],
)
def test_a_misspelt_variable_is_named_with_the_closest_one(
    args: tuple[str, ...], typo: str, meant: str, tmp_path: Path
) -> None:
    real = args == ("run",)  # one through the real process; the rest in this one (faster)
    result = cli(*args, env={typo: "9999"}, cwd=tmp_path, timeout=30, real=real)
    line = one_line(result, 2, f"unknown environment variable {typo}", f"did you mean {meant}?")
    assert "9999" not in line  # names, never values (a value may be a secret)
    assert not (tmp_path / ".deidstream").exists()  # nothing was done


def test_every_unknown_variable_is_on_the_one_line() -> None:
    with pytest.raises(SettingsEnvError) as caught:
        check_environment(
            {"DEIDSTREAM_HTTP_PORTS": "1", "deidstream_log_levle": "x", "PATH": "/bin"}
        )
    text = str(caught.value)
    assert "DEIDSTREAM_HTTP_PORTS (did you mean DEIDSTREAM_HTTP_PORT?)" in text
    assert "deidstream_log_levle (did you mean DEIDSTREAM_LOG_LEVEL?)" in text
    assert "\n" not in text
    check_environment({"deidstream_group_id": "g", "DEIDSTREAM_MASTER_KEY_FILE": "f"})


def test_every_variable_the_project_names_is_known() -> None:
    """Every DEIDSTREAM_* name in the tracked files (code, docs, deploy, tests, Makefile; not
    the changelog) is a setting or on OTHER_ENV_NAMES, but the misspellings tests use on
    purpose: a variable someone adds must be added to the list, or every command refuses it."""
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.split()
    if not files:
        pytest.skip("not a git checkout")
    on_purpose = {
        "DEIDSTREAM_BOOTSTRAP_SERVER",
        "DEIDSTREAM_MLLP_PORTT",
        "DEIDSTREAM_KEYSTORE_UR",
        "DEIDSTREAM_GROUPID",
        "DEIDSTREAM_MASTER_KEYFILE",
        "DEIDSTREAM_HTTP_PORTS",
        "DEIDSTREAM_MAX_INFLIGHT",  # tests/service/test_settings_example.py: a .env typo
    }
    found: dict[str, str] = {}
    for name in files:
        path = ROOT / name
        if not path.is_file() or path.suffix in {".gz", ".zip", ".crfsuite", ".png"}:
            continue
        if name == "CHANGELOG.md":  # history: names that were removed
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for var in re.findall(r"DEIDSTREAM_[A-Z][A-Z0-9_]*[A-Z0-9]", text):
            found.setdefault(var, name)
    assert "DEIDSTREAM_FUZZ_EXAMPLES" in found and "DEIDSTREAM_MASTER_KEY_FILE" in found
    unknown = {v: f for v, f in found.items() if v not in known_env_names() | on_purpose}
    assert not unknown, unknown
    assert OTHER_ENV_NAMES.isdisjoint(known_env_names() - OTHER_ENV_NAMES)


# --------------------------------------------------------------------------- 2. start-up


def test_bootstrap_entries_are_parsed() -> None:
    assert broker_addresses("kafak:9092, [::1]:9093,PLAINTEXT://b:1,solo") == [
        ("kafak", 9092),
        ("::1", 9093),
        ("b", 1),
        ("solo", None),
    ]
    assert unresolvable_hosts("localhost:9092,127.0.0.1:1") == []
    assert unresolvable_hosts("localhost:9092,kafak.invalid:9092") == ["kafak.invalid"]


@pytest.mark.parametrize("which", ["run", "mllp", "replay", "tail"])
def test_an_unresolvable_broker_host_exits_at_start(which: str, tmp_path: Path) -> None:
    note = tmp_path / "n.hl7"
    note.write_bytes(NOTE)
    args = {
        "run": ("run", "--http-port", "0"),
        "mllp": ("mllp", "--port", "0"),
        "replay": ("replay", str(note), "--topic", "t", "--force"),
        "tail": ("tail", "clinical.hl7v2"),
    }[which]
    env = {"DEIDSTREAM_BOOTSTRAP_SERVERS": "kafak.invalid:9092"}
    # without the check `run` and `mllp` retried for ever: the timeout would fail the test
    result = cli(*args, env=env, cwd=tmp_path, timeout=60, real=which == "mllp")
    out = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert "Kafka broker host 'kafak.invalid' does not resolve" in out[-1], result.stderr
    where = "the settings file" if which == "run" else "--bootstrap-servers"  # run has none
    assert out[-1].endswith(f"check DEIDSTREAM_BOOTSTRAP_SERVERS or {where}")


@pytest.mark.parametrize("which", ["run", "mllp"])
def test_a_port_in_use_says_address_already_in_use(which: str, tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        assert listen_problem("127.0.0.1", port) == "address already in use"
        args = {
            "run": ("run", "--http-port", str(port), "--workers", "1"),
            "mllp": ("mllp", "--port", str(port)),
        }[which]
        env = {"DEIDSTREAM_BOOTSTRAP_SERVERS": DEAD}  # never reached: the port comes first
        result = cli(*args, env=env, cwd=tmp_path, timeout=60, real=which == "run")
    one_line(result, 1, f"cannot listen on 127.0.0.1:{port}", "address already in use")


def test_mllp_metrics_port_in_use_is_named(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = cli(
            "mllp",
            "--port",
            "0",
            "--metrics-port",
            str(port),
            env={"DEIDSTREAM_BOOTSTRAP_SERVERS": DEAD},
            cwd=tmp_path,
        )
    one_line(result, 1, f"{port} (the metrics port): address already in use")


@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_missing_config_file_is_named(how: str, tmp_path: Path) -> None:
    if how == "option":
        result = cli("run", "--config", "nosuch.toml", cwd=tmp_path)
    else:
        result = cli("run", env={"DEIDSTREAM_CONFIG_FILE": "nosuch.toml"}, cwd=tmp_path)
    one_line(result, 2, "nosuch.toml", "No such file")


# --------------------------------------------------------------------------- 3. replay


def test_replay_to_a_topic_nobody_reads_needs_force(tmp_path: Path) -> None:
    note = tmp_path / "n.hl7"
    note.write_bytes(NOTE)
    env = {"DEIDSTREAM_BOOTSTRAP_SERVERS": DEAD}
    refused = cli("replay", str(note), "--topic", "clinical.hl7", env=env, cwd=tmp_path, real=True)
    one_line(refused, 2, "'clinical.hl7' is not an input topic", "clinical.hl7v2", "--force")
    # forced: a warning, then the send itself (which fails here: nothing listens)
    forced = cli(
        "replay", str(note), "--topic", "clinical.hl7", "--force", env=env, cwd=tmp_path, real=True
    )
    assert forced.returncode == 1
    warning, failure = forced.stderr.strip().splitlines()
    assert "warning: 'clinical.hl7' is not an input topic" in warning
    assert "cannot reach the Kafka broker" in failure
    # an input topic named by the settings is accepted without --force
    env["DEIDSTREAM_INPUT_TOPICS"] = "clinical.hl7"
    taken = cli("replay", str(note), "--topic", "clinical.hl7", env=env, cwd=tmp_path, real=True)
    one_line(taken, 1, "cannot reach the Kafka broker")


@pytest.mark.parametrize("content", [b"", b"\xef\xbb\xbf \r\n\t"])
def test_replay_of_an_empty_file_is_an_error(content: bytes, tmp_path: Path) -> None:
    good, empty = tmp_path / "good.hl7", tmp_path / "empty.hl7"
    good.write_bytes(NOTE)
    empty.write_bytes(content)
    result = cli(
        "replay",
        str(good),
        str(empty),
        "--topic",
        "clinical.hl7v2",
        env={"DEIDSTREAM_BOOTSTRAP_SERVERS": DEAD},
        cwd=tmp_path,
    )
    one_line(result, 1, f"{empty} is empty", "nothing sent")


# --------------------------------------------------------------------------- 5. convert


def test_convert_no_store_leaves_the_stream_its_first_sight(tmp_path: Path) -> None:
    demo = ROOT / "service" / "demo_data" / "01_oru_vance_chest_xray.hl7"
    key = base64.b64encode(os.urandom(32)).decode()
    store = tmp_path / "store.sqlite3"
    env = {"DEIDSTREAM_KEYSTORE_URL": f"sqlite:///{store}", "DEIDSTREAM_MASTER_KEY": f"k:{key}"}
    for _ in range(2):  # twice: a throw-away store each time, never "duplicate"
        result = cli("convert", str(demo), "--out", "out", "--no-store", env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "1 published, 0 duplicate" in result.stderr
    assert not store.exists()
    assert not (tmp_path / ".deidstream").exists()
    # with the store: the second conversion is a duplicate (what the stream would see)
    for expected in ("1 published, 0 duplicate", "0 published, 1 duplicate"):
        result = cli("convert", str(demo), "--out", "out", env=env, cwd=tmp_path)
        assert expected in result.stderr, result.stderr


def test_out_is_ignored_by_git() -> None:
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    assert "/out/" in ignored
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = readme[readme.index("## Your first hour") :]
    convert = next(line for line in first.splitlines() if line.startswith("deidstream convert"))
    assert "--no-store" in convert
