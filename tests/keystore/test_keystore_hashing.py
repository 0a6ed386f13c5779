"""The keystore's own HMAC and base32 helpers give exactly the standard library's bytes
(pseudonyms, lookup hashes and mark keys must never change)."""

from __future__ import annotations

import base64
import hmac

from hypothesis import given
from hypothesis import strategies as st

from keystore.pseudonyms import KeyedHash, Pseudonyms, b32_lower, encode_parts


@given(st.binary(min_size=0, max_size=200), st.binary(max_size=400))
def test_keyed_hash_is_hmac_sha256(key: bytes, data: bytes) -> None:
    assert KeyedHash(key).digest(data) == hmac.digest(key, data, "sha256")


@given(st.binary(min_size=15, max_size=15))
def test_b32_lower_is_rfc4648_base32_lowercased(data: bytes) -> None:
    assert b32_lower(data) == base64.b32encode(data).decode("ascii").lower()


def test_pseudonym_is_the_documented_construction() -> None:
    key = bytes(range(32))
    parts = ("research-key", b"\x00seed", "VIS1", "http://loinc.org|1-8")
    expected = base64.b32encode(hmac.digest(key, encode_parts(*parts), "sha256")[:15])
    assert Pseudonyms(key).pseudonym(*parts) == expected.decode("ascii").lower()
    # the part encoding: type tag, 4-byte length, bytes — so ("ab", "c") != ("a", "bc")
    assert encode_parts("ab", "c") != encode_parts("a", "bc")
    assert encode_parts("é", b"x") == b"s\x00\x00\x00\x02\xc3\xa9b\x00\x00\x00\x01x"
