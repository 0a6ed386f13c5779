"""Master keys: where they come from, their ids, and the subkeys derived from them.

A keyring is an ordered list of 32-byte master keys with ids; the first one encrypts
(wraps data keys), every one decrypts, which is how rotation works. Master keys are never
used directly: HKDF derives one subkey per purpose, so no key serves two purposes.

Text form (env var ``DEIDSTREAM_MASTER_KEY`` or a key file): either one bare base64 key, or
``id:base64`` entries separated by commas or newlines. A bare key gets an id derived from
the key itself, so every process names the same key the same way.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from keystore.errors import MissingKeyError
from keystore.pseudonyms import KeyedHash

KEY_BYTES = 32
ENV_KEY = "DEIDSTREAM_MASTER_KEY"
ENV_KEY_FILE = "DEIDSTREAM_MASTER_KEY_FILE"
_ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

# HKDF "info" labels: one per purpose. Changing one changes every derived value.
PURPOSE_WRAP = b"deidstream/v1/wrap-data-keys"
PURPOSE_LOOKUP = b"deidstream/v1/record-lookup-hmac"
PURPOSE_PSEUDONYM = b"deidstream/v1/pseudonym-hmac"
PURPOSE_PSEUDONYM_INDEX = b"deidstream/v1/pseudonym-index-hmac"
PURPOSE_MARK_KEY = b"deidstream/v1/mark-key-hmac"
PURPOSE_MARK_VALUE = b"deidstream/v1/mark-value-siv"
PURPOSE_AUDIT_CHAIN = b"deidstream/v1/audit-chain-hmac"
PURPOSE_AUDIT_SUBJECT = b"deidstream/v1/audit-subject-hmac"


def derive_subkey(secret: bytes, purpose: bytes, length: int = KEY_BYTES) -> bytes:
    """HKDF-SHA256 of ``secret`` for one ``purpose`` label."""
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=purpose).derive(secret)


def key_id_for(secret: bytes) -> str:
    """A stable, non-secret id for a bare key (HMAC of a constant, not the key's hash)."""
    return "k" + hmac.digest(secret, b"deidstream/v1/key-id", "sha256")[:6].hex()


@dataclass(frozen=True)
class MasterKey:
    key_id: str
    secret: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if len(self.secret) != KEY_BYTES:
            raise MissingKeyError("master key must be 32 bytes", key_id=self.key_id)
        if not _ID_RE.match(self.key_id):
            raise MissingKeyError("master key id must be 1-64 of [A-Za-z0-9_.-]")

    def entry(self) -> str:
        """``id:base64`` text form (secret material: write only to owner-only files)."""
        return f"{self.key_id}:{base64.b64encode(self.secret).decode('ascii')}"


class Keyring:
    """Ordered master keys; ``primary`` (the first) wraps new data keys, all unwrap."""

    def __init__(self, keys: Iterable[MasterKey]) -> None:
        self._keys: tuple[MasterKey, ...] = tuple(keys)
        if not self._keys:
            raise MissingKeyError("no master key configured")
        ids = [k.key_id for k in self._keys]
        if len(set(ids)) != len(ids):
            raise MissingKeyError("master key ids must be unique")
        self._by_id = {k.key_id: k for k in self._keys}
        self._wrap_cache: dict[str, bytes] = {}
        self._kek_cache: dict[str, KeyedHash] = {}

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def generate(cls, key_id: str | None = None) -> Keyring:
        secret = os.urandom(KEY_BYTES)
        return cls([MasterKey(key_id or key_id_for(secret), secret)])

    @classmethod
    def parse(cls, text: str) -> Keyring:
        """Parse a bare base64 key or ``id:base64`` entries (comma or newline separated)."""
        entries = [e.strip() for e in re.split(r"[,\n]", text) if e.strip()]
        entries = [e for e in entries if not e.startswith("#")]
        if not entries:
            raise MissingKeyError("master key text is empty")
        keys = []
        for index, entry in enumerate(entries):
            key_id, sep, b64 = entry.rpartition(":")
            secret = _decode_key(b64 if sep else entry, index)
            keys.append(MasterKey(key_id if sep else key_id_for(secret), secret))
        return cls(keys)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Keyring:
        """Read a key file; refuse it unless only its owner can read or write it."""
        p = Path(path)
        try:
            info = p.stat()
        except FileNotFoundError:
            raise MissingKeyError("master key file does not exist", path=str(p)) from None
        if os.name == "posix" and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise MissingKeyError(
                "master key file is accessible by group or others; run chmod 600 on it",
                path=str(p),
                mode=oct(stat.S_IMODE(info.st_mode)),
            )
        return cls.parse(p.read_text(encoding="ascii"))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Keyring:
        """``DEIDSTREAM_MASTER_KEY`` first, else ``DEIDSTREAM_MASTER_KEY_FILE``."""
        env = os.environ if environ is None else environ
        if env.get(ENV_KEY, "").strip():
            return cls.parse(env[ENV_KEY])
        if env.get(ENV_KEY_FILE, "").strip():
            return cls.from_file(env[ENV_KEY_FILE])
        raise MissingKeyError(f"no master key configured: set {ENV_KEY} or {ENV_KEY_FILE}")

    # -- use ------------------------------------------------------------------------------
    @property
    def primary(self) -> MasterKey:
        return self._keys[0]

    @property
    def key_ids(self) -> tuple[str, ...]:
        return tuple(k.key_id for k in self._keys)

    def __contains__(self, key_id: object) -> bool:
        return key_id in self._by_id

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"Keyring(key_ids={list(self.key_ids)!r})"

    def wrapping_key(self, key_id: str) -> bytes:
        """The subkey that wraps data keys under master key ``key_id``."""
        cached = self._wrap_cache.get(key_id)
        if cached is not None:
            return cached
        master = self._by_id.get(key_id)
        if master is None:
            raise MissingKeyError(
                "the master key that sealed this record is not configured", key_id=key_id
            )
        derived = derive_subkey(master.secret, PURPOSE_WRAP)
        self._wrap_cache[key_id] = derived
        return derived

    def kek_hmac(self, key_id: str) -> KeyedHash:
        """HMAC-SHA256 keyed by the wrapping subkey of ``key_id`` (pads prepared once): one
        call is HKDF-Expand's single output block, the per-record key encryption key."""
        found = self._kek_cache.get(key_id)
        if found is None:
            found = self._kek_cache[key_id] = KeyedHash(self.wrapping_key(key_id))
        return found

    def merged_with(self, older: Keyring) -> Keyring:
        """This keyring first, then any of ``older``'s keys it lacks (to read old records)."""
        extra = [k for k in older._keys if k.key_id not in self._by_id]
        return Keyring([*self._keys, *extra])

    def subset(self, keep: Iterable[str]) -> Keyring:
        """Only the keys named in ``keep`` (in this keyring's order)."""
        wanted = set(keep)
        return Keyring([k for k in self._keys if k.key_id in wanted])

    def to_text(self) -> str:
        """Key-file text: one ``id:base64`` entry per line."""
        return "".join(k.entry() + "\n" for k in self._keys)

    def write_file(
        self, path: str | os.PathLike[str], *, overwrite: bool = False, shred_previous: bool = True
    ) -> Path:
        """Write the keyring to an owner-only (0600) file, atomically. ``shred_previous``
        (always, unless told otherwise): once the new file is in place, overwrite the
        replaced file's bytes with zeros — every key file held keys, and the replaced one
        may hold a key being retired (a copy-on-write or journaling file system may still
        keep old blocks — see docs/keystore.md)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if p.exists() and not overwrite:
            raise FileExistsError(str(p))
        with _previous(p if shred_previous else None) as previous:
            self._replace(p)
            if previous is not None:
                size = os.fstat(previous).st_size
                os.pwrite(previous, b"\0" * size, 0)
                os.fsync(previous)
        return p

    def _replace(self, p: Path) -> None:
        tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as fh:
                fh.write(self.to_text())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, p)
        finally:
            if tmp.exists():
                tmp.unlink()


@contextmanager
def _previous(path: Path | None) -> Iterator[int | None]:
    """A write descriptor on the file now at ``path`` (kept across its replacement)."""
    if path is None or not path.exists():
        yield None
        return
    if not os.access(path, os.W_OK):
        os.chmod(path, 0o600)  # a read-only key file is still ours to zero
    fd = os.open(path, os.O_WRONLY)
    try:
        yield fd
    finally:
        os.close(fd)


def _decode_key(b64: str, index: int) -> bytes:
    try:
        secret = base64.b64decode(
            b64.strip(), altchars=b"-_" if ("-" in b64 or "_" in b64) else None, validate=True
        )
    except (binascii.Error, ValueError):
        raise MissingKeyError("master key entry is not valid base64", entry=index) from None
    if len(secret) != KEY_BYTES:
        raise MissingKeyError(
            "master key entry must decode to 32 bytes", entry=index, length=len(secret)
        )
    return secret


def fingerprint(data: bytes) -> str:
    """Short non-secret digest for audit lines and error coordinates."""
    return hashlib.sha256(data).hexdigest()[:16]
