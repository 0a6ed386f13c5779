"""A forget reaches the patient's version marks (issue 23 item 1), on SQLite and PostgreSQL.

A version mark is addressed by the research key (a pseudonym of the patient's seed, the visit
and the report type) and holds the real filing time of the key's current version, sealed
under a key from the store root — which survives rotation. Before, `keys forget` left them:
anyone with a current master key and the research output's message keys could read the
forgotten patient's true filing times. Now the store writes, with each mark, a keyed tag of
the seed that keyed it, and the forget deletes the patient's marks with the record."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from keystore import Keyring, open_store
from pipelines.policy import Policy
from pipelines.process import Processor

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "versions"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _raw(name: str) -> bytes:
    return next(FIXTURES.glob(f"{name}_*.*")).read_bytes()


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ks.sqlite3'}"
    return str(request.getfixturevalue("pg_url"))


def _research_keys(proc: Processor, *inputs: bytes) -> set[str]:
    keys: set[str] = set()
    for data in inputs:
        outcomes = proc.process(data, content_hint="hl7v2", now=NOW)
        proc.commit(outcomes)
        keys |= {o.research_key for o in outcomes if o.research_key}
    return keys


def test_forget_deletes_the_patients_version_marks(url: str) -> None:
    keyring = Keyring.generate("marks-a")
    with open_store(url, keyring) as store:
        proc = Processor(policy=Policy.load(), store=store)
        victim = _research_keys(proc, _raw("01"), _raw("03"), _raw("06"))
        # another patient (an invented MRN in the same messages)
        other = _research_keys(proc, _raw("03").replace(b"MRN448812", b"MRN990017"))
        store.flush()
        assert victim and other and not victim & other
        assert all(store.get_mark(k) is not None for k in victim | other)
    # a later process (the marks' owners are in the database, not in memory)
    with open_store(url, keyring) as officer:
        assert officer.admin.forget("GENHOSP", "MRN448812", operator="officer")
        assert officer.admin.last_review_forget.marks == len(victim)
        assert all(officer.get_mark(k) is None for k in victim)
        assert all(officer.get_mark(k) is not None for k in other)
        backend = officer.backend
        with backend._transaction(write=False) as cur:  # noqa: SLF001
            owners = backend._exec(cur, "SELECT COUNT(DISTINCT owner) FROM mark_owners")  # noqa: SLF001
            assert owners.fetchone()[0] == 1  # the other patient's only


def test_the_owner_tags_are_written_with_the_marks_and_dropped_by_a_forget(url: str) -> None:
    """The owner rows go in the marks' own transaction; a seed's tag is made once for all
    its research keys, and a forget drops the tags kept in memory with the cached state."""
    keyring = Keyring.generate("marks-b")
    with open_store(url, keyring) as store:
        tags: list[bytes] = []
        owners = store._owners  # noqa: SLF001
        made = owners._tag  # noqa: SLF001
        owners._tag = lambda seed: tags.append(seed) or made(seed)  # noqa: SLF001
        proc = Processor(policy=Policy.load(), store=store)
        keys = _research_keys(proc, _raw("01"), _raw("03"), _raw("06"))
        assert len(keys) >= 2 and len(tags) == 1  # one patient: one tag made
        backend = store.backend
        with backend._transaction(write=False) as cur:  # noqa: SLF001
            rows = backend._exec(cur, "SELECT COUNT(*) FROM mark_owners")  # noqa: SLF001
            assert rows.fetchone()[0] == len(keys)
        assert store.admin.forget("GENHOSP", "MRN448812", operator="officer")
        assert not owners._tags  # noqa: SLF001
        assert all(store.get_mark(k) is None for k in keys)
