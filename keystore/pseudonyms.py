"""Pseudonymous research ids: keyed HMACs, so nobody without the key can link them back.

``Pseudonyms(key).pseudonym(kind, *parts)`` is the one function other packages use (the
store exposes it as ``store.pseudonym``). ``kind`` separates id spaces ("patient",
"visit", "research-key"…). For a patient, pass the patient's random ``seed`` from its
sealed state rather than the MRN: then a forgotten (crypto-shredded) patient's old
pseudonyms cannot be recomputed by anyone, and the patient's next identity is unrelated.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable

from keystore.api import PatientState

PSEUDONYM_BYTES = 15  # 120 bits → 24 base32 characters
_BLOCK = 64  # SHA-256 block size (RFC 2104's B)
_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))
# lowercase RFC 4648 base32, ten bits (two characters) at a time
_B32 = "abcdefghijklmnopqrstuvwxyz234567"
_B32_PAIRS = tuple(a + b for a in _B32 for b in _B32)


def encode_parts(*parts: str | bytes) -> bytes:
    """Unambiguous byte encoding of a tuple: type tag + length prefix per part."""
    out = []
    for part in parts:
        if isinstance(part, str):
            raw = part.encode("utf-8")
            out.append(b"s" + len(raw).to_bytes(4, "big"))
        else:
            raw = bytes(part)
            out.append(b"b" + len(raw).to_bytes(4, "big"))
        out.append(raw)
    return b"".join(out)


class KeyedHash:
    """HMAC-SHA256 under one key, with the key's inner and outer pads hashed once.

    The same bytes as ``hmac.digest(key, data, "sha256")`` (RFC 2104), about three times
    cheaper per call: the one-shot ``hmac.digest`` fetches the digest by name and sets up a
    fresh HMAC context (both pads) every time, while here each call only copies two
    prepared SHA-256 states.
    """

    __slots__ = ("_inner", "_outer")

    def __init__(self, key: bytes) -> None:
        if len(key) > _BLOCK:
            key = hashlib.sha256(key).digest()
        key = key.ljust(_BLOCK, b"\0")
        self._inner = hashlib.sha256(key.translate(_IPAD))
        self._outer = hashlib.sha256(key.translate(_OPAD))

    def digest(self, data: bytes) -> bytes:
        inner = self._inner.copy()
        inner.update(data)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()


def b32_lower(data15: bytes) -> str:
    """``base64.b32encode(data15).decode().lower()`` for exactly 15 bytes (no padding).

    The twelve ten-bit pairs written out, joined from a tuple (a list comprehension is a
    function call of its own: ~1.2 µs -> ~0.8)."""
    n = int.from_bytes(data15, "big")
    p = _B32_PAIRS
    return "".join((
        p[n >> 110 & 1023], p[n >> 100 & 1023], p[n >> 90 & 1023], p[n >> 80 & 1023],
        p[n >> 70 & 1023], p[n >> 60 & 1023], p[n >> 50 & 1023], p[n >> 40 & 1023],
        p[n >> 30 & 1023], p[n >> 20 & 1023], p[n >> 10 & 1023], p[n & 1023],
    ))


class Pseudonyms:
    """Keyed-HMAC pseudonyms; FHIR-id safe (lowercase base32, 24 characters)."""

    __slots__ = ("_hmac",)

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("pseudonym key too short")
        self._hmac = KeyedHash(bytes(key))

    @classmethod
    def random(cls) -> Pseudonyms:
        """For tests and in-memory stores: a key that lives as long as the object."""
        return cls(os.urandom(32))

    def pseudonym(self, kind: str, *parts: str | bytes) -> str:
        return b32_lower(self._hmac.digest(encode_parts(kind, *parts))[:PSEUDONYM_BYTES])

    __call__ = pseudonym


def pseudonym(key: bytes, kind: str, *parts: str | bytes) -> str:
    """Functional form of :meth:`Pseudonyms.pseudonym`."""
    return Pseudonyms(key).pseudonym(kind, *parts)


def new_patient_state(
    pseudonym: Callable[..., str], shift_days: int, seed: bytes | None = None
) -> PatientState:
    """A fresh PatientState whose pseudonym derives from its own random seed (not the MRN)."""
    seed = os.urandom(32) if seed is None else seed
    return PatientState(shift_days=shift_days, pseudonym=pseudonym("patient", seed), seed=seed)
