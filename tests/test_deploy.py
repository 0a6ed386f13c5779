"""deploy/ stays in step with the service: every manifest parses, alert rules and dashboard
queries name only metrics (and labels) that service/metrics.py registers, every DEIDSTREAM_*
variable in compose/Kubernetes is a field of the settings object, the Kubernetes objects
fit together, and docs/operations.md explains every dead-letter reason and metric.
promtool and kubectl are used when installed (rule syntax, alert unit tests, kustomize)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from keystore.errors import DeidstreamError
from service.metrics import Metrics
from service.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
DASHBOARD = DEPLOY / "grafana" / "deidstream.json"
K8S = DEPLOY / "k8s"
OPERATIONS = ROOT / "docs" / "operations.md"

# series Prometheus itself adds, and labels it (or the dashboard) adds to every series
PROMETHEUS_SERIES = {"up"}
TARGET_LABELS = {"job", "instance", "namespace", "pod", "le"}
PROMQL_WORDS = {
    "sum",
    "max",
    "min",
    "avg",
    "count",
    "rate",
    "irate",
    "increase",
    "by",
    "without",
    "and",
    "or",
    "unless",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "offset",
    "histogram_quantile",
    "clamp_min",
    "clamp_max",
    "label_values",
    "max_over_time",
    "deriv",
    "abs",
    "topk",
    "bottomk",
    "time",
    "vector",
    "scalar",
    "absent",
}
# reason classes the runner sets itself (service/runner/), besides the error hierarchy's
RUNNER_REASONS = {"oversize", "internal_error", "leak_guard"}


def manifests() -> list[Path]:
    return sorted(p for p in DEPLOY.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))


def load(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return [json.loads(text)]
    return [doc for doc in yaml.safe_load_all(text) if doc is not None]


def registered() -> dict[str, set[str]]:
    """Sample name → label names, built by the service's own metrics module."""
    metrics = Metrics()
    labels_of: dict[str, tuple[str, ...]] = {}
    for value in vars(metrics).values():
        name = getattr(value, "_name", None)
        if name:
            labels_of[name] = tuple(getattr(value, "_labelnames", ()))
    out: dict[str, set[str]] = {}
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_sum", "_count", "_created"),
        "gauge": ("",),
        "summary": ("", "_sum", "_count", "_created"),
    }
    for family in metrics.registry.collect():
        labels = set(labels_of.get(family.name, ()))
        for suffix in suffixes.get(family.type, ("",)):
            out[family.name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
    return out


def promql_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression: identifiers outside strings, braces and
    by/without lists that are not PromQL words, durations or Grafana variables."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # drop string literals
    text = re.sub(r"\{[^}]*\}", "{}", text)  # drop label matchers
    text = re.sub(r"\b(?:by|without|on|ignoring)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\[[^\]]*\]", "[]", text)  # ranges
    text = re.sub(r"\$\w+", " ", text)  # Grafana variables
    names = set(re.findall(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)", text))
    return {n for n in names if n not in PROMQL_WORDS and not re.fullmatch(r"\d+[smhdwy]", n)}


def promql_labels(expr: str) -> set[str]:
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    found: set[str] = set()
    for block in re.findall(r"\{([^}]*)\}", text):
        found.update(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", block))
    for block in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", text):
        found.update(x.strip() for x in block.split(",") if x.strip())
    return found


def alert_rules() -> list[dict[str, Any]]:
    doc = load(ALERTS)[0]
    return [rule for group in doc["groups"] for rule in group["rules"]]


def dashboard_exprs() -> Iterator[tuple[str, str]]:
    dash = load(DASHBOARD)[0]
    for panel in dash["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]
    for var in dash["templating"]["list"]:
        query = var.get("query")
        if isinstance(query, dict):
            # label_values(SELECTOR, LABEL): check LABEL as a grouping label of SELECTOR
            m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", query["query"].strip())
            expr = f"max by ({m.group(2)}) ({m.group(1)})" if m else query["query"]
            yield f"variable {var['name']}", expr


def check_expr(where: str, expr: str, known: dict[str, set[str]]) -> None:
    names = promql_names(expr)
    assert names, f"{where}: no metric in {expr!r}"
    unknown = names - set(known) - PROMETHEUS_SERIES
    assert not unknown, f"{where}: not registered by service/metrics.py: {sorted(unknown)}"
    allowed = set().union(*(known.get(n, set()) for n in names)) | TARGET_LABELS
    bad = promql_labels(expr) - allowed
    assert not bad, f"{where}: labels {sorted(bad)} are not labels of {sorted(names)}"


def settings_env_names() -> set[str]:
    return {f"DEIDSTREAM_{name.upper()}" for name in Settings.model_fields}


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize("path", manifests(), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_manifest_parses(path: Path) -> None:
    docs = load(path)
    assert docs, f"{path} is empty"
    assert all(isinstance(d, dict) for d in docs)


def test_the_expected_files_exist() -> None:
    for rel in (
        "Dockerfile",
        "compose.yaml",
        "prometheus/prometheus.yml",
        "prometheus/alerts.yml",
        "grafana/deidstream.json",
        "k8s/deployment.yaml",
        "k8s/service.yaml",
        "k8s/configmap.yaml",
        "k8s/poddisruptionbudget.yaml",
    ):
        assert (DEPLOY / rel).is_file(), rel


# --------------------------------------------------------------------------- metric names


def test_the_name_extractor_sees_names_and_labels() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (le, stage) (rate(x_bucket{job=~"$job", a="b"}'
        "[5m]))) / clamp_min(sum(rate(y_total[$__rate_interval])), 1e-9) and up == 0"
    )
    assert promql_names(expr) == {"x_bucket", "y_total", "up"}
    assert promql_labels(expr) == {"le", "stage", "job", "a"}


def test_alert_rules_use_only_registered_metrics_and_labels() -> None:
    known = registered()
    rules = alert_rules()
    assert rules
    for rule in rules:
        check_expr(f"alert {rule['alert']}", rule["expr"], known)


def test_alert_rules_cover_the_required_conditions() -> None:
    rules = alert_rules()
    used = " ".join(r["expr"] for r in rules)
    for name in (
        "deidstream_messages_deadlettered_total",
        "deidstream_documents_held_total",
        "deidstream_consumer_lag_messages",
        "deidstream_ready",
        "deidstream_keystore_operations_total",
        "deidstream_end_to_end_latency_seconds_bucket",
        "deidstream_processing_stage_seconds_bucket",
    ):
        assert name in used, f"no alert on {name}"
    held = [r for r in rules if "deidstream_documents_held_total" in r["expr"]]
    # any held document is a privacy alert: critical, no waiting period, threshold zero
    assert all(r["labels"]["severity"] == "critical" and "for" not in r for r in held)
    assert all(re.search(r">\s*0\s*$", r["expr"].strip()) for r in held)
    for rule in rules:
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
        anchor = rule["annotations"]["runbook"].split("#", 1)[1]
        assert anchor in _doc_anchors(), f"{rule['alert']}: runbook anchor #{anchor} missing"


def test_dashboard_queries_use_only_registered_metrics_and_labels() -> None:
    known = registered()
    exprs = list(dashboard_exprs())
    assert len(exprs) >= 10
    for where, expr in exprs:
        check_expr(f"panel {where}", expr, known)


def test_every_registered_family_is_on_the_dashboard() -> None:
    used = " ".join(e for _, e in dashboard_exprs())
    for family in Metrics().registry.collect():
        assert family.name in used, f"{family.name} is not on the dashboard"


def test_dashboard_panels_do_not_overlap() -> None:
    cells: set[tuple[int, int]] = set()
    for panel in load(DASHBOARD)[0]["panels"]:
        g = panel["gridPos"]
        assert g["x"] + g["w"] <= 24, panel["title"]
        area = {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }
        assert not area & cells, f"panel {panel['title']} overlaps another"
        cells |= area


# --------------------------------------------------------------------------- configuration


def compose_service_env() -> dict[str, str]:
    compose = load(DEPLOY / "compose.yaml")[0]
    env = compose["services"]["deidstream"]["environment"]
    return {str(k): str(v) for k, v in env.items()}


def test_compose_env_names_are_settings_fields() -> None:
    env = compose_service_env()
    assert {
        "DEIDSTREAM_BOOTSTRAP_SERVERS",
        "DEIDSTREAM_KEYSTORE_URL",
        "DEIDSTREAM_MASTER_KEY",
    } <= set(env)
    unknown = {k for k in env if k.startswith("DEIDSTREAM_")} - settings_env_names()
    assert not unknown, f"not fields of service.settings.Settings: {sorted(unknown)}"
    assert env["DEIDSTREAM_KEYSTORE_URL"].startswith("postgresql://")
    assert env["DEIDSTREAM_HTTP_HOST"] == "0.0.0.0"  # noqa: S104 - inside the container


def test_compose_env_values_are_accepted_by_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in compose_service_env().items():
        if "${" in value:  # interpolated from the operator's environment
            value = re.sub(r"\$\{[^}]*\}", "x", value)
        monkeypatch.setenv(key, value)
    settings = Settings()
    assert settings.bootstrap_servers == "kafka:9092"
    assert settings.input_topics == ("clinical.hl7v2", "clinical.fhir")


def test_compose_has_the_real_infrastructure() -> None:
    services = load(DEPLOY / "compose.yaml")[0]["services"]
    assert services["kafka"]["image"].startswith("apache/kafka:")
    assert services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["prometheus"]["image"].startswith("prom/prometheus:")
    assert services["grafana"]["image"].startswith("grafana/grafana:")
    assert services["deidstream"]["build"]["dockerfile"] == "deploy/Dockerfile"
    for mount in services["prometheus"]["volumes"] + services["grafana"]["volumes"]:
        source = mount.split(":", 1)[0]
        if source.startswith("."):
            assert (DEPLOY / source).exists(), f"compose mounts missing {source}"


def k8s_objects() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in load(path):
            if "kind" in doc and doc["kind"] != "Kustomization":
                out[doc["kind"]] = doc
    return out


def test_k8s_env_names_are_settings_fields() -> None:
    objs = k8s_objects()
    names = set(objs["ConfigMap"]["data"])
    container = objs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    names |= {e["name"] for e in container.get("env", [])}
    unknown = names - settings_env_names()
    assert not unknown, f"not fields of service.settings.Settings: {sorted(unknown)}"


def test_k8s_configmap_values_are_accepted_by_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in k8s_objects()["ConfigMap"]["data"].items():
        monkeypatch.setenv(key, value)
    settings = Settings()
    assert settings.security_protocol == "SASL_SSL"
    assert settings.http_port == 8080


def test_k8s_deployment_probes_secret_and_selectors() -> None:
    objs = k8s_objects()
    deployment = objs["Deployment"]
    pod = deployment["spec"]["template"]
    container = pod["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["args"] == ["run"]
    env = {e["name"]: e for e in container["env"]}
    key_ref = env["DEIDSTREAM_MASTER_KEY"]["valueFrom"]["secretKeyRef"]
    assert key_ref["name"] == "deidstream-secrets" and not key_ref.get("optional")
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    config = objs["ConfigMap"]["data"]
    assert ports["http"] == int(config["DEIDSTREAM_HTTP_PORT"])
    assert container["envFrom"][0]["configMapRef"]["name"] == objs["ConfigMap"]["metadata"]["name"]
    labels = pod["metadata"]["labels"]
    for kind in ("Service", "PodDisruptionBudget"):
        spec = objs[kind]["spec"]
        selector = spec["selector"].get("matchLabels", spec["selector"])
        assert selector.items() <= labels.items(), f"{kind} selects no pod"
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    # the pod must outlive the runner's drain (30 s) on SIGTERM
    assert pod["spec"]["terminationGracePeriodSeconds"] > 30
    # members beyond the partition count (every worker of every replica is one) would sit
    # idle and never become ready
    surge = deployment["spec"]["strategy"]["rollingUpdate"]["maxSurge"]
    workers = int(config.get("DEIDSTREAM_WORKERS", "1"))
    assert (
        int(config["DEIDSTREAM_TOPIC_PARTITIONS"])
        >= (deployment["spec"]["replicas"] + surge) * workers
    )


def test_dockerfile_runs_the_service_as_non_root() -> None:
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    # one base for both stages, the official slim image unless the build names another
    assert re.findall(r"^ARG\s+BASE_IMAGE=(\S+)", text, re.M) == ["python:3.11-slim"]
    froms = re.findall(r"^FROM\s+(\S+)", text, re.M)
    assert len(froms) >= 2 and all(f == "${BASE_IMAGE}" for f in froms)
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert 'ENTRYPOINT ["deidstream"]' in text and 'CMD ["run"]' in text
    for path in re.findall(r"^COPY\s+(?!--from)(\S+)", text, re.M):
        assert (ROOT / path).exists(), f"Dockerfile copies missing {path}"


def test_dockerfile_keeps_build_secrets_and_tools_out_of_the_image() -> None:
    """pip's CA bundle is a build secret (mounted for one RUN), never copied; the runtime
    stage takes only the venv from the build stage."""
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert not re.search(r"^(COPY|ADD)\b.*(\.crt|\.pem|certs)", text, re.M | re.I)
    assert "--mount=type=secret,id=pip-ca" in text
    runtime = text.rsplit("\nFROM ", 1)[1]
    assert re.findall(r"^COPY\s+(.*)$", runtime, re.M) == [
        "--from=build /opt/deidstream /opt/deidstream"
    ]
    assert not re.search(r"apt-get|gcc|build-essential", runtime)


def test_health_checks_follow_the_configured_port() -> None:
    """Neither the image's HEALTHCHECK nor the compose file's names a port: both ask the
    service's settings (a changed DEIDSTREAM_HTTP_PORT made them report unhealthy)."""
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    check = re.search(r"^HEALTHCHECK (?:.*\\\n)*.*$", text, re.M)
    assert check, "no HEALTHCHECK"
    check = check.group(0)
    assert "service.commands.healthcheck" in check and not re.search(r"\b8080\b", check)
    compose = load(DEPLOY / "compose.yaml")[0]["services"]["deidstream"]["healthcheck"]
    assert compose["test"] == ["CMD", "python", "-m", "service.commands.healthcheck", "--ready"]


# --------------------------------------------------------------------------- documentation


def _doc_anchors() -> set[str]:
    text = OPERATIONS.read_text(encoding="utf-8")
    anchors = set()
    for heading in re.findall(r"^#+\s+(.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


def _reason_classes() -> set[str]:
    import pipelines.errors  # noqa: F401 - registers the input error classes
    import service.runner  # noqa: F401

    seen: set[str] = set()
    stack: list[type[DeidstreamError]] = [DeidstreamError]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        ours = cls.__module__.split(".")[0] in ("pipelines", "surrogates", "keystore", "service")
        if ours and not cls.retriable and cls is not DeidstreamError:
            seen.add(cls.reason_class)
    return seen | RUNNER_REASONS


def test_operations_doc_explains_every_dead_letter_reason() -> None:
    text = OPERATIONS.read_text(encoding="utf-8")
    missing = sorted(r for r in _reason_classes() if f"`{r}`" not in text)
    assert not missing, f"docs/operations.md does not explain: {missing}"


def test_operations_doc_names_every_metric_and_setting() -> None:
    text = OPERATIONS.read_text(encoding="utf-8")
    missing = [f.name for f in Metrics().registry.collect() if f.name not in text]
    assert not missing, f"docs/operations.md does not name: {missing}"
    unset = sorted(n for n in settings_env_names() if n not in text)
    assert not unset, f"docs/operations.md does not list: {unset}"


# --------------------------------------------------------------------------- external tools


promtool = pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")


@promtool
def test_promtool_checks_the_rules_and_the_config() -> None:
    for args in (
        ["check", "rules", "alerts.yml"],
        ["check", "config", "prometheus.yml"],
        ["test", "rules", "alerts.test.yml"],
    ):
        proc = subprocess.run(
            ["promtool", *args],
            cwd=DEPLOY / "prometheus",
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kustomize_builds_the_manifests() -> None:
    proc = subprocess.run(
        ["kubectl", "kustomize", str(K8S)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    kinds = {d["kind"] for d in yaml.safe_load_all(proc.stdout) if d}
    assert kinds == {"ServiceAccount", "ConfigMap", "Deployment", "Service", "PodDisruptionBudget"}


def test_compose_file_matches_the_compose_specification() -> None:
    # check-jsonschema and kubernetes-validate are dev dependencies: never skipped
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.compose-spec",
            str(DEPLOY / "compose.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_k8s_objects_match_the_kubernetes_schemas() -> None:
    import kubernetes_validate

    objects = k8s_objects()
    secret = load(K8S / "secret.example.yaml")[0]
    assert secret["metadata"]["name"] == "deidstream-secrets"
    for doc in [*objects.values(), secret]:
        # strict: unknown fields (typos such as "readinesProbe") are errors too
        kubernetes_validate.validate(doc, "1.30", strict=True)


def test_grafana_provisioning_finds_the_mounted_dashboard() -> None:
    grafana = load(DEPLOY / "compose.yaml")[0]["services"]["grafana"]
    mounts = dict(m.split(":")[:2] for m in grafana["volumes"])
    target = mounts["./grafana/deidstream.json"]
    provider = load(DEPLOY / "grafana" / "provisioning" / "dashboards" / "deidstream.yaml")[0]
    assert provider["providers"][0]["options"]["path"] == str(Path(target).parent)
    datasource = load(DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yaml")[0]
    dash = load(DASHBOARD)[0]
    default = next(v for v in dash["templating"]["list"] if v["name"] == "datasource")
    assert datasource["datasources"][0]["uid"] == default["current"]["value"]


# --------------------------------------------------------------------------- image scripts


def _bare_path(tmp_path: Path, tools: tuple[str, ...]) -> str:
    """A PATH with only ``tools`` on it (no podman, no apt-get)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def test_make_image_without_podman_or_apt_fails_in_one_line(tmp_path: Path) -> None:
    path = _bare_path(tmp_path, ("bash", "dirname"))
    proc = subprocess.run(
        ["bash", str(DEPLOY / "build-image.sh")],
        env={"PATH": path},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "make image: missing podman runc slirp4netns catatonit, and no apt-get to install them"
        " (install: podman runc slirp4netns catatonit)"
    ]


def test_the_base_image_script_without_debootstrap_fails_in_one_line(tmp_path: Path) -> None:
    path = _bare_path(tmp_path, ("bash", "dirname", "grep", "sha256sum", "cut"))
    proc = subprocess.run(
        ["bash", str(DEPLOY / "base-image.sh")],
        env={"PATH": path},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "base-image: debootstrap is not installed (apt-get install debootstrap)"
    ]


def test_podman_settings_are_what_this_kind_of_host_needs() -> None:
    """runc (crun 1.8 fails on cgroup v1/hybrid), cgroupfs, file events, explicit limits:
    the file every podman call of make image / image-test reads (CONTAINERS_CONF)."""
    conf = tomllib.loads((DEPLOY / "podman" / "containers.conf").read_text(encoding="utf-8"))
    assert conf["engine"] == {
        "runtime": "runc",
        "cgroup_manager": "cgroupfs",
        "events_logger": "file",
    }
    limits = dict(x.split("=", 1) for x in conf["containers"]["default_ulimits"])
    assert set(limits) == {"nofile", "nproc"}
    for soft, hard in (v.split(":") for v in limits.values()):
        assert int(soft) <= int(hard)
    for script in ("build-image.sh", "base-image.sh"):
        assert "podman/containers.conf" in (DEPLOY / script).read_text(encoding="utf-8")
