"""Which master keys may wrap, and their retirement: registering a key and the instances
that seal with it (with a heartbeat), and retiring a key once nothing live or stored uses
it — checked here and guarded by the database too (migration 3 and 5's key guards).

Split from :mod:`keystore.backend`; :class:`keystore.backend.SqlBackend` inherits it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from keystore.schema import REVIEW_SEALED_TABLES
from keystore.sqlbase import SqlBase


class MasterKeys(SqlBase):
    """The master keys and instances tables (see :meth:`retire_key`)."""

    def register_key(self, cur: Any, key_id: str, now: float) -> None:
        """Let ``key_id`` wrap (inside a transaction holding the migration lock): refused
        with ``KeyRetiredError`` if it was retired."""
        from keystore.errors import KeyRetiredError

        if (
            self._exec(cur, "SELECT 1 FROM retired_keys WHERE key_id = ?", (key_id,)).fetchone()
            is not None
        ):
            raise KeyRetiredError(
                "this master key was retired: configure the new key first", key_id=key_id
            )
        self._exec(
            cur,
            "INSERT INTO master_keys (key_id, added_at) VALUES (?, ?)"
            " ON CONFLICT (key_id) DO NOTHING",
            (key_id, now),
        )

    def register_instance(
        self, instance_id: str, key_id: str, key_ids: Sequence[str], now: float
    ) -> None:
        """Record that this instance seals with ``key_id`` (and can read ``key_ids``)."""
        with self._transaction() as cur:
            self._begin_migration(cur)  # serialized with retire_key
            self.register_key(cur, key_id, now)
            self._exec(
                cur,
                "INSERT INTO instances (instance_id, key_id, key_ids, started_at,"
                " heartbeat_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (instance_id)"
                " DO UPDATE SET key_id = excluded.key_id, key_ids = excluded.key_ids,"
                " heartbeat_at = excluded.heartbeat_at",
                (instance_id, key_id, ",".join(key_ids), now, now),
            )

    def heartbeat(self, instance_id: str, key_id: str, now: float) -> bool:
        """Refresh this instance's heartbeat; False if its row is gone or its key is no
        longer registered (retired): the caller registers again, which then refuses."""
        with self._transaction() as cur:
            self._exec(
                cur,
                "UPDATE instances SET heartbeat_at = ? WHERE instance_id = ? AND key_id = ?",
                (now, instance_id, key_id),
            )
            if cur.rowcount != 1:
                return False
            return (
                self._exec(cur, "SELECT 1 FROM master_keys WHERE key_id = ?", (key_id,)).fetchone()
                is not None
            )

    def deregister_instance(self, instance_id: str) -> None:
        with self._transaction() as cur:
            self._exec(cur, "DELETE FROM instances WHERE instance_id = ?", (instance_id,))

    def retire_key(
        self, key_id: str, now: float, live_since: float, instance_id: str, operator: str
    ) -> None:
        """Retire ``key_id`` — from now on nothing can be wrapped under it — unless an
        instance (other than ``instance_id``) sealing with it has a heartbeat at or after
        ``live_since``, or a record or the store root is wrapped under it (``RetireRefused``,
        nothing changed). The deletion of the registered key is guarded by the database as
        well (foreign keys / triggers), so a record written meanwhile also refuses it."""
        from keystore.errors import KeyRetiredError, RetireRefused

        try:
            with self._transaction() as cur:
                self._begin_migration(cur)
                live = int(
                    self._exec(
                        cur,
                        "SELECT COUNT(*) FROM instances WHERE key_id = ?"
                        " AND heartbeat_at >= ? AND instance_id <> ?",
                        (key_id, live_since, instance_id),
                    ).fetchone()[0]
                )
                if live:
                    raise RetireRefused(
                        "refused: live instances still seal with this key; restart them "
                        "with the new key first, then retire",
                        key_id=key_id,
                        live_instances=live,
                    )
                records = int(
                    self._exec(
                        cur, "SELECT COUNT(*) FROM patients WHERE key_id = ?", (key_id,)
                    ).fetchone()[0]
                )
                root = int(
                    self._exec(
                        cur, "SELECT COUNT(*) FROM store_keys WHERE key_id = ?", (key_id,)
                    ).fetchone()[0]
                )
                if records or root:
                    raise RetireRefused(
                        "refused: records are still wrapped under this key; run `keys "
                        "rotate` again (after every instance uses the new key)",
                        key_id=key_id,
                        records=records,
                        root=root,
                    )
                review = self._review_wrapped(cur, [key_id])
                if review:
                    raise RetireRefused(
                        "refused: review queue blobs are still wrapped under this key; run "
                        "`keys rotate` again",
                        key_id=key_id,
                        **review,
                    )
                self._exec(cur, "DELETE FROM instances WHERE key_id = ?", (key_id,))
                self._exec(
                    cur,
                    "INSERT INTO retired_keys (key_id, retired_at, operator)"
                    " VALUES (?, ?, ?) ON CONFLICT (key_id) DO NOTHING",
                    (key_id, now, operator),
                )
                self._exec(cur, "DELETE FROM master_keys WHERE key_id = ?", (key_id,))
        except KeyRetiredError:  # the guard: something was wrapped under it meanwhile
            raise RetireRefused(
                "refused: a record was wrapped under this key meanwhile; run `keys rotate` again",
                key_id=key_id,
            ) from None

    def _review_wrapped(self, cur: Any, key_ids: Sequence[str]) -> dict[str, int]:
        """How many review blobs each review table holds wrapped under any of ``key_ids``
        (tables with none left out)."""
        marks = ", ".join("?" * len(key_ids))
        found: dict[str, int] = {}
        for table in REVIEW_SEALED_TABLES:
            n = int(
                self._exec(
                    cur,
                    f"SELECT COUNT(*) FROM {table}"  # noqa: S608 - constant
                    f" WHERE key_id IN ({marks})",
                    key_ids,
                ).fetchone()[0]
            )
            if n:
                found[table] = n
        return found

    def review_wrapped(self, key_ids: Sequence[str]) -> dict[str, int]:
        """:meth:`_review_wrapped` in a read transaction (nothing when ``key_ids`` is empty)."""
        if not key_ids:
            return {}
        with self._transaction(write=False) as cur:
            return self._review_wrapped(cur, list(key_ids))

    def key_usage(self) -> dict[str, object]:
        """Registered and retired keys, and the instances with their key and heartbeat."""
        with self._transaction(write=False) as cur:
            active = [
                str(r[0])
                for r in self._exec(
                    cur, "SELECT key_id FROM master_keys ORDER BY key_id"
                ).fetchall()
            ]
            retired = [
                str(r[0])
                for r in self._exec(
                    cur, "SELECT key_id FROM retired_keys ORDER BY key_id"
                ).fetchall()
            ]
            instances = [
                {"instance": str(r[0]), "key_id": str(r[1]), "heartbeat_at": float(r[2])}
                for r in self._exec(
                    cur,
                    "SELECT instance_id, key_id, heartbeat_at FROM instances ORDER BY instance_id",
                )
            ]
        return {"active_keys": active, "retired_keys": retired, "instances": instances}
