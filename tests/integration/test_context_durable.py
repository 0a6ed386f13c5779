"""Issue 23 item 6: nothing acknowledged is lost. An ADT message (context only: next of kin,
aliases, the visit) publishes nothing; once its offset is committed, kill -9 of the worker
must not lose the patient's context — it is in the key store (SQLite and PostgreSQL)
before the offset commits, and the restarted service's leak guard knows it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from kafka_helpers import produce, unique
from service_process import ServiceProcess, Status

from keystore import open_store
from keystore.keyring import Keyring
from pipelines.patient_context import context_of, visits_of
from service.broker import EmbeddedBroker, free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]

STATUS_TOKEN = "context-durable-status"
# invented people and numbers
ADT = (
    b"MSH|^~\\&|ADT|NORTHCLINIC|DEID|RESEARCH|20250301080000||ADT^A08|CTX0001|P|2.5\r"
    b"EVN|A08|20250301080000\r"
    b"PID|1||MRN770021^^^NORTHCLINIC^MR||Quillfeather^Amabel||19610412|F\r"
    b"NK1|1|Thistlewood^Barnaby|SPO|||218-555-0111\r"
    b"PV1|1|I|W2^201^1||||||||||||||||VN55012^^^NORTHCLINIC^VN\r"
)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'keystore.sqlite3'}"
        return
    pg_url = request.getfixturevalue("pg_url")
    schema = f"deid_ctx_{uuid.uuid4().hex[:10]}"
    try:
        yield f"{pg_url}?schema={schema}"
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _env(broker: EmbeddedBroker, base: str, store_url: str, key: str) -> dict[str, str]:
    return {
        **os.environ,
        "DEIDSTREAM_BOOTSTRAP_SERVERS": broker.bootstrap_servers,
        "DEIDSTREAM_INPUT_TOPICS": f"{base}.hl7v2",
        "DEIDSTREAM_RESEARCH_TOPIC": f"{base}.research",
        "DEIDSTREAM_DEADLETTER_TOPIC": f"{base}.dlq",
        "DEIDSTREAM_HELD_TOPIC": f"{base}.held",
        "DEIDSTREAM_GROUP_ID": f"{base}.g",
        "DEIDSTREAM_KEYSTORE_URL": store_url,
        "DEIDSTREAM_MASTER_KEY": key,
        "DEIDSTREAM_WORKERS": "1",  # the process killed is the worker itself
        "DEIDSTREAM_SESSION_TIMEOUT_MS": "6000",
        "DEIDSTREAM_HEARTBEAT_INTERVAL_MS": "500",
        "DEIDSTREAM_LOG_LEVEL": "warning",
        "DEIDSTREAM_API_TOKEN": STATUS_TOKEN,
    }


def _committed_all(st: Status) -> bool:
    """The input was consumed and every partition holding records is committed to its end."""
    used = [p for p in st["assignments"] if p["highwater"]]
    return (
        st["counts"].get("context", 0) >= 1
        and bool(used)
        and all(p["committed"] is not None and p["committed"] >= p["highwater"] for p in used)
    )


async def test_an_acknowledged_adt_context_survives_kill_9(
    tansu: EmbeddedBroker, tmp_path: Path, store_url: str
) -> None:
    base = unique("ctxdur")
    key = Keyring.generate().to_text()
    service = ServiceProcess(
        _env(tansu, base, store_url, key), tmp_path / "svc.log", port=free_port()
    )
    try:
        await service.status(lambda st: st["ready"], within=90)
        await produce(tansu.bootstrap_servers, f"{base}.hl7v2", [(b"MRN770021", ADT)])
        # the ADT was consumed and its offset committed; then the worker dies at once
        await service.status(_committed_all, within=60)
        service.kill()
    finally:
        service.kill()

    store = open_store(store_url, Keyring.parse(key))
    try:
        (identity,) = store.admin.find_patient("MRN770021")
        state = store.get(identity.authority, identity.patient_id)
        assert state is not None
        context = context_of(state)
        assert context is not None, "the acknowledged ADT's context was lost"
        assert {n.family for n in context.relative_names} == {"Thistlewood"}
        assert "VN55012" in visits_of(state)  # the visit, for `keys reveal Encounter/...`
    finally:
        store.close()
