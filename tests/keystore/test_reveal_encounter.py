"""Issue 23 item 7: `keys reveal Encounter/<pseudonym>` finds the visit of a document taken
from the research output — ORU, MDM and FHIR, published by the real pipeline through the
real key store (SQLite and PostgreSQL), with and without an ADT for the visit first."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from keystore import Keyring, open_store
from pipelines.outcome import OutcomeKind
from pipelines.policy import Policy
from pipelines.process import Processor

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
# (fixture, content hint, the visit id in it)
SOURCES = [
    ("versions/01_preliminary.hl7", "hl7v2", "VIS7788"),  # ORU^R01, PV1-19
    ("hl7v2/mdm-t02-v25.hl7", "hl7v2", "V5521"),  # MDM^T02
    ("fhir/docref-r4-plain.json", "fhir", "enc-1"),  # DocumentReference.context.encounter
]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'keys.sqlite3'}"
    else:
        yield request.getfixturevalue("pg_url")


def _encounters(url: str, keyring: Keyring, names: list[tuple[str, str]]) -> list[str]:
    """Publish each input through the pipeline; the Encounter references of the output."""
    store = open_store(url, keyring)
    try:
        proc = Processor(policy=Policy.load(), store=store)
        refs = []
        for name, hint in names:
            outcomes = proc.process((FIXTURES / name).read_bytes(), content_hint=hint, now=NOW)
            proc.commit(outcomes)
            for out in outcomes:
                if out.kind is OutcomeKind.PUBLISH and out.value is not None:
                    resource = json.loads(out.value)
                    refs.append(resource["context"]["encounter"][0]["reference"])
        return refs
    finally:
        store.close()


@pytest.mark.parametrize("adt_first", [False, True])
def test_reveal_finds_the_visit_of_a_published_document(
    cli: typer.Typer,
    store_url: str,
    monkeypatch: pytest.MonkeyPatch,
    adt_first: bool,
) -> None:
    keyring = Keyring.generate()
    inputs = [(name, hint) for name, hint, _ in SOURCES]
    if adt_first:
        inputs.insert(0, ("versions/00_admit_context.hl7", "hl7v2"))
    refs = _encounters(store_url, keyring, inputs)
    assert len(refs) == len(SOURCES)
    assert all(ref.startswith("Encounter/") for ref in refs)

    monkeypatch.setenv("DEIDSTREAM_KEYSTORE_URL", store_url)
    monkeypatch.setenv("DEIDSTREAM_MASTER_KEY", keyring.to_text())
    for ref, (_, _, visit) in zip(refs, SOURCES, strict=True):
        result = CliRunner().invoke(
            cli, ["keys", "reveal", ref, "--reason", "IRB-12", "--operator", "officer"]
        )
        assert result.exit_code == 0, result.output
        found = json.loads(result.output.strip().splitlines()[-1])
        assert found["visit_id"] == visit
