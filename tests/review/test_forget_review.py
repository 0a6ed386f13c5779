"""A forget reaches the review queue (issue 23 item 1), on SQLite and PostgreSQL.

`keys forget` used to delete the patient's record only: their queued items (the whole sealed
note, the authority, the patient id), the decisions on them and their allow / deny list
entries stayed, and the rotation that makes a forget final re-wrapped them under the new key.
Now every review row that carries or points to the patient goes with the record, in the same
transaction; a site-wide entry another patient still backs stays."""

from __future__ import annotations

from pathlib import Path

from keystore import EncryptedStore, Keyring, open_store
from keystore.forgetting import FORGOTTEN_DOC
from keystore.reviewdb import ReviewDb
from keystore.shred import retire_old_keys
from pipelines.document import ClinicalDocument, Identifiers, PersonName
from pipelines.phi.detector import Detector
from pipelines.review import Decision, DecisionKind, DocStatus, ReviewQueue, Role, Scope
from pipelines.spans import Category

from .conftest import held_document
from .test_queue import BLIND

OTHER_NOTE = "Seen with son Ostrander Velk. Velk to call back.\n"  # invented


def _other_document() -> ClinicalDocument:
    return ClinicalDocument(
        text=OTHER_NOTE,
        patient_id="Q-5521",
        assigning_authority="HOSP",
        identifiers=Identifiers(relative_names=(PersonName(family="Velk", given=("Ostrander",)),)),
    )


def _fill(store: EncryptedStore) -> tuple[ReviewQueue, list[str], list[str]]:
    """The victim (HOSP/P-7734): a held note, one string decided for the patient and one for
    the site. Another patient (HOSP/Q-5521): a held note, one string decided for the site."""
    queue = ReviewQueue(store, lists_ttl_s=0.0)
    victim = queue.enqueue(
        held_document(), Detector(BLIND), coordinates="in:0:1", held_reason=("leak_guard", "r")
    )
    other = queue.enqueue(
        _other_document(), Detector(BLIND), coordinates="in:0:2", held_reason=("leak_guard", "r")
    )
    spans = [i for i in (queue.item(x) for x in victim) if i and i.candidate is not None]
    queue.decide(
        Decision(
            spans[0].id,
            "ana",
            Role.REVIEWER,
            DecisionKind.PHI,
            Category.NAME_RELATIVE,
            Scope.PATIENT,
        )
    )
    whole = next(i for i in victim if (q := queue.item(i)) and q.candidate is None)
    queue.decide(Decision(whole, "ana", Role.REVIEWER, DecisionKind.NOT_PHI, scope=Scope.NOTE))
    # the victim's last span for the site (only the victim backs it), the other's likewise
    queue.decide(
        Decision(
            spans[-1].id, "ana", Role.REVIEWER, DecisionKind.PHI, Category.NAME_RELATIVE, Scope.SITE
        )
    )
    theirs = next(i for i in (queue.item(x) for x in other) if i and i.candidate is not None)
    queue.decide(
        Decision(
            theirs.id, "bo", Role.REVIEWER, DecisionKind.PHI, Category.NAME_RELATIVE, Scope.SITE
        )
    )
    store.get_or_create("HOSP", "P-7734", lambda: store.new_state(5))
    store.get_or_create("HOSP", "Q-5521", lambda: store.new_state(-3))
    store.flush()
    return queue, victim, other


def _everything_readable(store: EncryptedStore) -> str:
    """Every review item and list entry the store's keys open, as text."""
    queue = ReviewQueue(store, lists_ttl_s=0.0)
    db = ReviewDb(store.backend)
    out = []
    for status in ("open", "referred", "decided"):
        for row in db.page([status], 0, 10_000):
            item = queue.open_item(row)
            out.append(f"{item.text} {item.authority} {item.patient_id}")
    lists = queue.lists()
    out += [*lists.site.allow, *lists.site.deny]
    for scope in lists.patients.values():
        out += [*scope.allow, *scope.deny]
    return "\n".join(out)


