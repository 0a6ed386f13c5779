"""The audit table and its sealed head anchor in SQL (both backends; see keystore/audit.py).

Split from :mod:`keystore.backend`: appending a line, reading the log, and anchoring a store
for the first time. Every append runs under the audit lock, in one transaction with the
anchor's update, and extends the chain from the *anchor* (checked first): a writer who cut
the table's tail cannot make the next line hide the cut, and one who changed or deleted
the anchor makes appends refuse (``AuditAnchorError``) until the officer looks.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from keystore.audit import AuditAnchor, AuditKeys, AuditLine
from keystore.envelope import wrap_key
from keystore.errors import IntegrityError, KeystoreError
from keystore.keyring import Keyring
from keystore.subkeys import ROOT_BINDING_ANCHORED, ROOT_BYTES

if TYPE_CHECKING:
    from keystore.backend import SqlBackend

log = logging.getLogger("deidstream.keystore.audit")
ANCHOR_ROW = 1

# migration 6: the one-row table of the sealed head (see MIGRATIONS in keystore/schema.py)
ANCHOR_TABLE = (
    "CREATE TABLE IF NOT EXISTS audit_head (id INTEGER PRIMARY KEY, seq {bigint} NOT NULL,"
    " mac {blob} NOT NULL, legacy {bigint} NOT NULL, seal {blob} NOT NULL,"
    " updated_at {real} NOT NULL)"
)


class AuditAnchorError(IntegrityError):
    """The audit log's sealed head anchor is missing or does not verify: appends refuse,
    so nothing is chained onto a log that was tampered with (``keys audit verify``). A
    fault of the store, not of any input: retriable (HTTP 503), until the officer repairs
    it (``keys audit reanchor``)."""

    retriable = True
    reason_class = "audit_anchor"


def read_anchor(backend: SqlBackend, cur: Any) -> AuditAnchor | None:
    raw = backend._exec(
        cur, "SELECT seq, mac, legacy, seal FROM audit_head WHERE id = ?", (ANCHOR_ROW,)
    ).fetchone()
    if raw is None:
        return None
    return AuditAnchor(int(raw[0]), bytes(raw[1]), int(raw[2]), bytes(raw[3]))


def write_anchor(backend: SqlBackend, cur: Any, anchor: AuditAnchor, now: float) -> None:
    backend._exec(
        cur,
        "INSERT INTO audit_head (id, seq, mac, legacy, seal, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq,"
        " mac = excluded.mac, legacy = excluded.legacy, seal = excluded.seal,"
        " updated_at = excluded.updated_at",
        (ANCHOR_ROW, anchor.seq, anchor.mac, anchor.legacy, anchor.seal, now),
    )


def lines(backend: SqlBackend, cur: Any) -> list[AuditLine]:
    """Every line in insertion order (the table's id), with its seq and mac."""
    raws = backend._exec(
        cur,
        "SELECT at, action, operator, reason, subject, outcome, seq, mac, id FROM audit"
        " ORDER BY id",
    ).fetchall()
    return [
        AuditLine(
            float(r[0]),
            str(r[1]),
            str(r[2]),
            str(r[3]),
            str(r[4]),
            str(r[5]),
            None if r[6] is None else int(r[6]),
            None if r[7] is None else bytes(r[7]),
            int(r[8]),
        )
        for r in raws
    ]


def snapshot(backend: SqlBackend) -> tuple[list[AuditLine], AuditAnchor | None]:
    """Every line and the anchor as ONE append left them (under the audit lock: a line
    appended between two reads would look like a cut tail or an old anchor)."""
    with backend._transaction() as cur:
        backend._lock_audit(cur)
        return lines(backend, cur), read_anchor(backend, cur)


def _start(backend: SqlBackend, cur: Any, keys: AuditKeys) -> AuditAnchor:
    """What the next line extends: the sealed anchor (checked), or — on a store never
    anchored — the log's head as the table holds it."""
    anchor = read_anchor(backend, cur)
    if anchor is not None:
        if not keys.sealed(anchor):
            raise AuditAnchorError(
                "the audit log's head anchor does not verify (changed): nothing is "
                "appended; run `deidstream keys audit verify`"
            )
        return anchor
    if keys.anchored:
        raise AuditAnchorError(
            "the audit log's head anchor was deleted: nothing is appended; run "
            "`deidstream keys audit verify`"
        )
    return keys.anchor_of(lines(backend, cur))


def append(backend: SqlBackend, line: AuditLine, keys: AuditKeys, now: float) -> AuditLine:
    """Append ``line`` as the next link and move the anchor to it, in one transaction under
    the audit lock (two writers never fork the chain; the unique seq index is the backstop).
    The new head is logged (seq and a mac prefix: no PHI) for an outside record of it."""
    with backend._transaction() as cur:
        backend._lock_audit(cur)
        chained, anchor = keys.append(_start(backend, cur, keys), line)
        backend._exec(
            cur,
            "INSERT INTO audit (at, action, operator, reason, subject, outcome,"
            " seq, mac) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                chained.at,
                chained.action,
                chained.operator,
                chained.reason,
                chained.subject,
                chained.outcome,
                chained.seq,
                chained.mac,
            ),
        )
        write_anchor(backend, cur, anchor, now)
    log.info("audit head %d:%s (%s)", anchor.seq, anchor.mac[:8].hex(), chained.action)
    return chained


