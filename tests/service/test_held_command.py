"""``deidstream held``: coordinates as printed and parsed, the list's lines (no broker; the
broker round trip is tests/integration/test_held_release.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from service.commands.held import Coordinates, HeldError, entry_of, list_lines


def test_coordinates_round_trip_and_bad_ones_are_refused() -> None:
    c = Coordinates.parse("clinical.hl7v2:2:1045")
    assert c == Coordinates("clinical.hl7v2", 2, 1045) and str(c) == "clinical.hl7v2:2:1045"
    for bad in ("clinical.hl7v2:2", ":1:2", "t:x:1", "t:1:-1", "t:1:١٢"):
        with pytest.raises(HeldError):
            Coordinates.parse(bad)


def _held(offset: int, at: int, released: bytes = b"") -> SimpleNamespace:
    headers = [
        *([("released-from", released)] if released else []),
        ("reason-class", b"leak_guard"),
        ("reason", b"known identifier left: name"),
        ("source-topic", b"in.hl7v2"),
        ("source-partition", b"0"),
        ("source-offset", str(offset).encode()),
        ("first-seen", b"2026-01-01T00:00:00"),
    ]
    return SimpleNamespace(headers=headers, partition=0, offset=at, value=b"{}")


def test_list_has_one_line_per_input_and_says_when_it_was_held_again() -> None:
    entries = [
        e
        for e in (
            entry_of(_held(7, 0), False),
            entry_of(_held(3, 1), False),
            entry_of(_held(7, 2), False),
        )
        if e is not None
    ]
    lines = list_lines(entries)
    assert [ln.split("\t")[0] for ln in lines] == ["in.hl7v2:0:3", "in.hl7v2:0:7"]
    assert lines[1].endswith("(held 2 times)") and "times" not in lines[0]
    assert entries[0].value is None  # not secure: the held record's value is not kept
    assert entry_of(SimpleNamespace(headers=[], partition=0, offset=0, value=b""), False) is None


def test_a_release_held_again_is_linked_both_ways() -> None:
    entries = [
        e
        for e in (
            entry_of(_held(3, 0), False),
            entry_of(_held(9, 1, released=b"in.hl7v2:0:3"), False),
        )
        if e is not None
    ]
    first, second = list_lines(entries)
    assert first.endswith("(released, held again as in.hl7v2:0:9)")
    assert second.endswith("(released from in.hl7v2:0:3)")
