"""The research rendering's cheaper steps (session 24): the shifted instant formatted in one
step, and the per-document values checked by their adapters' validators directly, each
against what it replaced."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from pipelines import research


def _reference_instant(moment: datetime, shift_days: int) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    shifted = (moment + timedelta(days=shift_days)).astimezone(UTC)
    return shifted.isoformat(timespec="seconds").replace("+00:00", "Z")


offsets = st.none() | st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))


@given(
    st.datetimes(min_value=datetime(2, 1, 2), max_value=datetime(9998, 12, 30)),
    offsets,
    st.integers(-800, 800),
)
def test_instant_is_the_isoformat_reference(
    moment: datetime, zone: timezone | None, shift_days: int
) -> None:
    moment = moment.replace(tzinfo=zone)
    try:
        expected = _reference_instant(moment, shift_days)
    except OverflowError:
        with pytest.raises(OverflowError):
            research._instant(moment, shift_days)
        return
    assert research._instant(moment, shift_days) == expected


def _outcome(check: Any, value: Any) -> Any:
    try:
        return ("ok", check(value))
    except ValidationError as exc:
        return ("error", [(e["type"], e["loc"]) for e in exc.errors()])


@given(
    st.sampled_from(research._PATHS),
    st.text(max_size=30)
    | st.sampled_from(["x", "2001-03-04T05:06:07Z", "2001-03", "Patient/abc", "AAAA", "a b"])
    | st.floats(allow_nan=False)
    | st.integers(),
)
def test_validator_direct_call_is_the_adapters_call(path: Any, value: Any) -> None:
    _path, _placeholder, adapter = path
    assert _outcome(adapter.validator.validate_python, value) == _outcome(
        adapter.validate_python, value
    )
