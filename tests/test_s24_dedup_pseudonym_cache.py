"""The processor's pseudonym cache: a pure function's memo, least recently used evicted first,
each pseudonym asked of the store once while it is kept."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keystore.memory import InMemoryStore
from pipelines import process
from pipelines.policy import Policy
from pipelines.process import Processor


class _Counting:
    def __init__(self) -> None:
        self.asked: list[tuple[str | bytes, ...]] = []

    def __call__(self, kind: str, *parts: str | bytes) -> str:
        self.asked.append((kind, *parts))
        return f"{kind}:{'/'.join(map(str, parts))}"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.sampled_from([b"s", "t"])), max_size=40))
def test_cache_is_a_least_recently_used_memo(calls: list[tuple[str, str | bytes]]) -> None:
    source = _Counting()
    proc = Processor(policy=Policy.load(None), store=InMemoryStore(), pseudonyms=source)
    limit = 3
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(process, "PSEUDONYM_CACHE", limit)
        recent: list[tuple[str | bytes, ...]] = []  # the model: most recent last
        for kind, part in calls:
            key = (kind, part)
            expected_ask = key not in recent
            before = len(source.asked)
            assert proc._pseudonym(kind, part) == source(kind, part)
            source.asked.pop()  # the reference call above
            assert (len(source.asked) > before) == expected_ask
            if key in recent:
                recent.remove(key)
            recent = [*recent, key][-limit:]
        assert list(proc._pseudonyms) == recent
