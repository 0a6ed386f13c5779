"""Envelope encryption: round trip, and every kind of tampering is rejected."""

from __future__ import annotations

import dataclasses
import os

import pytest

from keystore.envelope import Sealed, open_sealed, rewrap, seal
from keystore.errors import IntegrityError, MissingKeyError
from keystore.keyring import Keyring, MasterKey

LOOKUP_A = os.urandom(32)
LOOKUP_B = os.urandom(32)


def _flip(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1 :]


def test_round_trip_and_fresh_data_key_each_time(keyring: Keyring) -> None:
    one = seal(keyring, LOOKUP_A, b"state")
    two = seal(keyring, LOOKUP_A, b"state")
    assert open_sealed(keyring, LOOKUP_A, one) == b"state"
    assert one.key_id == keyring.primary.key_id
    assert one.wrapped_key != two.wrapped_key and one.ciphertext != two.ciphertext
    assert b"state" not in one.ciphertext


@pytest.mark.parametrize("field", ["ciphertext", "nonce", "wrapped_key"])
def test_tampered_bytes_are_rejected(keyring: Keyring, field: str) -> None:
    sealed = seal(keyring, LOOKUP_A, b"some patient state")
    raw = getattr(sealed, field)
    for index in (0, len(raw) // 2, len(raw) - 1):
        bad = dataclasses.replace(sealed, **{field: _flip(raw, index)})
        with pytest.raises(IntegrityError):
            open_sealed(keyring, LOOKUP_A, bad)


def test_truncated_ciphertext_is_rejected(keyring: Keyring) -> None:
    sealed = seal(keyring, LOOKUP_A, b"some patient state")
    with pytest.raises(IntegrityError):
        open_sealed(
            keyring, LOOKUP_A, dataclasses.replace(sealed, ciphertext=sealed.ciphertext[:-1])
        )


def test_wrong_key_with_same_id_is_rejected(keyring: Keyring) -> None:
    sealed = seal(keyring, LOOKUP_A, b"x")
    impostor = Keyring([MasterKey(keyring.primary.key_id, os.urandom(32))])
    with pytest.raises(IntegrityError):
        open_sealed(impostor, LOOKUP_A, sealed)


def test_unknown_key_id_is_missing_key(keyring: Keyring) -> None:
    sealed = seal(keyring, LOOKUP_A, b"x")
    with pytest.raises(MissingKeyError):
        open_sealed(Keyring.generate("other"), LOOKUP_A, sealed)


def test_relabelled_key_id_is_rejected(keyring: Keyring) -> None:
    both = keyring.merged_with(Keyring.generate("other"))
    sealed = seal(both, LOOKUP_A, b"x")
    with pytest.raises(IntegrityError):
        open_sealed(both, LOOKUP_A, dataclasses.replace(sealed, key_id="other"))


def test_swapped_records_are_rejected(keyring: Keyring) -> None:
    a = seal(keyring, LOOKUP_A, b"patient a")
    b = seal(keyring, LOOKUP_B, b"patient b")
    with pytest.raises(IntegrityError):
        open_sealed(keyring, LOOKUP_B, a)
    # Moving only the wrapped data key, or only the ciphertext, fails as well.
    with pytest.raises(IntegrityError):
        open_sealed(keyring, LOOKUP_B, dataclasses.replace(b, wrapped_key=a.wrapped_key))
    with pytest.raises(IntegrityError):
        open_sealed(keyring, LOOKUP_B, Sealed(b.key_id, b.wrapped_key, a.nonce, a.ciphertext))


def test_rewrap_changes_only_the_wrapping(keyring: Keyring) -> None:
    sealed = seal(keyring, LOOKUP_A, b"x")
    new = Keyring.generate("new").merged_with(keyring)
    moved = rewrap(new, LOOKUP_A, sealed)
    assert moved.key_id == "new" and moved.ciphertext == sealed.ciphertext
    assert open_sealed(Keyring.generate("unrelated").merged_with(new), LOOKUP_A, moved) == b"x"
    with pytest.raises(MissingKeyError):
        open_sealed(keyring, LOOKUP_A, moved)
