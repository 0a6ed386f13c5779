"""The exposition parses, follows Prometheus naming, and each Metrics has its own registry."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from prometheus_client.parser import text_string_to_metric_families

from service.metrics import Metrics


def _exercised() -> Metrics:
    m = Metrics()
    m.consumed.labels("clinical.hl7v2", "hl7v2").inc(3)
    m.published.labels("document").inc(2)
    m.dropped.labels("duplicate").inc()
    m.deadlettered.labels("not_hl7").inc()
    m.held.labels("leak_guard").inc()
    m.phi_spans.labels("NAME").inc(4)
    m.stage_seconds.labels("detect").observe(0.002)
    m.end_to_end_seconds.observe(0.05)
    m.lag.labels("clinical.hl7v2", "0").set(5)
    with m.keystore_timer("get_mark"):
        pass
    with pytest.raises(RuntimeError), m.keystore_timer("flush"):
        raise RuntimeError("db down")
    m.retries.labels("publish").inc()
    m.in_flight.set(1)
    return m


def test_exposition_parses_and_follows_naming() -> None:
    body, content_type = _exercised().exposition()
    assert content_type.startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    for name, family in families.items():
        assert name.startswith("deidstream_"), name
        if family.type == "counter":
            assert all(s.name.endswith(("_total", "_created")) for s in family.samples), name
        if family.type == "histogram":
            assert name.endswith("_seconds"), name
    wanted = {
        "deidstream_build_info",
        "deidstream_messages_consumed",
        "deidstream_documents_published",
        "deidstream_documents_dropped",
        "deidstream_messages_deadlettered",
        "deidstream_documents_held",
        "deidstream_phi_spans",
        "deidstream_processing_stage_seconds",
        "deidstream_end_to_end_latency_seconds",
        "deidstream_consumer_lag_messages",
        "deidstream_keystore_operations",
        "deidstream_keystore_operation_seconds",
        "deidstream_retries",
        "deidstream_messages_in_flight",
    }
    assert wanted <= set(families)


def test_values_and_keystore_timer() -> None:
    m = _exercised()
    assert (
        m.value("deidstream_messages_consumed_total", topic="clinical.hl7v2", source="hl7v2") == 3
    )
    assert m.value("deidstream_keystore_operations_total", operation="get_mark", result="ok") == 1
    assert m.value("deidstream_keystore_operations_total", operation="flush", result="error") == 1
    assert m.value("deidstream_keystore_operation_seconds_count", operation="flush") == 1
    assert m.value("deidstream_absent_total") == 0


def test_registries_are_independent() -> None:
    a, b = Metrics(), Metrics()
    a.published.labels("document").inc()
    assert b.value("deidstream_documents_published_total", kind="document") == 0
    assert a.registry is not b.registry


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_promtool_accepts_the_exposition() -> None:
    body, _ = _exercised().exposition()
    proc = subprocess.run(
        ["promtool", "check", "metrics"], input=body, capture_output=True, timeout=30, check=False
    )
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()


def test_stage_histogram_buckets_and_labels() -> None:
    m = Metrics()
    # on a bound, between bounds, below the first, above the last, zero
    for stage, value in [
        ("detect", 0.0001),
        ("detect", 0.0003),
        ("detect", 0.00001),
        ("detect", 7.5),
        ("parse", 0.0),
        ("parse", 1.0),
    ]:
        m.stage_seconds.labels(stage).observe(value)
    name = "deidstream_processing_stage_seconds"
    assert m.value(f"{name}_bucket", stage="detect", le="0.0001") == 2  # a bound is inclusive
    assert m.value(f"{name}_bucket", stage="detect", le="0.0005") == 3
    assert m.value(f"{name}_bucket", stage="detect", le="1.0") == 3
    assert m.value(f"{name}_bucket", stage="detect", le="+Inf") == 4
    assert m.value(f"{name}_count", stage="detect") == 4
    assert m.value(f"{name}_sum", stage="parse") == 1.0
    m.end_to_end_seconds.observe(0.02)  # no labels
    assert m.value("deidstream_end_to_end_latency_seconds_count") == 1
    with pytest.raises(ValueError, match="label"):
        m.stage_seconds.labels("detect", "extra")