def create_root(backend: SqlBackend, keyring: Keyring, now: float) -> None:
    """A new store's root, wrapped as "anchored", and its empty log's anchor, in one
    transaction (first writer wins: an instance that loses the race writes nothing)."""
    secret = os.urandom(ROOT_BYTES)
    key_id, wrapped = wrap_key(keyring, ROOT_BINDING_ANCHORED, secret)
    keys = AuditKeys(secret, anchored=True)
    with backend.group():
        if backend.insert_root(key_id, wrapped, now):
            with backend._transaction() as cur:
                write_anchor(backend, cur, keys.anchor(0, keys.genesis(()), 0), now)


def anchor_root(
    backend: SqlBackend, keyring: Keyring, root: bytes, stored: tuple[str, bytes], now: float
) -> bool:
    """Anchor a store opened for the first time by this version, in one transaction: seal
    its log's head as it is now (or keep a valid anchor already there) and re-wrap the root
    as "anchored". False (nothing changed) if the root was re-wrapped meanwhile or this
    role may not (a DML-only service role: `keys migrate` by the owner anchors it)."""
    keys = AuditKeys(root)
    key_id, wrapped = wrap_key(keyring, ROOT_BINDING_ANCHORED, root)
    try:
        with backend._transaction() as cur:
            backend._lock_audit(cur)
            anchor = read_anchor(backend, cur)
            if anchor is not None and not keys.sealed(anchor):
                raise AuditAnchorError("the audit log's head anchor does not verify (changed)")
            if anchor is None:
                anchor = keys.anchor_of(lines(backend, cur))
            write_anchor(backend, cur, anchor, now)
            backend._exec(
                cur,
                "UPDATE store_keys SET key_id = ?, wrapped = ?, updated_at = ?"
                " WHERE name = 'root' AND wrapped = ?",
                (key_id, wrapped, now, stored[1]),
            )
            if cur.rowcount != 1:
                raise _RootMoved
    except _RootMoved:
        return False
    except KeystoreError as exc:
        log.warning("the audit log could not be anchored now: %s", exc)
        return False
    # once per store, at its upgrade: seen again for an anchored store, the root was put back
    log.warning(
        "the audit log was anchored for the first time: head %d, %d lines from before the chain",
        anchor.seq,
        anchor.legacy,
    )
    return True


class _RootMoved(Exception):
    """The root was re-wrapped by someone else meanwhile (rolls the anchoring back)."""


def reanchor(
    backend: SqlBackend, keys: AuditKeys, now: float
) -> tuple[AuditAnchor | None, AuditAnchor]:
    """Seal the log's head as the table holds it now, replacing the anchor (the officer's
    deliberate repair after ``keys audit verify`` found a problem: the caller audits it).
    Returns the anchor before (None: none) and after."""
    with backend._transaction() as cur:
        backend._lock_audit(cur)
        before = read_anchor(backend, cur)
        # nulled chain columns never become "old lines": the pinned prefix is kept
        if before is not None and keys.sealed(before):
            legacy: int | None = before.legacy
        else:
            legacy = 0 if keys.anchored else None
        after = keys.anchor_of(lines(backend, cur), legacy)
        write_anchor(backend, cur, after, now)
    return before, after
