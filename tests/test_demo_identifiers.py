"""The leak check the stream and image tests use: an identifier counts wherever it stands,
except by chance inside an opaque token (a pseudonym's digest, a base64 value)."""

from __future__ import annotations

import pytest

from tests.support.demo_identifiers import identifiers_in


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("born 1958, seen", ["1958"]),
        ("DOB 19580412", ["1958"]),  # inside a compact date: still the birth year
        ("Vance's chest film", ["Vance"]),
        ("VANCE, ELEANOR", ["Vance", "Eleanor"]),
        ("Graceland", ["Grace"]),  # a word with no digit is never opaque
        ("key e41958af0c0123456789ab", []),  # hex digest
        ("data UHJvZ3Jlc3Mgbm90ZSwgMDQ1958vMDIvMjAyNS4K", []),  # base64
        ("ref 1958-ab", ["1958"]),  # short: not opaque
    ],
)
def test_identifiers_found_outside_opaque_tokens(text: str, found: list[str]) -> None:
    assert identifiers_in(text) == found
