"""Migrations run once under an owner role; the service runs with a DML-only role (issue 14,
item 2). Connecting never runs DDL; a missing or old schema is a retriable schema fault."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest

from keystore import Keyring, open_store
from keystore.backend import SCHEMA_VERSION
from keystore.errors import (
    FaultKind,
    KeystoreFault,
    KeystorePermissionFault,
    KeystoreSchemaFault,
)

ADMIN = "postgresql://postgres@127.0.0.1:5432/test"


@dataclass
class Setup:
    schema: str
    role: str

    @property
    def owner_url(self) -> str:
        return f"{ADMIN}?schema={self.schema}"

    @property
    def service_url(self) -> str:
        return f"postgresql://{self.role}@127.0.0.1:5432/test?schema={self.schema}"


def _schema_exists(schema: str) -> bool:
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        return (
            conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
            is not None
        )


@pytest.fixture
def setup(pg_url: str) -> Iterator[Setup]:
    tag = uuid.uuid4().hex[:10]
    made = Setup(f"ks_role_{tag}", f"ks_svc_{tag}")
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{made.role}" LOGIN')
    try:
        yield made
    finally:
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (made.role,),
            )
            conn.execute(f'DROP SCHEMA IF EXISTS "{made.schema}" CASCADE')
            conn.execute(f'DROP OWNED BY "{made.role}"')
            conn.execute(f'DROP ROLE "{made.role}"')


def test_opening_without_migrating_creates_nothing(setup: Setup) -> None:
    keyring = Keyring.generate()
    with pytest.raises(KeystoreSchemaFault, match="keys migrate") as info:
        open_store(setup.owner_url, keyring, migrate=False)
    assert info.value.retriable and info.value.kind is FaultKind.SCHEMA
    assert not _schema_exists(setup.schema)  # no CREATE SCHEMA on connect any more
    with open_store(setup.owner_url, keyring, migrate=True) as store:  # `keys migrate`
        assert store.schema_version == SCHEMA_VERSION
    with open_store(setup.owner_url, keyring, migrate=False) as store:
        assert store.schema_version == SCHEMA_VERSION


def test_the_service_role_has_dml_only(setup: Setup) -> None:
    keyring = Keyring.generate()
    with open_store(setup.owner_url, keyring) as owner:
        statements = owner.admin.grant_service(setup.role)
    assert all(s.startswith("GRANT ") for s in statements)
    # the service: migrate=True on a current store reads the version and changes nothing
    for migrate in (False, True):
        with open_store(setup.service_url, keyring, migrate=migrate) as service:
            state = service.get_or_create("H", f"p{migrate}", lambda: service.new_state(7))
            state.name_map["a"] = "B"
            service.save("H", f"p{migrate}", state)
            service.flush()
            assert service.compare_and_set_marks([(f"m{migrate}", None, b"1")]) == [True]
            assert service.prune_marks() == 0
            with pytest.raises(KeystorePermissionFault):  # admin only
                service.admin.forget("H", f"p{migrate}")
    with psycopg.connect(setup.service_url.split("?")[0], autocommit=True) as conn:
        for ddl in (
            f'CREATE TABLE "{setup.schema}".x (a int)',
            f'ALTER TABLE "{setup.schema}".patients ADD COLUMN x int',
            f'DROP TABLE "{setup.schema}".marks',
            f'TRUNCATE "{setup.schema}".audit',
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(ddl)


def test_a_schema_dropped_under_the_service_is_a_fault_not_recreated(setup: Setup) -> None:
    keyring = Keyring.generate()
    with open_store(setup.owner_url, keyring) as owner:
        owner.admin.grant_service(setup.role)
    service = open_store(setup.service_url, keyring)
    try:
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (setup.role,),
            )
            conn.execute(f'DROP SCHEMA "{setup.schema}" CASCADE')
        errors = []
        for _ in range(2):  # the lost connection, then the reconnect finding no tables
            with pytest.raises(KeystoreFault) as info:
                service.get_mark("x")
            errors.append(info.value.kind)
        assert errors == [FaultKind.CONNECTION, FaultKind.SCHEMA]
        assert not _schema_exists(setup.schema)
    finally:
        service._dirty.clear()  # noqa: SLF001
        service.close()


def test_the_service_role_runs_the_review_queue(setup: Setup) -> None:
    """The review tables come with `keys migrate` (migration 5) and the service's grants
    cover them: as the DML-only role the queue takes a held note, a site decision writes a
    list entry, undo takes it back; reviewer accounts are the owner's (`review add-user`)."""
    from pipelines.document import ClinicalDocument, Identifiers, PersonName
    from pipelines.phi.detector import Detector
    from pipelines.policy import Policy
    from pipelines.review import Decision, DecisionKind, ReviewQueue, Role, Scope
    from service.review.auth import add_account, check_login

    keyring = Keyring.generate()
    with open_store(setup.owner_url, keyring) as owner:
        owner.admin.grant_service(setup.role)
        add_account(ReviewQueue(owner), "ana", "a long enough secret", Role.REVIEWER)
    note = ClinicalDocument(  # an invented relative
        text="Seen with Orvella Stanch today.\n",
        patient_id="P-1",
        assigning_authority="H",
        identifiers=Identifiers(relative_names=(PersonName(family="Stanch", given=("Orvella",)),)),
    )
    with open_store(setup.service_url, keyring, migrate=False) as service:
        queue = ReviewQueue(service, lists_ttl_s=0.0)
        ids = queue.enqueue(
            note,
            Detector(Policy.from_mapping({"recognizers": {}})),
            coordinates="in:0:1",
            held_reason=("leak_guard", "r"),
        )
        span = next(i for i in (queue.item(x) for x in ids) if i and i.candidate is not None)
        queue.decide(
            Decision(
                span.id, "ana", Role.REVIEWER, DecisionKind.PHI, span.candidate.category, Scope.SITE
            )
        )  # type: ignore[union-attr]
        assert not queue.lists().empty
        assert span.id in queue.undo("ana")
        assert queue.lists().empty
        assert check_login(queue, "ana", "a long enough secret") is Role.REVIEWER
        with pytest.raises(KeystorePermissionFault):
            add_account(queue, "eve", "a long enough secret", Role.EXPERT)
