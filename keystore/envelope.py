"""Envelope encryption of one record: AES-256-GCM data key, wrapped under a master key.

Every seal draws a fresh random data key and encrypts the record with AES-256-GCM. The
data key is wrapped with AES key wrap (RFC 5649, no nonce) under a *per-record* key
encryption key: HKDF-Expand of the master key's wrapping subkey over the master key id,
the record's lookup hash and its revision. So no long-lived key ever draws a random nonce
(the old scheme wrapped every data key with AES-GCM under one key: its 2^32 random-nonce
budget was a matter of weeks at full rate), and the revision is bound into both layers:
a row whose revision column was changed, or whose sealed bytes were copied from another
revision or another patient, fails authentication.

Envelope versions (the ``record_schema`` column): 1 = the first format (GCM-wrapped data
key, no revision in the associated data) — still read, never written; 2 = this one.
Wrapped keys of version 2 start with a version byte; version 1's are 60 bytes
(12-byte nonce + 32-byte key + 16-byte tag), which a version-2 wrap never is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.keywrap import (
    InvalidUnwrap,
    aes_key_unwrap_with_padding,
    aes_key_wrap_with_padding,
)

from keystore.errors import IntegrityError
from keystore.keyring import Keyring, fingerprint

NONCE_BYTES = 12
LEGACY_ENVELOPE = 1  # read only
ENVELOPE = 2  # what seal() writes
_LEGACY_WRAPPED_BYTES = NONCE_BYTES + 32 + 16
_WRAP_V2 = b"\x02"
_RECORD_AAD = b"deidstream/v1/record\x00"
_WRAP_AAD = b"deidstream/v1/data-key\x00"
_RECORD_AAD_V2 = b"deidstream/v2/record\x00"
_KEK_INFO_V2 = b"deidstream/v2/record-kek\x00"


@dataclass(frozen=True)
class Sealed:
    """What a backend stores for one record (all of it safe to store in the clear)."""

    key_id: str
    wrapped_key: bytes  # version byte || AES-KWP(data key)  (v1: nonce || AES-GCM)
    nonce: bytes
    ciphertext: bytes
    envelope: int = ENVELOPE


def is_legacy_wrap(wrapped: bytes) -> bool:
    """A version-1 wrapped key (AES-GCM with a random nonce)."""
    return len(wrapped) == _LEGACY_WRAPPED_BYTES


def _record_aad(binding: bytes, envelope: int, revision: int) -> bytes:
    if envelope == LEGACY_ENVELOPE:  # the record schema (1) took this place
        return _RECORD_AAD + (1).to_bytes(4, "big") + binding
    return _RECORD_AAD_V2 + envelope.to_bytes(4, "big") + revision.to_bytes(8, "big") + binding


def _kek(keyring: Keyring, key_id: str, binding: bytes, revision: int) -> bytes:
    """The key that wraps one revision of one record's data key: HKDF-Expand(wrapping
    subkey, info, 32) — the subkey is already uniformly random, so no extract step — which
    for one 32-byte block is HMAC(subkey, info || 0x01), computed with the keyring's
    prepared HMAC (a third of the cost; tests check it equals ``HKDFExpand``)."""
    return keyring.kek_hmac(key_id).digest(kek_info(key_id, binding, revision) + b"\x01")


def kek_info(key_id: str, binding: bytes, revision: int) -> bytes:
    return _KEK_INFO_V2 + key_id.encode("ascii") + b"\x00" + revision.to_bytes(8, "big") + binding


def wrap_key(
    keyring: Keyring, binding: bytes, data_key: bytes, revision: int = 0
) -> tuple[str, bytes]:
    """Wrap ``data_key`` under the primary master key; returns (key id, wrapped bytes)."""
    key_id = keyring.primary.key_id
    kek = _kek(keyring, key_id, binding, revision)
    return key_id, _WRAP_V2 + aes_key_wrap_with_padding(kek, data_key)


def unwrap_key(
    keyring: Keyring, binding: bytes, key_id: str, wrapped: bytes, revision: int = 0
) -> bytes:
    """Unwrap a data key (either version). MissingKeyError if ``key_id`` is not configured;
    IntegrityError if it fails authentication (wrong key, moved, other revision, tampered)."""
    wrapping = keyring.wrapping_key(key_id)  # raises MissingKeyError
    try:
        if len(wrapped) == _LEGACY_WRAPPED_BYTES:
            return AESGCM(wrapping).decrypt(
                wrapped[:NONCE_BYTES],
                wrapped[NONCE_BYTES:],
                _WRAP_AAD + key_id.encode("ascii") + b"\x00" + binding,
            )
        if wrapped[:1] == _WRAP_V2:
            return aes_key_unwrap_with_padding(
                _kek(keyring, key_id, binding, revision), wrapped[1:]
            )
    except (InvalidTag, InvalidUnwrap, ValueError):
        pass
    raise IntegrityError(
        "data key failed authentication (wrong master key, or record moved/rolled back/tampered)",
        key_id=key_id,
        record=fingerprint(binding),
    )


def seal(keyring: Keyring, binding: bytes, plaintext: bytes, revision: int = 0) -> Sealed:
    """Encrypt ``plaintext`` as revision ``revision`` of the record addressed by ``binding``
    (its lookup hash)."""
    data_key = AESGCM.generate_key(bit_length=256)
    nonce = os.urandom(NONCE_BYTES)  # a fresh key per seal: one nonce per key
    ciphertext = AESGCM(data_key).encrypt(
        nonce, plaintext, _record_aad(binding, ENVELOPE, revision)
    )
    key_id, wrapped = wrap_key(keyring, binding, data_key, revision)
    return Sealed(key_id, wrapped, nonce, ciphertext, ENVELOPE)


def open_sealed(keyring: Keyring, binding: bytes, sealed: Sealed, revision: int = 0) -> bytes:
    """Decrypt a record; IntegrityError on any tampering (or a revision other than the one it
    was sealed as), MissingKeyError on an unknown key."""
    if sealed.envelope not in (LEGACY_ENVELOPE, ENVELOPE):
        raise IntegrityError(
            "record has an unknown envelope version",
            version=sealed.envelope,
            record=fingerprint(binding),
        )
    if (len(sealed.wrapped_key) == _LEGACY_WRAPPED_BYTES) != (sealed.envelope == LEGACY_ENVELOPE):
        raise IntegrityError(
            "record's wrapped key does not match its envelope version", record=fingerprint(binding)
        )
    data_key = unwrap_key(keyring, binding, sealed.key_id, sealed.wrapped_key, revision)
    try:
        return AESGCM(data_key).decrypt(
            sealed.nonce, sealed.ciphertext, _record_aad(binding, sealed.envelope, revision)
        )
    except InvalidTag:
        raise IntegrityError(
            "record failed authentication (tampered, rolled back, or moved from another patient)",
            record=fingerprint(binding),
        ) from None


def rewrap(keyring: Keyring, binding: bytes, sealed: Sealed, revision: int = 0) -> Sealed:
    """Re-wrap the data key under the primary master key; the ciphertext is untouched.
    A version-1 record cannot be re-wrapped in place (its ciphertext's associated data has
    no revision): :func:`reseal` it."""
    if sealed.envelope != ENVELOPE:
        raise IntegrityError(
            "a version-1 record must be resealed, not re-wrapped", record=fingerprint(binding)
        )
    data_key = unwrap_key(keyring, binding, sealed.key_id, sealed.wrapped_key, revision)
    key_id, wrapped = wrap_key(keyring, binding, data_key, revision)
    return Sealed(key_id, wrapped, sealed.nonce, sealed.ciphertext, ENVELOPE)


def reseal(keyring: Keyring, binding: bytes, sealed: Sealed, revision: int = 0) -> Sealed:
    """The same plaintext sealed afresh in the current envelope under the primary key (a
    version-1 record's upgrade)."""
    return seal(keyring, binding, open_sealed(keyring, binding, sealed, revision), revision)
