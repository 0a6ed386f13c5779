"""Key rotation covers the review queue (issue 14 item 3 for issue 16's tables), on SQLite
and PostgreSQL: `keys rotate` re-wraps the queue's sealed blobs (items and list entries),
a master key any of them is still wrapped under cannot be retired (the count and the table
named, no text), and after rotate + retire every queued item still opens with the new key
alone."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from keystore import EncryptedStore, Keyring, open_store
from keystore.envelope import seal
from keystore.errors import KeyRetiredError, KeystoreError, RetireRefused
from keystore.reviewdb import ITEM_BINDING
from pipelines.phi.detector import Detector
from pipelines.review import Decision, DecisionKind, ItemStatus, ReviewQueue, Role, Scope

from .conftest import PG_URL, held_document
from .test_queue import BLIND


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'ks.sqlite3'}"
        return
    try:
        admin = psycopg.connect(PG_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        pytest.skip("PostgreSQL on 127.0.0.1:5432 is not reachable")
    schema = f"rv_rot_{uuid.uuid4().hex[:12]}"
    try:
        yield f"{PG_URL}?schema={schema}"
    finally:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.close()


def _fill(store: EncryptedStore, coordinates: str) -> tuple[list[str], list[str]]:
    """Queue a held note; decide one of its strings for the site (a list entry). Returns the
    item ids and the list entries' plaintexts as the queue reads them."""
    queue = ReviewQueue(store, lists_ttl_s=0.0)
    ids = queue.enqueue(
        held_document(), Detector(BLIND), coordinates=coordinates, held_reason=("leak_guard", "r")
    )
    span = next(i for i in (queue.item(x) for x in ids) if i and i.candidate is not None)
    queue.decide(Decision(span.id, "eve", Role.EXPERT, DecisionKind.NOT_PHI, scope=Scope.SITE))
    return ids, sorted(queue.lists().site.allow)


def _key_ids(store: EncryptedStore, table: str) -> set[str]:
    backend = store.backend
    query = f"SELECT DISTINCT key_id FROM {table}"  # noqa: S608 - a table name of ours
    with backend._transaction(write=False) as cur:  # noqa: SLF001
        return {str(r[0]) for r in backend._exec(cur, query).fetchall()}  # noqa: SLF001


def test_rotate_rewraps_the_queue_then_the_old_key_retires(url: str) -> None:
    k1, k2 = Keyring.generate("rv-k1"), Keyring.generate("rv-k2")
    with open_store(url, k1) as store:
        ids, allowed = _fill(store, "in:0:1")
        assert allowed and _key_ids(store, "review_items") == {"rv-k1"}
    new_first = k2.merged_with(k1)
    with open_store(url, new_first) as officer:
        report = officer.admin.rotate(new_first, operator="officer")
        assert not report.failed
        assert report.review_rewrapped == len(ids) + len(allowed)
        assert _key_ids(officer, "review_items") == _key_ids(officer, "review_lists") == {"rv-k2"}
        officer.admin.retire_key("rv-k1", operator="officer")
        officer.admin.check_retirable(["rv-k1"])
        again = officer.admin.rotate(new_first, operator="officer")  # nothing left to do
        assert again.review_rewrapped == 0
    # nothing unreadable: with the new key alone, every item and list entry opens
    with open_store(url, k2) as reader:
        queue = ReviewQueue(reader, lists_ttl_s=0.0)
        items = [queue.item(i) for i in ids]
        assert all(item is not None and "Marbry" in item.text for item in items)
        assert sum(item.status is ItemStatus.DECIDED for item in items if item) >= 1
        assert sorted(queue.lists().site.allow) == allowed


def test_retire_is_refused_while_a_review_blob_is_under_the_key(url: str) -> None:
    """An instance still sealing with the old key queued items after the rotation (issue
    14's race, here for the queue): retiring the old key is refused with the table and the
    count — no text — until `keys rotate` runs again; then it retires and all opens."""
    k1, k2 = Keyring.generate("rv-k1"), Keyring.generate("rv-k2")
    with open_store(url, k1) as store:
        first, _ = _fill(store, "in:0:1")
    new_first = k2.merged_with(k1)
    officer = open_store(url, new_first)
    try:
        officer.admin.rotate(new_first, operator="officer")
        old_first = k1.merged_with(k2)  # a stale instance: the old key still first
        with open_store(url, old_first) as stale:
            late = ReviewQueue(stale).enqueue(
                held_document("Quillon Marbry called.\n"),
                Detector(BLIND),
                coordinates="in:0:2",
                held_reason=("leak_guard", "r"),
            )
        with pytest.raises(RetireRefused, match="review queue blobs") as refused:
            officer.admin.retire_key("rv-k1", operator="officer")
        assert refused.value.coordinates["review_items"] == len(late)
        assert "review_lists" not in refused.value.coordinates
        assert "Marbry" not in str(refused.value) and "Quillon" not in str(refused.value)
        with pytest.raises(KeystoreError, match="review queue blobs"):
            officer.admin.check_retirable(["rv-k1"])
        assert officer.stats()["retired_keys"] == []  # nothing changed
        report = officer.admin.rotate(new_first, operator="officer")
        assert report.review_rewrapped == len(late) and not report.failed
        officer.admin.retire_key("rv-k1", operator="officer")
        # the database guard: a blob sealed under the retired key is refused
        db = ReviewQueue(officer).db
        row = db.item(late[0])
        assert row is not None
        forged = replace(row, id="forged", sealed=seal(k1, ITEM_BINDING + b"forged", b"{}"))
        with pytest.raises(KeyRetiredError):
            db.add_items([forged])
    finally:
        officer.close()
    with open_store(url, k2) as reader:
        queue = ReviewQueue(reader)
        for item_id in first + late:
            item = queue.item(item_id)
            assert item is not None and "Marbry" in item.text


