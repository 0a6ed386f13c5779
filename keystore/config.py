"""Where the store and the master key come from: environment first, a local default second.

``DEIDSTREAM_KEYSTORE_URL`` names the store; ``DEIDSTREAM_MASTER_KEY`` (base64 or
``id:base64,…``) or ``DEIDSTREAM_MASTER_KEY_FILE`` gives the keys. With neither set, a
SQLite file and an owner-only key file under ``./.deidstream/`` are used, created on first
use with a logged warning (fine for a laptop demo, not for production). A configured store
URL takes its key only from those two variables: ``./.deidstream/master.key`` is never used
for it (``MissingKeyError``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from keystore.errors import MissingKeyError
from keystore.keyring import ENV_KEY, ENV_KEY_FILE, Keyring
from keystore.store import EncryptedStore

ENV_URL = "DEIDSTREAM_KEYSTORE_URL"
DEFAULT_DIR = Path(".deidstream")
DEFAULT_DB = "keystore.sqlite3"
DEFAULT_KEY_FILE = "master.key"

log = logging.getLogger("deidstream.keystore")


@dataclass(frozen=True)
class StoreConfig:
    url: str
    key_file: Path | None  # where the keyring lives when it is a file we may rewrite
    keys_from_env: bool
    created_default: bool = False


def resolve(
    environ: Mapping[str, str] | None = None, *, base_dir: Path | None = None, create: bool = True
) -> tuple[StoreConfig, Keyring]:
    """Work out the store URL and keyring; create the local default key file if allowed."""
    env = os.environ if environ is None else environ
    base = (base_dir or Path.cwd()) / DEFAULT_DIR
    url = env.get(ENV_URL, "").strip() or f"sqlite:///{base / DEFAULT_DB}"
    if env.get(ENV_KEY, "").strip():
        return StoreConfig(url, None, True), Keyring.parse(env[ENV_KEY])
    if env.get(ENV_KEY_FILE, "").strip():
        path = Path(env[ENV_KEY_FILE])
        return StoreConfig(url, path, False), Keyring.from_file(path)
    if env.get(ENV_URL, "").strip():
        # A configured store takes its key only from the configured variables: never a
        # local default key file that happens to be in the working directory, never a new key.
        raise MissingKeyError(
            f"{ENV_URL} is set but no master key is: set {ENV_KEY} or {ENV_KEY_FILE}"
        )
    default_key = base / DEFAULT_KEY_FILE
    if default_key.exists():
        return StoreConfig(url, default_key, False), Keyring.from_file(default_key)
    if not create:
        raise MissingKeyError(f"no master key configured: set {ENV_KEY} or {ENV_KEY_FILE}")
    if (base / DEFAULT_DB).exists():
        # The local store exists but its key is gone: a new key could not read it.
        raise MissingKeyError(
            "the local key store exists but its master key file is missing", path=str(default_key)
        )
    keyring = Keyring.generate()
    keyring.write_file(default_key)
    log.warning(
        "no key store configured: created a local SQLite store and master key "
        "under %s (set %s and %s for production)",
        base,
        ENV_URL,
        ENV_KEY,
    )
    return StoreConfig(url, default_key, False, created_default=True), keyring


def default_store_from_env(
    environ: Mapping[str, str] | None = None, *, base_dir: Path | None = None, **options: Any
) -> EncryptedStore:
    """The store every CLI command uses: from the environment, or the local default."""
    from keystore import open_store

    config, keyring = resolve(environ, base_dir=base_dir)
    # keys from a file: the store re-reads it when it changes (keys rotate, live)
    return open_store(config.url, keyring, key_file=config.key_file, **options)
