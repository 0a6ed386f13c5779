"""The producer's partitioner: the fast murmur2 equals aiokafka's (the Java client's) for any
key, so every keyed record goes to the partition it went to before."""

from __future__ import annotations

from aiokafka.partitioner import DefaultPartitioner
from aiokafka.partitioner import murmur2 as reference
from hypothesis import given
from hypothesis import strategies as st

from service.runner.clients import murmur2, partition_for


@given(st.binary(max_size=80))
def test_murmur2_equals_aiokafkas(key: bytes) -> None:
    assert murmur2(key) == reference(key)


def test_murmur2_every_tail_length() -> None:
    for n in range(64):
        key = bytes((i * 37 + n) & 0xFF for i in range(n))
        assert murmur2(key) == reference(key)
        high = bytes(0xFF - (i & 0x0F) for i in range(n))  # high bits set in every byte
        assert murmur2(high) == reference(high)


@given(st.binary(min_size=1, max_size=40), st.integers(1, 64))
def test_partition_for_equals_the_default_partitioner(key: bytes, partitions: int) -> None:
    every = list(range(partitions))
    assert partition_for(key, every, every) == DefaultPartitioner()(key, every, every)


def test_a_record_without_key_goes_to_an_available_partition() -> None:
    for _ in range(50):
        assert partition_for(None, [0, 1, 2], [2]) == 2
        assert partition_for(None, [0, 1, 2], []) in (0, 1, 2)
