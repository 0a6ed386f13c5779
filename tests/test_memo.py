"""The memo facility (pipelines/memo.py): bounded, counted, and switchable off."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import memo
from pipelines.memo import Memo, memos


def _counting(name: str, size: int = 3) -> tuple[Memo[int, int], list[int]]:
    calls: list[int] = []

    def compute(key: int) -> int:
        calls.append(key)
        return key * 2

    return Memo(name, compute, size), calls


def test_a_memo_remembers_and_counts() -> None:
    m, calls = _counting("test.counts")
    assert [m(1), m(1), m(2), m(1)] == [2, 2, 4, 2]
    assert calls == [1, 2]
    (row,) = [s for s in memo.stats() if s.name == "test.counts"]
    assert (row.hits, row.misses, row.stored, row.size, row.clears) == (2, 2, 2, 3, 0)
    assert row.hit_rate == 0.5


def test_a_full_memo_is_emptied_and_stays_bounded() -> None:
    m, calls = _counting("test.bounded", size=3)
    for key in range(10):
        m(key)
        assert len(m) <= 3
    assert m.clears == 3  # after keys 0-2, 3-5, 6-8
    m(9)
    assert calls == list(range(10))  # 9 was kept: a hit, not computed again


def test_memos_off_computes_every_answer_and_stores_none() -> None:
    m, calls = _counting("test.switch")
    m(1)
    with memos(False):
        assert not m.on
        assert len(m) == 0  # emptied on the way in
        assert [m(1), m(1)] == [2, 2]
        assert len(m) == 0
    assert m.on
    m(1)
    m(1)
    assert calls == [1, 1, 1, 1]  # once before, twice off, once after (emptied on the way out)


def test_one_memo_can_be_turned_off_by_name() -> None:
    a, a_calls = _counting("test.named_a")
    b, b_calls = _counting("test.named_b")
    with memos(False, "test.named_a"):
        for _ in range(2):
            a(1)
            b(1)
    assert (a_calls, b_calls) == ([1, 1], [1])


def test_an_unknown_memo_name_is_refused() -> None:
    with pytest.raises(ValueError, match="no memo named"), memos(False, "test.nothing_by_that"):
        pass


def test_a_memo_needs_a_name_and_a_size() -> None:
    with pytest.raises(ValueError):
        Memo("", str, 1)
    with pytest.raises(ValueError):
        Memo("test.empty", str, 0)


def test_peek_and_put_count_and_obey_the_switch() -> None:
    m: Memo[str, int | None] = Memo("test.peek", len, 4)
    missing = object()
    assert m.peek("a", missing) is missing
    m.put("a", None)  # None is an answer like any other
    assert m.peek("a", missing) is None
    with memos(False):
        m.put("b", 1)
        assert m.peek("b", missing) is missing
    assert (m.hits, m.misses) == (1, 2)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-5, 5), max_size=30), st.integers(1, 4))
def test_many_answers_as_one_call_per_key(keys: list[int], size: int) -> None:
    m, _ = _counting("test.many", size)
    hits, misses = m.hits, m.misses
    assert m.many(keys) == [k * 2 for k in keys]
    assert m.hits + m.misses - hits - misses == len(keys)
    assert len(m) <= size


def test_many_on_keys_all_known_computes_nothing_and_counts_hits() -> None:
    m, calls = _counting("test.many_known", size=10)
    keys = [3, 1, 3, 2]
    assert m.many(keys) == [6, 2, 6, 4]
    assert calls == [3, 1, 2]
    hits = m.hits
    assert m.many(keys) == [6, 2, 6, 4]  # every key a hit: the one-call path
    assert m.many([1, 5]) == [2, 10]  # one miss: the path key by key
    assert calls == [3, 1, 2, 5]
    assert (m.hits - hits, m.misses) == (5, 4)
    with memos(False):
        assert m.many(keys) == [6, 2, 6, 4]  # an off memo stores nothing: computed again
    assert calls == [3, 1, 2, 5, 3, 1, 3, 2]


def test_the_detectors_memos_are_registered() -> None:
    from pipelines.phi.detector import Detector

    Detector()
    assert {
        "lexicons.name_score",
        "locations.after_cue.window",
        "names.steps.mixed",
        "tagger.words",
    } <= memo.names()


def test_memoized_functions_key_on_their_arguments_and_take_no_keywords() -> None:
    calls: list[tuple[int, int]] = []

    @memo.memoized("test.memoized", 8)
    def add(a: int, b: int) -> int:
        calls.append((a, b))
        return a + b

    assert [add(1, 2), add(1, 2), add(2, 1)] == [3, 3, 3]
    assert calls == [(1, 2), (2, 1)]
    assert add.__wrapped__(5, 5) == 10
    with pytest.raises(TypeError, match="positional"):
        add(1, b=2)
    with memos(False, "test.memoized"):
        add(1, 2)
    assert calls == [(1, 2), (2, 1), (5, 5), (1, 2)]


def test_stats_carry_counts_and_names_never_keys_or_answers() -> None:
    m: Memo[str, str] = Memo("test.private", str.upper, 4)
    m("orla quillfeather")
    (row,) = [s for s in memo.stats() if s.name == "test.private"]
    shown = repr(row) + repr(memo.stats())
    assert "quillfeather" not in shown.lower()
    assert all(isinstance(v, int) for v in (row.size, row.stored, row.hits, row.misses))