def test_forget_removes_every_review_row_of_the_patient(store: EncryptedStore) -> None:
    queue, victim, other = _fill(store)
    db = queue.db
    assert "Marbry" in _everything_readable(store)  # queued and decided: readable before
    assert store.admin.forget("HOSP", "P-7734", operator="officer", reason="request")
    removed = store.admin.last_review_forget
    assert removed.items == len(victim) and removed.decisions >= 3
    assert removed.list_entries == 1 and removed.site_entries == 1 and removed.documents == 1
    assert all(db.item(i) is None for i in victim)
    assert all(db.item(i) is not None for i in other)  # the other patient's stay
    assert {d.item_id for d in db.decisions(include_undone=True)} <= set(other)
    entries = db.list_entries()
    assert [(e.scope, e.list) for e in entries] == [("site", "deny")]  # the other's only
    forgotten = db.docs(FORGOTTEN_DOC)
    assert len(forgotten) == 1 and forgotten[0].coordinates == "" and forgotten[0].reason == ""
    assert DocStatus(forgotten[0].status) is DocStatus.FORGOTTEN
    assert queue.has_document("in:0:2") and len(db.docs("open")) == 1  # the other's note
    assert queue.has_document("in:0:1")  # a replay of the held topic is not queued again
    left = _everything_readable(store)
    assert "Marbry" not in left and "P-7734" not in left and "Quillon" not in left
    assert "Velk" in left
    # idempotent: a second forget finds nothing more
    store.admin.forget("HOSP", "P-7734", operator="officer")
    assert store.admin.last_review_forget.total() == 0


def test_a_site_entry_another_patient_backs_stays(store: EncryptedStore) -> None:
    """The same string decided for the site on two patients' notes: forgetting one keeps the
    entry, as the other patient's live decision makes it."""
    queue = ReviewQueue(store, lists_ttl_s=0.0)
    ids = {}
    for pid, where in (("P-1", "in:0:1"), ("P-2", "in:0:2")):
        doc = ClinicalDocument(
            text=OTHER_NOTE,
            patient_id=pid,
            assigning_authority="HOSP",
            identifiers=Identifiers(
                relative_names=(PersonName(family="Velk", given=("Ostrander",)),)
            ),
        )
        got = queue.enqueue(doc, Detector(BLIND), coordinates=where, held_reason=("lg", "r"))
        ids[pid] = next(i for i in (queue.item(x) for x in got) if i and i.candidate is not None)
    first = ids["P-1"]
    queue.decide(Decision(ids["P-2"].id, "bo", Role.EXPERT, DecisionKind.NOT_PHI, None, Scope.SITE))
    queue.decide(
        Decision(first.id, "ana", Role.EXPERT, DecisionKind.PHI, Category.NAME_RELATIVE, Scope.SITE)
    )
    assert queue.lists().site.deny  # the latest decision (P-1's) made it a deny entry
    store.admin.forget("HOSP", "P-1", operator="officer")
    lists = queue.lists()
    assert not lists.site.deny and lists.site.allow  # as P-2's decision makes it
    assert store.admin.last_review_forget.site_entries == 0


def test_after_the_final_step_the_new_key_opens_nothing_of_the_patient(
    store: EncryptedStore, keyring: Keyring, tmp_path: Path
) -> None:
    """The issue's case: forget, then the rotation that makes the forget final. Every review
    row left opens with the new key alone — and none is the forgotten patient's."""
    _fill(store)
    key_file = tmp_path / "master.key"
    keyring.write_file(key_file)
    store.admin.forget("HOSP", "P-7734", operator="officer", reason="request")
    done = retire_old_keys(store, key_file, operator="officer")
    assert done.destroyed == (keyring.primary.key_id,)
    new_only = Keyring.from_file(key_file)
    assert new_only.key_ids == (done.new_key_id,)
    store._keyring = new_only  # noqa: SLF001 - read with the new key alone
    left = _everything_readable(store)
    assert "Velk" in left
    assert "Marbry" not in left and "P-7734" not in left


def test_sqlite_file_keeps_no_byte_of_the_forgotten_items(tmp_path: Path) -> None:
    """SQLite: the forgotten items' ciphertexts are gone from the database file and its WAL
    (secure_delete, and the forget checkpoints the WAL)."""
    path = tmp_path / "ks.sqlite3"
    store = open_store(f"sqlite:///{path}", Keyring.generate("fr-a"))
    try:
        queue, victim, _ = _fill(store)
        chunks = [
            bytes(row.sealed.ciphertext[i : i + 24])
            for row in (queue.db.item(x) for x in victim)
            if row is not None
            for i in (0, 40)
        ]
        blob = path.read_bytes() + (tmp_path / "ks.sqlite3-wal").read_bytes()
        assert any(c in blob for c in chunks)  # the test can see them before
        store.admin.forget("HOSP", "P-7734", operator="officer")
        wal = tmp_path / "ks.sqlite3-wal"
        blob = path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
        assert not [c for c in chunks if c in blob]
    finally:
        store.close()
