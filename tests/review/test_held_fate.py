"""Issue 23.7: ``deidstream held list`` says what became of each held input — held, in
review, kept held by review, released, published, superseded — from the held topic's
records and the key store's facts (version marks, the review queue), on SQLite and
PostgreSQL."""

from __future__ import annotations

from types import SimpleNamespace

from keystore import EncryptedStore
from keystore.reviewdb import DocRow, ReviewDb
from pipelines.versions import Current, Mark, State, VersionOrder
from service.commands.held import Coordinates, HeldEntry, entry_of, list_lines
from service.commands.held_fate import fates, store_facts


def _held(offset: int, at: int, key: str, released: str = "") -> HeldEntry:
    headers = [
        *([("released-from", released.encode())] if released else []),
        ("reason-class", b"leak_guard"),
        ("reason", b"leak guard: MRN=1"),
        ("source-topic", b"in.hl7v2"),
        ("source-partition", b"0"),
        ("source-offset", str(offset).encode()),
        ("first-seen", b"2026-01-01T00:00:00"),
    ]
    record = SimpleNamespace(headers=headers, partition=0, offset=at, value=b"{}", key=key.encode())
    entry = entry_of(record, False)
    assert entry is not None and entry.research_key == key
    return entry


def _live(store: EncryptedStore, key: str) -> None:
    order = VersionOrder(1, 2, 1, b"t", b"h")
    mark = Mark(Current(State.LIVE, b"h", order, "v1", True, "v1", None))
    assert store.compare_and_set_mark(key, None, mark.encode())


def test_each_held_input_says_what_became_of_it(store: EncryptedStore) -> None:
    entries = [
        _held(1, 0, "k-published"),  # released by review, then published
        _held(2, 1, "k-again"),  # released, held again as 0:7
        _held(3, 2, "k-review"),  # in review
        _held(4, 3, "k-kept"),  # review kept it held
        _held(5, 4, "k-waiting"),  # released, not decided yet
        _held(6, 5, "k-newer"),  # a later version of the report was published
        _held(7, 6, "k-again", released="in.hl7v2:0:2"),
        _held(8, 7, "k-plain"),
    ]
    db = ReviewDb(store.backend)
    for offset, status in ((1, "released"), (3, "open"), (4, "held"), (5, "releasing")):
        db.add_doc(
            DocRow(f"d{offset}", f"in.hl7v2:0:{offset}", "leak_guard", "r", status, 0.0, None)
        )
    _live(store, "k-published")
    _live(store, "k-newer")
    got = fates(entries, *store_facts(store, entries))
    said = {c.offset: f for c, f in got.items()}
    assert said == {
        1: "published",
        2: "superseded by in.hl7v2:0:7",
        3: "held, in review",
        4: "held, kept by review",
        5: "released",
        6: "superseded",
        7: "held",
        8: "held",
    }
    lines = list_lines(entries, got)
    assert lines[0].split("\t")[:2] == ["in.hl7v2:0:1", "leak_guard"]
    assert [ln.rsplit("\t", 1)[1] for ln in lines][:2] == [
        "published",
        "superseded by in.hl7v2:0:7",
    ]
    assert "\t" not in list_lines(entries)[0].split("leak guard: MRN=1")[1]  # no fate: as before
    assert Coordinates("in.hl7v2", 0, 8) in got
