"""At DEBUG the service's log carries no PHI (issue 14, item 10).

``deidstream run`` as an operator starts it — a subprocess, ``DEIDSTREAM_LOG_LEVEL=debug``,
a real Tansu broker — processes the demo's HL7 and FHIR inputs, then stops on SIGTERM. Every
line it wrote (stdout and stderr) is scanned for the inputs' identifiers: none may appear.
aiokafka's DEBUG lines printed fetched records and produced values before the payload-seeing
third-party loggers were held at WARNING (``service/logs.py``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from demo_identifiers import IN_LOG_LINES
from kafka_helpers import unique
from service_process import ServiceProcess

from keystore.keyring import Keyring
from service.broker import EmbeddedBroker, free_port
from service.commands.demo import demo_files
from service.commands.replay import messages_of, publish
from service.logs import PAYLOAD_LOGGERS, configure_logging

pytestmark = pytest.mark.integration

KNOWN = IN_LOG_LINES


def _environment(bootstrap: str, tmp: Path, http_port: int) -> dict[str, str]:
    base = unique("dbg")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEIDSTREAM_")}
    env.update(
        DEIDSTREAM_LOG_LEVEL="debug",
        DEIDSTREAM_BOOTSTRAP_SERVERS=bootstrap,
        DEIDSTREAM_INPUT_TOPICS=f"{base}.hl7v2,{base}.fhir",
        DEIDSTREAM_RESEARCH_TOPIC=f"{base}.research",
        DEIDSTREAM_DEADLETTER_TOPIC=f"{base}.dlq",
        DEIDSTREAM_HELD_TOPIC=f"{base}.held",
        DEIDSTREAM_GROUP_ID=f"{base}.g",
        DEIDSTREAM_KEYSTORE_URL=f"sqlite:///{tmp / 'keystore.sqlite3'}",
        DEIDSTREAM_MASTER_KEY=Keyring.generate().to_text(),
        DEIDSTREAM_HTTP_PORT=str(http_port),
        DEIDSTREAM_SESSION_TIMEOUT_MS="6000",
        DEIDSTREAM_HEARTBEAT_INTERVAL_MS="500",
    )
    return env


async def test_the_stream_at_debug_logs_no_identifier(
    tansu: EmbeddedBroker, tmp_path: Path
) -> None:
    port = free_port()
    token = "status-" + unique("t")
    env = _environment(tansu.bootstrap_servers, tmp_path, port)
    env["DEIDSTREAM_API_TOKEN"] = token
    log_path = tmp_path / "service.log"
    service = ServiceProcess(env, log_path)
    try:
        await service.status(lambda st: st["ready"], within=90)
        total = 0
        topics = env["DEIDSTREAM_INPUT_TOPICS"].split(",")
        for path in demo_files():
            topic = topics[0] if path.suffix == ".hl7" else topics[1]
            total += await publish(tansu.bootstrap_servers, topic, list(messages_of(path)))
        await service.status(
            lambda st: (
                st.get("counts", {}).get("consumed", 0) >= total
                and st.get("total_lag") == 0
                and st.get("in_flight", 0) == 0
            ),
            within=90,
        )
    finally:
        service.stop()
    lines = log_path.read_text("utf-8", "replace").splitlines()
    # the run logged at DEBUG (our own loggers), or the scan would prove nothing
    assert any(" DEBUG " in line for line in lines), lines[:20]
    leaks = [(ident, line[:160]) for line in lines for ident in KNOWN if ident in line]
    assert leaks == [], f"{len(leaks)} log lines carry identifiers, e.g. {leaks[:3]}"


def test_payload_loggers_stay_at_warning_whatever_the_level() -> None:
    root = logging.getLogger()
    before = root.level, list(root.handlers)
    saved = {name: logging.getLogger(name).level for name in PAYLOAD_LOGGERS}
    try:
        configure_logging("debug")
        for name in (
            "aiokafka",
            "aiokafka.consumer.fetcher",
            "psycopg",
            "uvicorn.access",
            "httpx",
            "hl7apy",
        ):
            assert not logging.getLogger(name).isEnabledFor(logging.INFO), name
        configure_logging("error")
        assert not logging.getLogger("aiokafka").isEnabledFor(logging.WARNING)
    finally:
        root.setLevel(before[0])
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)
