"""Issue 23 item 4: ``/v1/deidentify`` produces what the stream would (the reviewers' allow
/ deny lists, the same policy), never creates a patient record, and writes an audit line
for every patient state it reads — before the output (which shows the patient's real
pseudonym) is returned. On SQLite and PostgreSQL, with the real pipeline (no broker)."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg
import pytest

from keystore import Keyring, open_store
from keystore.reviewdb import LIST_BINDING, ListRow
from pipelines.phi.lists import normalise
from pipelines.review import ReviewQueue, Scope
from pipelines.spans import Category
from service.commands.demo import demo_files
from service.metrics import Metrics
from service.preview import API_OPERATOR
from service.runner import Runner
from service.settings import Settings
from service.wiring import real_processor_factory

PG = "postgresql://postgres@127.0.0.1:5432/test"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
AUTHORITY, MRN = "GENHOSP", "100234"  # the demo message's patient (invented demo data)
DENIED = "cardiomegaly"  # a word a reviewer put on the site deny list (invented decision)


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'ks.sqlite3'}"
        return
    try:
        admin = psycopg.connect(PG, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        pytest.skip("PostgreSQL on 127.0.0.1:5432 is not reachable")
    schema = f"ks_prev_{uuid.uuid4().hex[:12]}"
    try:
        yield f"{PG}?schema={schema}"
    finally:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.close()


@pytest.fixture
def key() -> Keyring:
    return Keyring.generate("prev-a")


def _settings(url: str, key: Keyring, **over: Any) -> Settings:
    return Settings(
        keystore_url=url,
        master_key=key.to_text(),
        deidentify_api_enabled=True,
        api_token="t0ken",
        **over,
    )


def _raw() -> bytes:
    return demo_files()[0].read_bytes()


def _text(outcomes: Any) -> str:
    (out,) = [o for o in outcomes if o.value]
    doc = orjson.loads(out.value)
    return base64.b64decode(doc["content"][0]["attachment"]["data"]).decode()


def _previews(url: str, key: Keyring) -> list[tuple[str, str, str]]:
    with open_store(url, key) as store:
        return [
            (line.operator, line.subject, line.outcome)
            for line in store.admin.audit_lines()
            if line.action == "preview"
        ]


def test_a_preview_creates_no_record_and_is_audited(url: str, key: Keyring) -> None:
    """Before: the preview created the patient's record and wrote no audit line."""
    processor = real_processor_factory(_settings(url, key), Metrics())()
    try:
        first = processor.preview(_raw(), content_hint="hl7v2", now=NOW)
        again = processor.preview(_raw(), content_hint="hl7v2", now=NOW)
        with open_store(url, key) as store:
            assert store.stats()["patients"] == 0
            (subject,) = store.admin.audit_subjects(AUTHORITY, MRN)
        assert _previews(url, key) == [(API_OPERATOR, subject, "unknown_patient")] * 2
        # a throwaway identity: the same when asked twice, not the one the stream draws
        assert _text(first) == _text(again)
        streamed = processor.process(_raw(), content_hint="hl7v2", now=NOW)
        assert streamed[0].research_key != first[0].research_key
    finally:
        processor.close()


def test_a_preview_of_a_known_patient_is_what_the_stream_published(url: str, key: Keyring) -> None:
    processor = real_processor_factory(_settings(url, key), Metrics())()
    try:
        streamed = _text(processor.process(_raw(), content_hint="hl7v2", now=NOW))
        previewed = _text(processor.preview(_raw(), content_hint="hl7v2", now=NOW))
        again = _text(processor.preview(_raw(), content_hint="hl7v2", now=NOW))
    finally:
        processor.close()
    assert previewed == streamed == again
    with open_store(url, key) as store:
        assert store.stats()["patients"] == 1
        subjects = store.admin.audit_subjects(AUTHORITY, MRN)
    lines = _previews(url, key)
    assert len(lines) == 2 and {s for _, s, _ in lines} <= subjects
    assert {o for _, _, o in lines} == {"read"}


def _deny_on_site(url: str, key: Keyring, word: str) -> None:
    with open_store(url, key) as store:
        queue = ReviewQueue(store)
        entry = queue._entry_id(Scope.SITE, "", queue.text_ref(word))  # noqa: SLF001
        sealed = store.seal_blob(LIST_BINDING + entry.encode(), normalise(word).encode())
        queue.db.put_list_entry(
            ListRow(entry, "deny", Scope.SITE, "", Category.NAME_OTHER.value, sealed), 1.0
        )


def test_a_preview_applies_the_reviewers_lists(url: str, key: Keyring) -> None:
    """Before: the preview's detector had no lists, so a word the reviewers denied was
    published by the stream as a surrogate and shown as it is by the preview."""
    settings = _settings(url, key, review_enabled=True)
    processor = real_processor_factory(settings, Metrics())()  # migrates the store
    try:
        assert DENIED in _text(processor.preview(_raw(), content_hint="hl7v2", now=NOW))
        _deny_on_site(url, key, DENIED)
        processor = _reopened(processor, settings)
        previewed = _text(processor.preview(_raw(), content_hint="hl7v2", now=NOW))
        streamed = _text(processor.process(_raw(), content_hint="hl7v2", now=NOW))
    finally:
        processor.close()
    assert DENIED not in streamed.lower()
    assert DENIED not in previewed.lower()


def _reopened(processor: Any, settings: Settings) -> Any:
    processor.close()
    return real_processor_factory(settings, Metrics())()


def test_no_output_without_its_audit_line(url: str, key: Keyring) -> None:
    """An audit line that cannot be written (the anchor deleted) stops the preview: 503,
    no document."""
    from tests.keystore.test_keystore_audit_anchor import tamper

    s = _settings(url, key)
    runner = Runner(s, Metrics(), real_processor_factory(s, Metrics()))

    async def post() -> httpx.Response:
        from service.app import create_app

        app = create_app(s, runner=runner, start_runner=False)
        await runner.prepare_processor()
        tamper(url, "DELETE FROM audit_head")
        try:
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://t"
            ) as http:
                return await http.post(
                    "/v1/deidentify",
                    content=_raw(),
                    headers={
                        "Authorization": "Bearer t0ken",
                        "Content-Type": "x-application/hl7-v2+er7",
                    },
                )
        finally:
            await runner.stop()

    import asyncio

    response = asyncio.run(post())
    assert response.status_code == 503
    assert "outcomes" not in response.json()


def test_the_audit_head_is_exported_on_metrics(url: str, key: Keyring) -> None:
    """Issue 23 item 2: the anchored head on /metrics (an outside record of it): it counts
    the preview's line, and says -1 once the anchor is deleted."""
    from service.wiring import AuditHeadExport

    metrics = Metrics()
    processor = real_processor_factory(_settings(url, key), metrics)()
    name = "deidstream_keystore_audit_head_seq"
    try:
        processor.ping()
        assert metrics.value(name) == 0
        processor.preview(_raw(), content_hint="hl7v2", now=NOW)
        with open_store(url, key) as store:
            export = AuditHeadExport(store, metrics, every_s=0.0)
            export()
            assert metrics.value(name) == 1
            from tests.keystore.test_keystore_audit_anchor import tamper

            tamper(url, "DELETE FROM audit_head")
            export()
            assert metrics.value(name) == -1
    finally:
        processor.close()