def _root_before_the_anchor(backend: Any, keyring: Keyring, now: float) -> None:
    """A store root as releases before the audit anchor (schema 6) created it."""
    import os

    from keystore.envelope import wrap_key
    from keystore.subkeys import ROOT_BINDING, ROOT_BYTES

    backend.insert_root(*wrap_key(keyring, ROOT_BINDING, os.urandom(ROOT_BYTES)), now)


def test_a_store_whose_queue_was_created_on_first_use_migrates(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store at schema 4 whose review tables an earlier release created on first use (the
    same statements, no key guard): `keys migrate` to 5 keeps its items, adds the guard, and
    rotate + retire then cover them."""
    from keystore import backend as backend_module
    from keystore import store as store_module
    from keystore.auditdb import ANCHOR_TABLE

    k1, k2 = Keyring.generate("rv-k1"), Keyring.generate("rv-k2")
    every = backend_module.MIGRATIONS
    five = [m for m in every if m[0] <= 5]
    assert five[-1][0] == 5
    # that release had no review migration; its root and audit lines come from before the
    # anchor (the table is there so this code can append; the root is not anchored)
    four = [*five[:-2], (4, [*five[-2][1], ANCHOR_TABLE])]
    monkeypatch.setattr(backend_module, "MIGRATIONS", four)
    monkeypatch.setattr(backend_module, "SCHEMA_VERSION", 4)
    monkeypatch.setattr(store_module, "create_root", _root_before_the_anchor)
    with open_store(url, k1) as old:
        assert old.schema_version == 4
        b = old.backend
        with b._transaction() as cur:  # noqa: SLF001 - what the earlier release ran
            for statement in five[-1][1]:
                if not statement.startswith("@"):
                    b._exec(cur, statement)  # noqa: SLF001
        ids, allowed = _fill(old, "in:0:1")
    monkeypatch.setattr(backend_module, "MIGRATIONS", every)
    monkeypatch.setattr(backend_module, "SCHEMA_VERSION", every[-1][0])
    new_first = k2.merged_with(k1)
    with open_store(url, new_first, migrate=True) as officer:
        assert officer.schema_version == every[-1][0]
        assert officer.admin.verify_audit().ok  # anchored by this (owner's) open
        report = officer.admin.rotate(new_first, operator="officer")
        assert report.review_rewrapped == len(ids) + len(allowed)
        officer.admin.retire_key("rv-k1", operator="officer")
    with open_store(url, k2) as reader:
        queue = ReviewQueue(reader, lists_ttl_s=0.0)
        assert all(queue.item(i) is not None for i in ids)
        assert sorted(queue.lists().site.allow) == allowed


def test_a_blob_replaced_during_the_rotation_is_read_again(url: str) -> None:
    """The re-wrap is a compare-and-set on the wrapped key: a list entry replaced between
    the read and the write (a reviewer deciding again) is not overwritten with the old
    blob's key; it is read again and re-wrapped as it now is."""
    from keystore.reviewdb import LIST_BINDING, BlobRewrap, _rewrap_batch, _rewrap_one

    k1, k2 = Keyring.generate("rv-k1"), Keyring.generate("rv-k2")
    with open_store(url, k1) as store:
        _fill(store, "in:0:1")
        db = ReviewQueue(store).db
        (before,) = db.list_entries()
        replaced = replace(
            before, sealed=seal(k1, LIST_BINDING + before.entry.encode(), b"replaced")
        )
        db.put_list_entry(replaced, 1.0)  # after the rotation read `before`
    new_first = k2.merged_with(k1)
    with open_store(url, new_first) as officer:
        report = BlobRewrap()
        where = ("review_lists", "entry", LIST_BINDING)
        missed = _rewrap_batch(
            officer.backend, new_first, where, [(before.entry, before.sealed)], report
        )
        assert missed == [before.entry] and report.rewrapped == 0
        _rewrap_one(officer.backend, new_first, where, before.entry, replaced.sealed, report)
        assert report.rewrapped == 1 and not report.failed
        (after,) = ReviewQueue(officer).db.list_entries()
        assert after.sealed.key_id == "rv-k2"
        assert officer.open_blob(LIST_BINDING + after.entry.encode(), after.sealed) == b"replaced"


def test_rotation_and_the_retire_check_know_the_same_tables() -> None:
    from keystore import reviewdb
    from keystore.backend import REVIEW_SEALED_TABLES

    assert tuple(t for t, _, _ in reviewdb._SEALED_TABLES) == REVIEW_SEALED_TABLES  # noqa: SLF001


def test_every_sealed_review_table_is_guarded_by_a_migration() -> None:
    """Migration 5's guard is frozen; a sealed table added later needs its own migration."""
    from keystore.backend import REVIEW_GUARDED_AT_5, REVIEW_SEALED_TABLES

    assert set(REVIEW_SEALED_TABLES) <= set(REVIEW_GUARDED_AT_5), (
        "a new sealed table needs a migration that adds its key guard"
    )
