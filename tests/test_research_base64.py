"""research.validate skips decoding attachment data that is plain padded base64: every such
string must be accepted by the attachment ``data`` type itself (else a value the model
rejects would be published)."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from pipelines.research import _BASE64, _plain_base64

CHARS = st.sampled_from(list("AZaz09+/=-_ \n\té\x00"))


def _accepted(value: str) -> bool:
    try:
        _BASE64.validate_python(value)
    except ValidationError:
        return False
    return True


@settings(max_examples=3000, deadline=None)
@given(st.text(CHARS, max_size=16))
def test_plain_base64_is_accepted_by_the_data_type(value: str) -> None:
    if _plain_base64(value):
        assert _accepted(value)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64))
def test_what_b64encode_writes_is_plain(data: bytes) -> None:
    value = base64.b64encode(data).decode("ascii")
    assert _plain_base64(value)
    assert _accepted(value)


@pytest.mark.parametrize("value", ["A", "AB=", "A===", "====", "A=B=", "AB C", "AB-_", "ABé="])
def test_other_strings_go_to_the_data_type(value: str) -> None:
    assert not _plain_base64(value)
