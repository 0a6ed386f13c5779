"""keystore — the encrypted per-patient state store (lowest package: imports nothing above).

``open_store(url, keyring)`` gives an :class:`EncryptedStore` (PatientStore + MarkStore +
admin operations) over SQLite (``sqlite:///relative/path``, ``sqlite:////absolute/path``)
or PostgreSQL (``postgresql://user@host:port/db[?schema=name]``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import lazy_loader

if TYPE_CHECKING:
    from keystore.admin import RotationReport
    from keystore.api import (
        ExpiringMarks,
        MarkStore,
        PatientState,
        PatientStore,
        Pseudonymizer,
    )
    from keystore.errors import (
        ForgottenPatientError,
        IntegrityError,
        KeystoreError,
        KeystoreUnavailable,
        MissingKeyError,
    )
    from keystore.keyring import Keyring, MasterKey
    from keystore.pseudonyms import Pseudonyms, pseudonym
    from keystore.records import Identity
    from keystore.store import EncryptedStore

# The package's names, imported from their modules on first use (PEP 562, through lazy_loader):
# a process that only needs ``keystore.errors`` (the detector, through ``pipelines.errors``)
# does not load the store, the audit log and ``cryptography`` (bench/README.md, "Session 15").
__getattr__, _, _ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "admin": ["RotationReport"],
        "api": ["ExpiringMarks", "MarkStore", "PatientState", "PatientStore", "Pseudonymizer"],
        "errors": [
            "ForgottenPatientError",
            "IntegrityError",
            "KeystoreError",
            "KeystoreUnavailable",
            "MissingKeyError",
        ],
        "keyring": ["Keyring", "MasterKey"],
        "pseudonyms": ["Pseudonyms", "pseudonym"],
        "records": ["Identity"],
        "store": ["EncryptedStore"],
    },
)


__all__ = [
    "EncryptedStore",
    "ForgottenPatientError",
    "Identity",
    "IntegrityError",
    "Keyring",
    "KeystoreError",
    "KeystoreUnavailable",
    "ExpiringMarks",
    "MarkStore",
    "MasterKey",
    "MissingKeyError",
    "PatientState",
    "PatientStore",
    "Pseudonymizer",
    "Pseudonyms",
    "RotationReport",
    "classify_database_error",
    "open_store",
    "pseudonym",
]


def open_store(url: str, keyring: Keyring, **options: Any) -> EncryptedStore:
    """Open (creating and migrating if needed) the key store at ``url``.

    ``options`` go to :class:`EncryptedStore` (cache_size, cache_ttl_s, batch_size,
    max_delay_s, keep_identity, clock).
    """
    from keystore.errors import KeystoreError
    from keystore.store import EncryptedStore

    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        from keystore.sqlite import SqliteBackend

        path = parts.path[1:] if parts.path.startswith("/") else parts.path
        if parts.netloc or not path:
            raise KeystoreError("SQLite key store URL must look like sqlite:///path/to/file")
        return EncryptedStore(SqliteBackend(path), keyring, **options)
    if scheme in ("postgresql", "postgres"):
        from keystore.postgres import PostgresBackend

        query = parse_qsl(parts.query, keep_blank_values=True)
        schema = next((v for k, v in query if k == "schema"), None)
        # %20, not "+", for a space: libpq decodes percent escapes only (options=-c …)
        rest = urlencode([(k, v) for k, v in query if k != "schema"], quote_via=quote)
        conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment))
        return EncryptedStore(PostgresBackend(conninfo, schema=schema), keyring, **options)
    raise KeystoreError("unsupported key store URL scheme", scheme=scheme or "(none)")


def classify_database_error(exc: BaseException) -> KeystoreError | None:
    """The key store error for a raw database driver error (psycopg, sqlite3) that escaped
    a backend, else None: callers treat it as a fault of the stream, never of a record."""
    import sqlite3

    if isinstance(exc, sqlite3.Error):
        from keystore.sqlite import classify as classify_sqlite

        return classify_sqlite(exc)
    if type(exc).__module__.split(".")[0] == "psycopg":
        import psycopg

        from keystore.postgres import classify as classify_pg

        if isinstance(exc, psycopg.Error):
            return classify_pg(exc)
    return None
