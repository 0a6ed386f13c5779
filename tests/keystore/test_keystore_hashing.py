"""The keystore's own HMAC and base32 helpers give exactly the standard library's bytes
(pseudonyms, lookup hashes and mark keys must never change)."""

from __future__ import annotations

import base64
import hmac

from hypothesis import given
from hypothesis import strategies as st

from keystore.audit import AuditKeys
from keystore.keyring import Keyring, MasterKey
from keystore.pseudonyms import KeyedHash, Pseudonyms, b32_lower, encode_parts
from keystore.subkeys import StoreKeys


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


# Literal values computed by the code that wrote the stores in use (before KeyedHash and
# b32_lower became stdlib calls): if one of these changes, existing stores can no longer be
# read (lookup hashes, mark keys, pseudonym index) or research ids change (pseudonyms).
_ROOT = bytes(range(32))


def test_pinned_pseudonyms() -> None:
    assert Pseudonyms(_ROOT).pseudonym("patient", b"\x01" * 32) == "727hc7hkvk3mgk5mupfaqvhc"
    keys = StoreKeys(_ROOT)
    assert keys.pseudonyms.pseudonym("visit", b"\x02" * 32, "V1") == "tizo2mwcdck3yxhc2hwsbqgy"


def test_pinned_store_hashes() -> None:
    keys = StoreKeys(_ROOT)
    assert keys.lookup("MRN-AUTH", "P123").hex() == (
        "2f072beb4c69faaa9a7d60ed817fb7da5f98574f09be287889214b8cbeca978a"
    )
    assert keys.mark_key("version:abc").hex() == (
        "36e137a7a09de60e92b97bf1b8455e584761148cd9cc72a4fb354eba9598a597"
    )
    assert keys.pseudonym_index("abcdefghijklmnopqrstuvwx").hex() == (
        "e7963499fba1ca505be0a31539eb88fbb3dc2fae198782566d55992f4f97e354"
    )
    assert AuditKeys(_ROOT).subject("pseudonym", "abc") == "sa6404186ec38bda5d47ef95e"
    keyring = Keyring([MasterKey("k1", _ROOT)])
    assert keyring.kek_hmac("k1").digest(b"record").hex() == (
        "65bb046b8b53279eea78cf26bb5e6a0c914ae10a64a553e0215d2d566c4b1548"
    )
