"""The visits' sketch table without repeated decoding (session 24): the packing, the entry
a new visit leaves (its set put in the memo, not decoded later), and the eviction of the
oldest visits, each against a plain reference."""

from __future__ import annotations

import base64
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.memo import memos
from pipelines.near_duplicates import (
    _SETS,
    SKETCH_VISITS,
    VisitSketches,
    _pack,
    _stored_set,
)

values = st.lists(st.integers(0, (1 << 32) - 1), max_size=70)


@given(values)
def test_pack_is_base64_of_little_endian_words(signature: list[int]) -> None:
    reference = base64.b64encode(struct.pack(f"<{len(signature)}I", *signature)).decode("ascii")
    assert _pack(signature) == reference
    assert _stored_set(f"7:{reference}") == frozenset(signature)


def _reference_add(
    table: dict[str, str], prefix: str, key: str, filed: int, signature: tuple[int, ...]
) -> bool:
    """What ``VisitSketches.add`` did before: every visit's filing time parsed each time."""
    value = f"{filed}:{base64.b64encode(struct.pack(f'<{len(signature)}I', *signature)).decode()}"
    name = prefix + key
    if table.get(name) == value:
        return False
    table[name] = value
    visits = [(int(v[: v.index(":")]), n) for n, v in table.items() if n.startswith(prefix)]
    for _, oldest in sorted(visits)[: max(0, len(visits) - SKETCH_VISITS)]:
        del table[oldest]
    return True


visit_adds = st.lists(
    st.tuples(
        st.sampled_from(["a:", "b:"]),  # two (patient, type) prefixes share the table
        st.integers(0, 40),  # research key
        st.integers(0, 30),  # filing time (ties: the name decides)
        st.sets(st.integers(0, 200), max_size=8),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(visit_adds, st.booleans())
def test_add_keeps_the_table_the_reference_keeps(
    adds: list[tuple[str, int, int, set[int]]], memo_on: bool
) -> None:
    """Entries, evictions (one or several at once) and return values as before, memos on or
    off; every stored entry's set in the memo is the set its text decodes to."""
    mine: dict[str, str] = {"context.visits": "[]"}
    theirs: dict[str, str] = dict(mine)
    with memos(memo_on):
        for prefix, key, filed, values_ in adds:
            signature = tuple(sorted(values_))
            as_set = frozenset(signature) if key % 2 else None
            changed = VisitSketches(mine, prefix).add(f"k{key}", filed, signature, as_set)
            assert changed == _reference_add(theirs, prefix, f"k{key}", filed, signature)
            assert mine == theirs
            if len(mine) > 3 * SKETCH_VISITS:  # a table squeezed to the visits kept
                for name in list(mine)[: SKETCH_VISITS // 2]:
                    del mine[name], theirs[name]
        for name, value in mine.items():
            if name != "context.visits":
                remembered = _SETS.table().get(value)
                assert remembered is None or remembered == _stored_set(value)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sets(st.integers(0, 120), max_size=66), min_size=1, max_size=10),
    st.sets(st.integers(0, 120), max_size=66),
    st.sampled_from([0.0, 0.3, 0.8, 1.0]),
)
def test_nearest_after_adds_equals_nearest_on_a_decoded_copy(
    visits: list[set[int]], mine: set[int], at_least: float
) -> None:
    """Visits added through ``add`` (their sets put in the memo) score as the same entries
    read back from their text with the memos off; a set or the sorted tuple alike."""
    table: dict[str, str] = {}
    sketches = VisitSketches(table, "p:")
    for i, theirs in enumerate(visits):
        sketches.add(f"v{i}", i, tuple(sorted(theirs)))
    signature = tuple(sorted(mine))
    found = sketches.nearest("v0", frozenset(signature), at_least)
    assert found == sketches.nearest("v0", signature, at_least)
    with memos(False):
        assert VisitSketches(dict(table), "p:").nearest("v0", signature, at_least) == found
