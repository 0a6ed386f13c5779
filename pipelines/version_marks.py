"""The version marks of a batch, and their acknowledgement after the broker's ack.

:class:`MarkBatch`: the marks of a batch of documents read with ONE store call, decided
against in order through an in-batch overlay (each decision sees the earlier ones), and the
changed ones written with ONE compare-and-set transaction, from the value read to the value
after the last decision. The keys whose compare-and-set lost (another instance wrote them
meanwhile) are returned, for the processor to decide their documents again one by one.
A key whose current version's output is in flight — decided earlier in the batch with an
output, or named ``in_flight`` by the caller (outputs sent and not yet confirmed) — is
decided against :func:`~pipelines.versions.as_confirmed` of its mark (``view``): the one
rule for a repeat whatever the batch cuts and the broker's timing.

:func:`acknowledge`: the delivery contract's second half (``Processor.commit``) — the
decided versions marked acknowledged, in one transaction from the marks ``process`` wrote,
the long way (read, acknowledge if still current, compare-and-set, retry) where a mark
moved on meanwhile.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from functools import partial
from typing import Generic, Protocol, TypeVar

from keystore.api import MarkStore
from pipelines.outcome import AckToken
from pipelines.stopwatch import Timer, stopwatch
from pipelines.versions import Mark, as_confirmed, update_mark
from pipelines.versions import acknowledge as acknowledge_mark

STAGE = "dedup"  # the stage the mark store calls are timed under


class Decided(Protocol):
    """A document decided in a batch: its research key and its stage times."""

    @property
    def key(self) -> str | None: ...

    @property
    def times(self) -> dict[str, float]: ...


D = TypeVar("D", bound=Decided)


class MarkBatch(Generic[D]):
    """The marks of a batch: read with one store call, decided against in order, written
    with one compare-and-set transaction (see the module docstring)."""

    def __init__(
        self,
        store: MarkStore,
        docs: Sequence[D],
        timer: Timer,
        in_flight: Collection[str] = frozenset(),
    ) -> None:
        self.store = store
        self.timer = timer
        self.in_flight = in_flight  # keys whose outputs the caller has in flight
        self.flying: set[str] = set()  # keys decided here with an output
        self.docs: list[D] = []  # decided against the overlay, in order
        self.read: dict[str, bytes | None] = {}
        self.overlay: dict[str, bytes | None] = {}
        self.usable = True
        self.times: dict[str, float] = {STAGE: 0.0}  # the batch's own store calls
        keys = list(dict.fromkeys(d.key for d in docs if d.key is not None))
        if not keys:
            return
        with stopwatch(self.times, STAGE, timer):
            try:
                got = store.get_marks(keys)
                self.read = {key: got.get(key) for key in keys}
            except Exception:  # noqa: BLE001 - each document then reads its own mark (and
                self.usable = False  # meets the fault itself if it lasts: its item's result)

    def current(self, key: str) -> bytes | None:
        return self.overlay[key] if key in self.overlay else self.read[key]

    def view(self, key: str, mark: Mark) -> Mark:
        """What a decision of ``key`` is taken against: the mark as confirmed when its
        current version's output is in flight (see the module docstring)."""
        if key in self.flying or key in self.in_flight:
            return as_confirmed(mark)
        return mark

    def decided(self, doc: D, key: str, written: bytes | None, output: bool = False) -> None:
        self.overlay[key] = written
        self.docs.append(doc)
        if output:
            self.flying.add(key)

    def write(self) -> set[str]:
        """One compare-and-set per changed key, from the value read to the last decided one;
        the batch's store time is shared out over its decisions. Returns the keys that lost
        (their documents must be decided again)."""
        lost: set[str] = set()
        with stopwatch(self.times, STAGE, self.timer):
            tries = [
                (k, self.read[k], v)
                for k, v in self.overlay.items()
                if v is not None and v != self.read[k]
            ]
            if tries:
                try:
                    results = self.store.compare_and_set_marks(tries)
                except Exception:  # noqa: BLE001 - outcome unknown: decide those keys again
                    results = [False] * len(tries)
                lost = {k for (k, _, _), ok in zip(tries, results, strict=True) if not ok}
        if self.docs:
            share = self.times[STAGE] / len(self.docs)
            for doc in self.docs:
                doc.times[STAGE] = doc.times.get(STAGE, 0.0) + share
        return lost


def acknowledge(store: MarkStore, tokens: Iterable[AckToken]) -> None:
    """Mark the decided versions acknowledged. First try: compare-and-set from the mark
    ``process`` wrote — no read — all in one call. A token whose mark moved on meanwhile (a
    later version of the key in the same batch, another instance) goes the long way: read,
    acknowledge if still current, compare-and-set, retry."""
    tries: list[tuple[str, bytes | None, bytes]] = []
    tried: list[AckToken] = []
    slow: list[AckToken] = []
    for token in tokens:
        if token.mark is None:
            slow.append(token)
            continue
        before = token.decoded if token.decoded is not None else Mark.decode(token.mark)
        after = _ack_step(token, before)
        if after == before:
            slow.append(token)
            continue
        tries.append((token.key, token.mark, after.encode()))
        tried.append(token)
    if tries:
        results = store.compare_and_set_marks(tries)
        slow += [t for t, ok in zip(tried, results, strict=True) if not ok]
    for token in slow:
        update_mark(store, token.key, partial(_ack_step, token), Mark.decode)


def _ack_step(token: AckToken, mark: Mark) -> Mark:
    return acknowledge_mark(mark, token.text_hash, token.state, token.version_id)


__all__ = ["STAGE", "Decided", "MarkBatch", "acknowledge"]
