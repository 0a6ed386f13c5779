"""Key store fixtures: a keyring, SQLite stores in tmp dirs, a PostgreSQL schema per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import typer

from keystore import EncryptedStore, Keyring, open_store
from service.commands.keys import register

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


@pytest.fixture
def keyring() -> Keyring:
    return Keyring.generate("test-a")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ks.sqlite3'}"


@pytest.fixture
def store(sqlite_url: str, keyring: Keyring) -> Iterator[EncryptedStore]:
    s = open_store(sqlite_url, keyring)
    yield s
    s.close()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh schema in the test database, dropped afterwards (parallel runs never collide)."""
    try:
        admin = psycopg.connect(PG_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        pytest.skip("PostgreSQL on 127.0.0.1:5432 is not reachable")
    schema = f"ks_test_{uuid.uuid4().hex[:12]}"
    try:
        yield f"{PG_URL}?schema={schema}"
    finally:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.close()


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> typer.Typer:
    """The ``keys`` command group alone, run in a clean directory with no key store settings."""
    monkeypatch.chdir(tmp_path)
    for name in ("DEIDSTREAM_KEYSTORE_URL", "DEIDSTREAM_MASTER_KEY", "DEIDSTREAM_MASTER_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """Test root."""

    register(app)
    return app
