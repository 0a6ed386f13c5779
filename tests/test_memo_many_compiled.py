"""``Memo.many`` with its look-ups compiled (``_words_c.many``) and in Python: the same values,
the same counts, the same calls of ``compute`` (session 21)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.memo import Memo

_words = st.lists(st.sampled_from(["a", "b", "cc", "d'e", "ünï", "x", ""]), max_size=30)


def _run(enabled: bool, known: list[str], keys: list[str]) -> tuple[object, ...]:
    calls: list[str] = []

    def compute(key: str) -> str:
        calls.append(key)
        return key.upper() + "!"

    m: Memo[str, str] = Memo("test.many_compiled", compute, 100)
    for key in known:
        m(key)
    with compiled.compiled(enabled):
        values = m.many(keys)
    return values, calls, m.hits, m.misses, sorted(m._store.items())


@settings(max_examples=200, deadline=None)
@given(known=_words, keys=_words)
def test_many_compiled_is_the_python_lookups(known: list[str], keys: list[str]) -> None:
    assert _run(True, known, keys) == _run(False, known, keys)
    assert _run(True, known, keys)[0] == [k.upper() + "!" for k in keys]


def test_many_reads_a_tuple_of_keys_too() -> None:
    m: Memo[str, int] = Memo("test.many_tuple", len, 10)
    assert m.many(("ab", "c", "ab")) == [2, 1, 2]
    assert (m.hits, m.misses) == (1, 2)


@pytest.mark.skipif(compiled.BUILT["words"] is None, reason="the words helper is not built")
def test_the_compiled_lookups_give_hits_and_miss_positions() -> None:
    fast = compiled.BUILT["words"]
    assert fast is not None
    missing = object()
    values, missed = fast.many({"a": 1, "b": 2}, ["a", "x", "b", "x"], missing)
    assert values == [1, missing, 2, missing]
    assert missed == [1, 3]
    with pytest.raises(TypeError):
        fast.many({}, [["unhashable"]], missing)
