"""PatientState ⇄ bytes (the plaintext inside a sealed record).

The optional ``identity`` (assigning authority, patient id) rides inside the ciphertext so
an authorized ``reveal`` can answer; it never appears outside the seal.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import orjson

from keystore.api import PatientState
from keystore.backend import Row
from keystore.errors import IntegrityError, KeystoreError
from keystore.keyring import fingerprint

RECORD_SCHEMA = 1


@dataclass(frozen=True)
class Identity:
    authority: str
    patient_id: str


def dump_state(state: PatientState, identity: Identity | None) -> bytes:
    doc: dict[str, object] = {
        "v": RECORD_SCHEMA,
        "shift": state.shift_days,
        "pseudonym": state.pseudonym,
        "seed": base64.b64encode(state.seed).decode("ascii"),
        "names": state.name_map,
        "ids": state.id_map,
        "extra": state.extra,
    }
    if identity is not None:
        doc["who"] = [identity.authority, identity.patient_id]
    try:
        return orjson.dumps(doc)
    except TypeError:  # lone surrogates or non-str map values
        raise KeystoreError(
            "patient state holds text that cannot be stored (not valid "
            "Unicode, or a map value that is not a string)"
        ) from None


def load_state(raw: bytes) -> tuple[PatientState, Identity | None]:
    try:
        doc = orjson.loads(raw)
        if doc.get("v") != RECORD_SCHEMA:
            raise IntegrityError("record has an unknown format version", version=doc.get("v"))
        state = PatientState(
            shift_days=int(doc["shift"]),
            pseudonym=str(doc["pseudonym"]),
            seed=base64.b64decode(doc["seed"]),
            name_map=dict(doc["names"]),
            id_map=dict(doc["ids"]),
            extra=dict(doc["extra"]),
        )
        who = doc.get("who")
    except IntegrityError:
        raise
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        raise IntegrityError("record decrypted but its content is malformed") from None
    identity = Identity(str(who[0]), str(who[1])) if who else None
    return state, identity


def overwrite_state(target: PatientState, source: PatientState) -> None:
    """Make ``target`` equal ``source`` in place (callers may hold the object or its maps)."""
    target.shift_days = source.shift_days
    target.pseudonym = source.pseudonym
    target.seed = source.seed
    for mine, theirs in (
        (target.name_map, source.name_map),
        (target.id_map, source.id_map),
        (target.extra, source.extra),
    ):
        mine.clear()
        mine.update(theirs)


def merge_state(ours: PatientState, theirs: PatientState) -> None:
    """Stored (theirs) wins on every conflict; entries only we added are kept."""
    ours.shift_days = theirs.shift_days
    ours.pseudonym = theirs.pseudonym
    ours.seed = theirs.seed
    for mine, stored in (
        (ours.name_map, theirs.name_map),
        (ours.id_map, theirs.id_map),
        (ours.extra, theirs.extra),
    ):
        mine.update(stored)


def older_copy(
    row: Row, stored: PatientState, known: PatientState, known_revision: int | None
) -> bool:
    """The stored record is an older revision of the identity this instance knows at
    ``known_revision`` (same pseudonym: a forgotten and re-created patient has a new one,
    and its revisions start again at 1). The revision is authenticated (associated data),
    so only a copy of an older row can carry an older number."""
    return (
        known_revision is not None
        and row.revision < known_revision
        and stored.pseudonym == known.pseudonym
    )


def rolled_back(row: Row) -> IntegrityError:
    return IntegrityError(
        "record was rolled back: its stored revision is older than one "
        "this instance has read or written",
        record=fingerprint(row.lookup),
        revision=row.revision,
    )
