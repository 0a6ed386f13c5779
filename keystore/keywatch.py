"""A running instance picks up a changed key file (issue 23 item 1: finalising a forget
needs no downtime).

An instance whose keys come from a key file (``DEIDSTREAM_MASTER_KEY_FILE``, or the local
default) checks the file at each heartbeat (``heartbeat_s``, 10 s): when ``keys rotate`` put
a new key first, the instance seals with it from then on and registers so; when
``--retire-old`` removed the old keys, it reads with what is left. So ``keys rotate
--retire-old`` (and ``keys forget --now``) can wait for the live instances to move to the
new key, then retire the old one, while the service runs. Keys from the environment cannot
change in a running process: those instances are restarted with the new key.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

from keystore.errors import MissingKeyError
from keystore.keyring import Keyring

log = logging.getLogger("deidstream.keystore")

_Signature = tuple[int, int, int, int]


def _signature(path: Path) -> _Signature | None:
    """What changes when the file is rewritten (atomic replace: a new inode)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)


class KeyFileWatch:
    """The key file an instance took its keys from; :meth:`poll` re-reads it once changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen = _signature(path)

    def poll(self) -> Keyring | None:
        """The file's keyring if it changed since the last poll (and reads), else None. A
        file that vanished or became unreadable keeps the keys in use (a WARNING)."""
        seen = _signature(self.path)
        if seen is None or seen == self._seen:
            return None
        self._seen = seen
        try:
            return Keyring.from_file(self.path)
        except MissingKeyError as exc:
            log.warning("key store: the key file changed but cannot be used (%s); kept", exc)
            return None


def adopt(fresh: Keyring, current: Keyring, retired: Iterable[str]) -> Keyring:
    """The keyring an instance uses after its key file changed: the file's keys (its first
    seals), then the keys in use that the file dropped but the store has not retired (they
    may still be needed to read what was sealed under them)."""
    gone = set(retired)
    kept = [k for k in current.key_ids if k not in fresh and k not in gone]
    return fresh.merged_with(current.subset(kept)) if kept else fresh
