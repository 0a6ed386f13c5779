"""The real pipeline behind the real service: demo HL7 + FHIR in, research documents out."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from demo_identifiers import DEMO_IDENTIFIERS, identifiers_in
from fhir.resources.R4B.documentreference import DocumentReference
from kafka_helpers import headers_of, read_all, unique
from prometheus_client.parser import text_string_to_metric_families

from keystore.keyring import Keyring
from service.broker import EmbeddedBroker, free_port
from service.commands.demo import demo_files, run_demo
from service.commands.replay import messages_of, publish
from service.commands.run import serve
from service.metrics import Metrics
from service.runner import Runner
from service.settings import Settings
from service.wiring import real_processor_factory

pytestmark = pytest.mark.integration

KNOWN = DEMO_IDENTIFIERS


def _own_identifiers(resource: dict[str, Any]) -> list[str]:
    """The KNOWN identifiers found in the inputs this document came from (the demo files
    that carry its report type code). Other patients' identifiers are not checked: a
    surrogate drawn from the name lists may by chance be another demo patient's real name
    ("Vance" as a surrogate surname in another patient's note is no leak)."""
    codes = {c["code"] for c in resource["type"].get("coding", ())}
    sources = [p.read_text("utf-8", "replace") for p in demo_files()]
    inputs = [
        t for t in sources if any(f"|{code}^" in t or f'"code": "{code}"' in t for code in codes)
    ]
    return [ident for ident in KNOWN if any(ident in t for t in inputs)]


def pipeline_settings(broker: EmbeddedBroker, tmp: Path, **over: Any) -> Settings:
    base = unique("p")
    values: dict[str, Any] = dict(
        bootstrap_servers=broker.bootstrap_servers,
        input_topics=(f"{base}.hl7v2", f"{base}.fhir"),
        research_topic=f"{base}.research",
        deadletter_topic=f"{base}.dlq",
        held_topic=f"{base}.held",
        group_id=f"{base}.g",
        keystore_url=f"sqlite:///{tmp / 'keystore.sqlite3'}",
        master_key=Keyring.generate().to_text(),
        http_port=free_port(),
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        retry_initial_seconds=0.05,
        retry_max_seconds=0.5,
    )
    values.update(over)
    return Settings(**values)


def _promtool(exposition: str) -> str | None:
    check = subprocess.run(
        ["promtool", "check", "metrics"],
        input=exposition.encode(),
        capture_output=True,
        timeout=30,
        check=False,
    )
    return None if check.returncode == 0 else check.stdout.decode() + check.stderr.decode()


async def _until(pred: Any, within: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while loop.time() < end:
        if pred():
            return
        await asyncio.sleep(0.1)
    raise AssertionError("condition not reached in time")


async def test_demo_messages_through_the_service(tansu: EmbeddedBroker, tmp_path: Path) -> None:
    s = pipeline_settings(tansu, tmp_path, api_token="st")
    metrics = Metrics()
    runner = Runner(s, metrics, real_processor_factory(s, metrics))
    stop = asyncio.Event()
    service = asyncio.create_task(serve(s, stop=stop, runner=runner))
    base = f"http://127.0.0.1:{s.http_port}"
    try:
        await _until(lambda: runner.ready or service.done())
        assert not service.done()
        total = 0
        for path in demo_files():
            topic = s.input_topics[0] if path.suffix == ".hl7" else s.input_topics[1]
            total += await publish(s.bootstrap_servers, topic, list(messages_of(path)))
        # consumed and fetched is not yet acknowledged: the output counters move on the
        # broker's ack, so wait until nothing fetched is left uncommitted
        await _until(
            lambda: (
                runner.counts["consumed"] == total
                and runner.status()["total_lag"] == 0
                and runner.in_flight == 0
            )
        )
        async with httpx.AsyncClient(base_url=base) as http:
            ready = await http.get("/readyz")
            exposition = (await http.get("/metrics")).text
            status = (await http.get("/v1/status", headers={"Authorization": "Bearer st"})).json()
    finally:
        stop.set()
        assert await service == 0  # drained and exited cleanly

    research = await read_all(s.bootstrap_servers, s.research_topic, expect=6)
    dead = await read_all(s.bootstrap_servers, s.deadletter_topic, expect=1)

    docs = [r for r in research if r.value is not None]
    tombstones = [r for r in research if r.value is None]
    # 01 (then 02, an exact resend: dropped), 03 corrected, 04, 05, 06 published; 07 tombstone
    assert len(docs) == 5 and len(tombstones) == 1
    assert len({r.key for r in docs}) == 4  # the corrected report reuses its key
    texts = []
    for r in docs:
        resource = DocumentReference.model_validate(json.loads(r.value))  # valid FHIR R4(B)
        assert resource.subject is not None and resource.subject.reference.startswith("Patient/")
        data = json.loads(r.value)["content"][0]["attachment"]["data"]
        text = base64.b64decode(data).decode()
        texts.append(text)
        whole = r.value.decode() + text
        own = _own_identifiers(json.loads(r.value))
        assert own, "no demo input matches the document's type"
        left = identifiers_in(whole, own)
        assert not left, f"known identifier left in {headers_of(r)['version']}"
        assert headers_of(r)["content-type"] == "application/fhir+json"
    corrected = [r for r in docs if "replaces" in headers_of(r)]
    assert len(corrected) == 1
    assert any("pleural effusion" in t for t in texts)  # the correction's content is kept
    okonkwo_key = tombstones[0].key
    assert sum(1 for r in docs if r.key == okonkwo_key) == 1  # published, then removed

    assert len(dead) == 1
    h = headers_of(dead[0])
    assert h["reason-class"] == "not_hl7" and dead[0].value.startswith(b"PATIENT ADMIT NOTE")

    assert ready.status_code == 200 and ready.json()["ready"] is True
    assert status["counts"]["consumed"] == 8 and status["total_lag"] == 0
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
    }

    def value(name: str, **labels: str) -> float:
        return samples.get((name, tuple(sorted(labels.items()))), 0.0)

    assert value("deidstream_messages_consumed_total", topic=s.input_topics[0], source="hl7v2") == 7
    assert value("deidstream_messages_consumed_total", topic=s.input_topics[1], source="fhir") == 1
    assert value("deidstream_documents_published_total", kind="document") == 5
    assert value("deidstream_documents_published_total", kind="tombstone") == 1
    assert value("deidstream_documents_dropped_total", reason="duplicate") == 1
    assert value("deidstream_messages_deadlettered_total", reason_class="not_hl7") == 1
    assert value("deidstream_end_to_end_latency_seconds_count") == 6
    assert sum(v for (n, _), v in samples.items() if n == "deidstream_phi_spans_total") > 10
    assert (
        sum(v for (n, _), v in samples.items() if n == "deidstream_keystore_operations_total") > 0
    )
    assert value("deidstream_processing_stage_seconds_count", stage="parse") >= 7
    if shutil.which("promtool"):  # the Prometheus linter, where installed
        problems = _promtool(exposition)
        assert problems is None, problems


async def test_demo_command_runs_to_the_end(tmp_path: Path) -> None:
    lines: list[str] = []

    def echo(message: str = "", err: bool = False) -> None:
        lines.extend(str(message).splitlines())

    from service.broker import find_tansu

    if find_tansu() is None:
        pytest.skip("no tansu binary")
    assert await run_demo(tmp_path, exit_after=0, echo=echo) == 0
    out = "\n".join(lines)
    assert out.count("=== research document") == 3
    assert "reason-class     : not_hl7" in out
    # each input's story (issue 15 item 8), and "1 tombstone", singular
    story = {line.split()[0]: line for line in lines if line.startswith("  0")}
    assert len(story) == len(demo_files())
    assert "later replaced by its correction 03_" in story["01_oru_vance_chest_xray.hl7"]
    assert "duplicate" in story["02_oru_vance_chest_xray_resent.hl7"]
    assert "replacing the version from 01_" in story["03_oru_vance_chest_xray_corrected.hl7"]
    assert "tombstone for research key" in story["07_oru_okonkwo_ecg_entered_in_error.hl7"]
    assert "dead letter [not_hl7]" in story["08_malformed.hl7"]
    assert "1 tombstone (entered-in-error)" in out
    assert "/metrics" in out and "stopped the service and the broker" in out
    # the right-hand column (research text) never shows a demo identifier
    right = "\n".join(line.split(" | ", 1)[1] for line in lines if " | " in line)
    for ident in ("Vance", "Hartley", "Raman", "100234", "555-0142", "Birch Lane"):
        assert ident not in right


def _first_demo_message() -> bytes:
    return demo_files()[0].read_bytes()


async def test_deidentify_endpoint_with_the_real_pipeline(tmp_path: Path) -> None:
    """POST one demo message: the research document comes back; asking twice gives the same
    document (private marks: previews never become duplicates), and the shared store's marks
    stay empty, so the stream would still publish it."""
    from service.app import create_app

    s = Settings(
        keystore_url=f"sqlite:///{tmp_path / 'ks.sqlite3'}",
        master_key=Keyring.generate().to_text(),
        deidentify_api_enabled=True,
        api_token="t0ken",
    )
    metrics = Metrics()
    runner = Runner(s, metrics, real_processor_factory(s, metrics))
    app = create_app(s, runner=runner, start_runner=False)
    await runner.prepare_processor()
    raw = _first_demo_message()
    headers = {"Authorization": "Bearer t0ken", "Content-Type": "x-application/hl7-v2+er7"}
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t"
        ) as http:
            first = (await http.post("/v1/deidentify", content=raw, headers=headers)).json()
            again = (await http.post("/v1/deidentify", content=raw, headers=headers)).json()
            bad = await http.post("/v1/deidentify", content=b"MSH|broken", headers=headers)
        assert [o["kind"] for o in first["outcomes"]] == ["publish"]
        assert again["outcomes"][0]["kind"] == "publish"
        assert again["outcomes"][0]["research_key"] == first["outcomes"][0]["research_key"]
        doc = first["outcomes"][0]["document"]
        DocumentReference.model_validate(doc)
        text = base64.b64decode(doc["content"][0]["attachment"]["data"]).decode()
        for ident in ("Vance", "Eleanor", "100234", "555-0142", "Birch Lane"):
            assert ident not in text
        assert bad.status_code == 422 and bad.json()["reason_class"]
        processor = runner.worker.processor  # inspect the stream's store
        store = processor._store  # noqa: SLF001
        assert store.get_mark(first["outcomes"][0]["research_key"]) is None
    finally:
        await runner.stop()


async def test_dead_letter_carries_hl7apy_findings(tansu: EmbeddedBroker, tmp_path: Path) -> None:
    s = pipeline_settings(tansu, tmp_path)
    metrics = Metrics()
    runner = Runner(s, metrics, real_processor_factory(s, metrics))
    runner.start_background()
    no_patient = (
        b"MSH|^~\\&|A|B|C|D|20250101||ORU^R01|77|P|2.5\rPID|1||\rOBX|1|TX|x||some text||||||F\r"
    )
    try:
        await _until(lambda: runner.ready)
        await publish(s.bootstrap_servers, s.input_topics[0], [(None, no_patient)])
        await _until(lambda: runner.counts["deadlettered"] == 1)
    finally:
        await runner.stop()
    dead = await read_all(s.bootstrap_servers, s.deadletter_topic, expect=1)
    h = headers_of(dead[0])
    assert h["reason-class"] == "missing_patient_id"
    assert "PID" in h["hl7-findings"]
    assert dead[0].value == no_patient
