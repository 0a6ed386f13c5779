"""Properties every surrogate shares: deterministic given the state, never the original."""

from __future__ import annotations

from copy import deepcopy

from hypothesis import given, settings
from hypothesis import strategies as st
from surrogate_helpers import FakeSpan, make_ctx, make_state

from surrogates import replacer_for

CATEGORIES = [
    "NAME_PATIENT", "NAME_PROVIDER", "NAME_RELATIVE", "NAME_OTHER", "PHONE", "FAX", "EMAIL",
    "SSN", "MRN", "ACCOUNT", "HEALTH_PLAN", "LICENSE", "VEHICLE", "DEVICE", "URL", "IP",
    "LOCATION_STREET", "LOCATION_CITY", "LOCATION_ZIP", "LOCATION_HOSPITAL", "LOCATION_OTHER", "ID",
]  # fmt: skip
values = st.from_regex(
    r"[A-Za-z][a-z]{1,8}( [A-Z][a-z]{1,8})?|[0-9]{3,9}|[A-Z]{2}[0-9]{4}", fullmatch=True
) | st.text(alphabet="abcXYZ019 .-'/,@:#()", min_size=2, max_size=20).filter(
    lambda v: v.strip() == v and any(c.isalnum() for c in v)
)


@settings(max_examples=150, deadline=None)
@given(
    category=st.sampled_from(CATEGORIES),
    value=values,
    seed=st.binary(min_size=32, max_size=32),
)
def test_deterministic_and_never_the_original(category: str, value: str, seed: bytes) -> None:
    text = f"note: {value} end"
    span = FakeSpan(6, 6 + len(value), category)
    state = make_state(seed)
    twin = deepcopy(state)
    out = replacer_for(category).replace(span, make_ctx(text, state))
    assert out == replacer_for(category).replace(span, make_ctx(text, twin))
    assert out.casefold() != value.casefold()
    assert state.name_map == twin.name_map and state.id_map == twin.id_map
    # The stored maps alone reproduce it (a later document, after a restart).
    assert replacer_for(category).replace(span, make_ctx(text, deepcopy(state))) == out
