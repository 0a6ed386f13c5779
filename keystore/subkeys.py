"""The store's own keys: lookup HMAC, pseudonyms, pseudonym index, marks.

They derive (HKDF, one label per purpose) from a random *store root* kept in the store,
wrapped by the master key like any data key. Deriving them from the master key directly
would change every lookup hash and pseudonym at each key rotation; the root survives
rotation (it is re-wrapped), so research ids stay stable while master keys change.
"""

from __future__ import annotations

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESSIV

from keystore.envelope import unwrap_key
from keystore.errors import IntegrityError
from keystore.keyring import (
    PURPOSE_LOOKUP,
    PURPOSE_MARK_KEY,
    PURPOSE_MARK_VALUE,
    PURPOSE_PSEUDONYM,
    PURPOSE_PSEUDONYM_INDEX,
    Keyring,
    derive_subkey,
)
from keystore.pseudonyms import KeyedHash, Pseudonyms, encode_parts

ROOT_BYTES = 32
ROOT_BINDING = b"deidstream/v1/store-root"  # the store root's wrap binding
# the same, for a store whose audit log has a sealed head anchor (keystore/audit.py): the
# root says so under the master key, so deleting the anchor row cannot pass for "never had one"
ROOT_BINDING_ANCHORED = b"deidstream/v1/store-root+audit-anchor"


def open_root(keyring: Keyring, key_id: str, wrapped: bytes) -> tuple[bytes, bytes]:
    """The store root and the binding it is wrapped under (anchored or not)."""
    try:
        return unwrap_key(keyring, ROOT_BINDING_ANCHORED, key_id, wrapped), ROOT_BINDING_ANCHORED
    except IntegrityError:
        return unwrap_key(keyring, ROOT_BINDING, key_id, wrapped), ROOT_BINDING


class StoreKeys:
    """Everything keyed by the store root; holds no master key."""

    def __init__(self, root: bytes) -> None:
        if len(root) != ROOT_BYTES:
            raise IntegrityError("store root key has the wrong length")
        self._lookup = KeyedHash(derive_subkey(root, PURPOSE_LOOKUP))
        self._pindex = KeyedHash(derive_subkey(root, PURPOSE_PSEUDONYM_INDEX))
        self._mark_key = KeyedHash(derive_subkey(root, PURPOSE_MARK_KEY))
        # AES-SIV: deterministic AEAD, so compare-and-set can compare ciphertexts in SQL.
        self._mark_siv = AESSIV(derive_subkey(root, PURPOSE_MARK_VALUE, length=64))
        self.pseudonyms = Pseudonyms(derive_subkey(root, PURPOSE_PSEUDONYM))

    def lookup(self, authority: str, patient_id: str) -> bytes:
        """The record address: HMAC(authority, patient id). No plaintext id is stored."""
        return self._lookup.digest(encode_parts(authority, patient_id))

    def pseudonym_index(self, pseudonym: str) -> bytes:
        return self._pindex.digest(encode_parts(pseudonym))

    def mark_key(self, key: str) -> bytes:
        return self._mark_key.digest(encode_parts(key))

    def seal_mark(self, key_hash: bytes, value: bytes) -> bytes:
        return self._mark_siv.encrypt(value, [key_hash])

    def sealed_pair(
        self,
        key: str,
        expected: bytes | None,
        value: bytes,
        known: tuple[bytes, bytes | None, bytes | None] | None = None,
    ) -> tuple[bytes, bytes | None, bytes]:
        """One compare-and-set of mark ``key`` sealed: (key hash, ``expected`` sealed or None,
        ``value`` sealed). ``known``: (key hash, value, its ciphertext) last read or written
        for the key; its hash, and its ciphertext when it is ``expected``, are re-used (the
        seal is deterministic: the bytes are the same)."""
        key_hash = self.mark_key(key) if known is None else known[0]
        if expected is None:
            old = None
        elif known is not None and known[1] == expected and known[2] is not None:
            old = known[2]
        else:
            old = self.seal_mark(key_hash, expected)
        return key_hash, old, self.seal_mark(key_hash, value)

    def open_mark(self, key_hash: bytes, sealed: bytes) -> bytes:
        try:
            return self._mark_siv.decrypt(sealed, [key_hash])
        except InvalidTag:
            raise IntegrityError("mark failed authentication") from None
