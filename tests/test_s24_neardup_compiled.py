"""The compiled comparison of a visit's sketch with the stored visits (session 24:
``_sketch_c.nearest`` behind ``VisitSketches.nearest``) against the Python code it stands in
for: the same answer for any table, including entries it declines (values out of order,
repeated, not from ``_pack``) and entries that do not decode (the same error)."""

from __future__ import annotations

import base64
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.memo import memos
from pipelines.near_duplicates import VisitSketches, _pack, _packed, _stored_words

pytestmark = pytest.mark.skipif(
    compiled.BUILT["sketch"] is None, reason="the compiled sketch helper is not built"
)

values = st.lists(st.integers(0, 300) | st.integers(0, (1 << 32) - 1), max_size=70)


def _entry(kind: str, vals: list[int]) -> str:
    if kind == "sorted":
        return "5:" + _pack(tuple(sorted(set(vals))))
    if kind == "raw":  # any order, repeats: the Python code's sets ignore both
        return "5:" + base64.b64encode(struct.pack(f"<{len(vals)}I", *vals)).decode()
    if kind == "lenient":  # base64 the lenient decoder reads (newline, no padding check)
        return "5:" + base64.encodebytes(struct.pack(f"<{len(vals)}I", *vals)).decode()
    return "5"  # no ':' at all: an empty sketch


entries = st.tuples(st.sampled_from(["sorted", "sorted", "raw", "lenient", "bare"]), values)


def _answer(table: dict[str, str], mine: Any, at_least: float, on: bool) -> Any:
    with compiled.compiled(on), memos(on):
        try:
            return VisitSketches(table, "p:").nearest("v0", mine, at_least)
        except ValueError as exc:
            return ("error", str(exc))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(entries, max_size=10),
    values,
    st.sampled_from([0.0, 0.2, 0.5, 0.8, 1.0]),
    st.booleans(),
    st.booleans(),
)
def test_compiled_nearest_is_the_python_nearest(
    visits: list[tuple[str, list[int]]],
    mine: list[int],
    at_least: float,
    sort_mine: bool,
    with_other_keys: bool,
) -> None:
    table: dict[str, str] = {"other": "x:y"} if with_other_keys else {}
    for i, (kind, vals) in enumerate(visits):
        table[f"p:v{i}"] = _entry(kind, vals)
    signature = tuple(sorted(set(mine))) if sort_mine else tuple(mine)
    expected = _answer(table, signature, at_least, False)
    assert _answer(table, signature, at_least, True) == expected
    assert _answer(table, signature, at_least, True) == expected  # memo hits this time


@given(values)
def test_packed_words_are_the_decoded_words(signature: list[int]) -> None:
    packed, words = _packed(signature)
    assert packed == _pack(signature)
    assert words is None or words == _stored_words(f"1:{packed}")


def test_an_entry_that_does_not_decode_raises_as_in_python() -> None:
    table = {"p:v1": "3:AAAAAA=="}  # 4 bytes + 0: four bytes... then a bad length
    table["p:v2"] = "3:" + base64.b64encode(b"\x01\x02\x03").decode()  # 3 bytes: no words
    assert _answer(table, (1, 2), 0.0, True) == _answer(table, (1, 2), 0.0, False)
    assert _answer(table, (1, 2), 0.0, True)[0] == "error"


filed_texts = st.sampled_from(["7", "007", "12", "3", "+3", " 4", "1_0", "9" * 19, "", "x"])


def _after_add(table: dict[str, str], filed: int, on: bool) -> Any:
    table = dict(table)
    with compiled.compiled(on), memos(on):
        try:
            VisitSketches(table, "p:").add("new", filed, (1, 2, 3))
        except ValueError as exc:
            return ("error", str(exc))
    return table


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 30), filed_texts, st.booleans()), max_size=22),
    st.integers(0, 20),
)
def test_compiled_eviction_is_the_python_eviction(
    entries_: list[tuple[int, str, bool]], filed: int
) -> None:
    """The entries evicted (ties on filing time by name, several at once) and the errors of
    filing times ``int`` reads otherwise, or not at all, as the Python code has them."""
    table: dict[str, str] = {"other": "1:z"}
    for key, filed_text, colon in entries_:
        table[f"p:k{key:02d}"] = filed_text + (":AAAA" if colon else "")
    assert _after_add(table, filed, True) == _after_add(table, filed, False)
