"""Envelope encryption of one record: AES-256-GCM data key, wrapped by a master key.

Every seal draws a fresh random data key. The data key is wrapped with AES-256-GCM under
the master key's wrapping subkey; the master key id is kept beside it. The record's lookup
hash is associated data of both layers, so a record (or just its wrapped key) copied onto
another patient's row fails authentication instead of decrypting to the wrong patient.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from keystore.errors import IntegrityError
from keystore.keyring import Keyring, fingerprint

NONCE_BYTES = 12
_RECORD_AAD = b"deidstream/v1/record\x00"
_WRAP_AAD = b"deidstream/v1/data-key\x00"


@dataclass(frozen=True)
class Sealed:
    """What a backend stores for one record (all of it safe to store in the clear)."""

    key_id: str
    wrapped_key: bytes  # wrap nonce || AES-GCM(data key)
    nonce: bytes
    ciphertext: bytes


def _record_aad(binding: bytes, schema: int) -> bytes:
    return _RECORD_AAD + schema.to_bytes(4, "big") + binding


def _wrap_aad(binding: bytes, key_id: str) -> bytes:
    return _WRAP_AAD + key_id.encode("ascii") + b"\x00" + binding


def wrap_key(keyring: Keyring, binding: bytes, data_key: bytes) -> tuple[str, bytes]:
    """Wrap ``data_key`` under the primary master key; returns (key id, wrapped bytes)."""
    key_id = keyring.primary.key_id
    nonce = os.urandom(NONCE_BYTES)
    wrapped = AESGCM(keyring.wrapping_key(key_id)).encrypt(
        nonce, data_key, _wrap_aad(binding, key_id)
    )
    return key_id, nonce + wrapped


def unwrap_key(keyring: Keyring, binding: bytes, key_id: str, wrapped: bytes) -> bytes:
    """Unwrap a data key. MissingKeyError if ``key_id`` is not configured."""
    wrapping = keyring.wrapping_key(key_id)  # raises MissingKeyError
    try:
        return AESGCM(wrapping).decrypt(
            wrapped[:NONCE_BYTES], wrapped[NONCE_BYTES:], _wrap_aad(binding, key_id)
        )
    except InvalidTag:
        raise IntegrityError(
            "data key failed authentication (wrong master key, or record moved/tampered)",
            key_id=key_id,
            record=fingerprint(binding),
        ) from None


def seal(keyring: Keyring, binding: bytes, plaintext: bytes, schema: int = 1) -> Sealed:
    """Encrypt ``plaintext`` for the record addressed by ``binding`` (its lookup hash)."""
    data_key = AESGCM.generate_key(bit_length=256)
    nonce = os.urandom(NONCE_BYTES)
    ciphertext = AESGCM(data_key).encrypt(nonce, plaintext, _record_aad(binding, schema))
    key_id, wrapped = wrap_key(keyring, binding, data_key)
    return Sealed(key_id, wrapped, nonce, ciphertext)


def open_sealed(keyring: Keyring, binding: bytes, sealed: Sealed, schema: int = 1) -> bytes:
    """Decrypt a record; IntegrityError on any tampering, MissingKeyError on unknown key."""
    data_key = unwrap_key(keyring, binding, sealed.key_id, sealed.wrapped_key)
    try:
        return AESGCM(data_key).decrypt(
            sealed.nonce, sealed.ciphertext, _record_aad(binding, schema)
        )
    except InvalidTag:
        raise IntegrityError(
            "record failed authentication (tampered, or moved from another patient)",
            record=fingerprint(binding),
        ) from None


def rewrap(keyring: Keyring, binding: bytes, sealed: Sealed) -> Sealed:
    """Re-wrap the data key under the primary master key; the ciphertext is untouched."""
    data_key = unwrap_key(keyring, binding, sealed.key_id, sealed.wrapped_key)
    key_id, wrapped = wrap_key(keyring, binding, data_key)
    return Sealed(key_id, wrapped, sealed.nonce, sealed.ciphertext)
