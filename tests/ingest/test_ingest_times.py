"""HL7 times: to_document reads MSH-7 once, as parse_ts(msh7) instead of
parse_ts(msh7, parse_offset(msh7)); the two agree on any value (offset kept too)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipelines.hl7.datatypes import parse_offset, parse_ts

_TIME = st.tuples(
    st.sampled_from(["", " ", "  "]),
    st.text(alphabet="0123456789", min_size=0, max_size=16),
    st.sampled_from(["", ".1", ".1234"]),
    st.sampled_from(["", "+", "-", "+0000", "-0500", "+0530", "+2400", "-9999", "+05", "-0a00"]),
    st.sampled_from(["", " "]),
).map("".join)


@given(_TIME)
def test_msh7_read_with_its_own_offset_as_default_is_msh7_read_alone(value: str) -> None:
    alone = parse_ts(value)
    with_default = parse_ts(value, parse_offset(value))
    assert alone == with_default
    if alone is not None and with_default is not None:
        assert alone.utcoffset() == with_default.utcoffset()
        assert alone.isoformat() == with_default.isoformat()
