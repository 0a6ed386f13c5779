"""What became of each held input, for ``deidstream held list`` (issue 23.7): still held (in
review or kept held by it), released (re-sent, the service has not decided it yet),
published, or superseded (held again as a later entry, or a later version of the report).

The held topic says which entries were released and held again (``released-from``) and
which later entries share a research key (the held record's key); the key store says what
the review workbench did with an entry (``review_docs``) and what the research topic holds
for its key (the version mark: live = a version is published). Nothing here reads text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from service.commands.held import Coordinates, HeldEntry


class Fate(StrEnum):
    HELD = "held"
    IN_REVIEW = "held, in review"
    KEPT = "held, kept by review"
    RELEASED = "released"
    PUBLISHED = "published"
    SUPERSEDED = "superseded"


def fates(
    entries: Sequence[HeldEntry],
    live_keys: Mapping[str, bool],
    reviewed: Mapping[str, str],
) -> dict[Coordinates, str]:
    """Each input's fate. ``live_keys``: research key → its version mark says a version is
    published (acknowledged); ``reviewed``: coordinates → the review queue's document status."""
    latest: dict[Coordinates, HeldEntry] = {}
    again_as: dict[str, str] = {}
    last_of_key: dict[str, HeldEntry] = {}
    for entry in entries:
        latest[entry.coordinates] = entry
        if entry.released_from:
            again_as[entry.released_from] = str(entry.coordinates)
        if entry.research_key:
            last_of_key[entry.research_key] = entry
    out: dict[Coordinates, str] = {}
    for coords, entry in latest.items():
        later = last_of_key.get(entry.research_key) if entry.research_key else None
        review = reviewed.get(str(coords), "")
        if str(coords) in again_as:
            out[coords] = f"{Fate.SUPERSEDED} by {again_as[str(coords)]}"
        elif later is not None and later.coordinates != coords:
            out[coords] = f"{Fate.SUPERSEDED} by {later.coordinates}"
        elif live_keys.get(entry.research_key, False):
            # the key's newest version is published: this one (released) or a later one
            out[coords] = Fate.PUBLISHED if review == "released" else Fate.SUPERSEDED
        elif review in ("released", "releasing"):
            out[coords] = Fate.RELEASED
        elif review == "held":
            out[coords] = Fate.KEPT
        elif review == "open":
            out[coords] = Fate.IN_REVIEW
        else:
            out[coords] = Fate.HELD
    return out


def store_facts(store: Any, entries: Sequence[HeldEntry]) -> tuple[dict[str, bool], dict[str, str]]:
    """(live keys, review statuses) from the key store, for :func:`fates`."""
    from pipelines.versions import Mark, State

    keys = sorted({e.research_key for e in entries if e.research_key})
    live: dict[str, bool] = {}
    for key, raw in store.get_marks(keys).items():
        cur = Mark.decode(raw).current
        live[key] = cur is not None and cur.state is State.LIVE and cur.acked
    reviewed: dict[str, str] = {}
    try:
        from keystore.reviewdb import ReviewDb

        db = ReviewDb(store.backend)
        for status in ("open", "releasing", "released", "held"):
            for doc in db.docs(status):
                reviewed[doc.coordinates.split("#", 1)[0]] = status
    except Exception:  # noqa: BLE001 - no review tables (an older schema): topic facts only
        reviewed = {}
    return live, reviewed
