"""Pseudonymous research ids: keyed HMACs, so nobody without the key can link them back.

``Pseudonyms(key).pseudonym(kind, *parts)`` is the one function other packages use (the
store exposes it as ``store.pseudonym``). ``kind`` separates id spaces ("patient",
"visit", "research-key"…). For a patient, pass the patient's random ``seed`` from its
sealed state rather than the MRN: then a forgotten (crypto-shredded) patient's old
pseudonyms cannot be recomputed by anyone, and the patient's next identity is unrelated.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable

from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.hmac import HMAC

from keystore.api import PatientState

PSEUDONYM_BYTES = 15  # 120 bits → 24 base32 characters


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
    """HMAC-SHA256 under one key, prepared once: ``cryptography``'s HMAC with the key set up
    at construction, each call copies the prepared context (the same bytes as
    ``hmac.digest(key, data, "sha256")``; the one-shot form sets the key up every call, and
    the stdlib ``hmac`` object's copy and digest add Python calls around the same OpenSSL
    work)."""

    __slots__ = ("_prepared",)

    def __init__(self, key: bytes) -> None:
        self._prepared = HMAC(key, SHA256())

    def digest(self, data: bytes) -> bytes:
        mac = self._prepared.copy()
        mac.update(data)
        return mac.finalize()


_B32 = "abcdefghijklmnopqrstuvwxyz234567"
_B32_PAIRS = tuple(a + b for a in _B32 for b in _B32)  # 10 bits → two characters
_PSEUDONYM_SHIFTS = tuple(range(PSEUDONYM_BYTES * 8 - 10, -1, -10))


def b32_lower(data: bytes) -> str:
    """Lowercase RFC 4648 base32 (no padding for a multiple of 5 bytes, as 15 is). A
    pseudonym's 15 bytes are read as one integer, ten bits (two characters) at a time: the
    standard library's encoder loops in Python, at about twice the cost."""
    if len(data) != PSEUDONYM_BYTES:
        return base64.b32encode(data).decode("ascii").lower()
    value = int.from_bytes(data, "big")
    pairs = _B32_PAIRS
    return "".join([pairs[(value >> shift) & 1023] for shift in _PSEUDONYM_SHIFTS])


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
