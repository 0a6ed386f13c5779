"""Report-version deduplication per (patient, visit, report type): NLM Scrubber's rule, online.

Only the most recent, most developed report of a key counts. Documents are ordered by
filing time, then status rank (corrected/amended > final > preliminary; a retraction ranks
above all so it wins a tie), then version number, then a keyed hash of the message id, then
the text hash — a total order, so every arrival order ends in the same state, same-time
corrections aside (below: there the later arrival wins):

- same normalised text as the key's current version → ``duplicate`` (a replay, or a re-send;
  a re-send that only raises the status rank, preliminary → final, is published instead; a
  re-send filed later moves the mark's order forward, so a version filed in between stays
  ``superseded`` whatever the arrival order);
- same text as a recently seen older version, or older than the current one → ``duplicate``
  or ``superseded``;
- newer → ``publish`` under the same research key, replacing the current version's id;
- a **same-time correction** — the same filing time, status rank and version number as the
  current version but another text, not one of the key's recent texts — is ``publish``
  (replacing the current version), whatever the message ids: senders re-send corrected
  reports without touching the timestamps, and the later arrival on the input topic (the
  partition keeps a patient's order) is the correction. ``Verdict.correction`` says so;
- entered-in-error / cancelled → ``tombstone`` for the key (a later version revives it).

The state per key is a :class:`Mark` in the keystore's :class:`~keystore.api.MarkStore`
(written with compare-and-set so several instances agree). It holds keyed hashes, times and
ranks only — no text, no identifiers; the key itself is a pseudonym (keyed HMAC).

At-least-once: a decided ``publish``/``tombstone``/``held`` mark is written *unacknowledged*
before the output leaves; a replay that meets an unacknowledged mark with the same text does
the work again (same research key, same bytes) instead of dropping it as a duplicate. Once
the output is acknowledged, :func:`acknowledge` flips the mark, and from then on a replay is
a ``duplicate`` — except a ``held`` version: it never reached the topic, so it consumes
nothing, and every re-send of its text is decided (and de-identified) again: published once
the cause is fixed, held again (one more held record) while it is not. Near-duplicates
across visits are :mod:`pipelines.near_duplicates`' job.

A version whose output this instance has in flight (decided, sent or being sent, not yet
confirmed) is not a crash's leftover: a repeat of it is decided against
:func:`as_confirmed` of the mark — what the mark will be once the output is confirmed — so
the verdict never depends on how the inputs were cut into batches or how fast the broker
acknowledged (a repeat is a ``duplicate``, a held version's re-send is decided again).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Protocol, TypeVar

import orjson

from keystore.api import MarkStore
from pipelines import compiled
from pipelines.document import ClinicalDocument, Status
from pipelines.errors import TransientError
from surrogates.pieces import whitespace_pieces

MARK_FORMAT = 1
SEEN_LIMIT = 8  # text hashes of earlier versions remembered per key (exact-repeat detection)

STATUS_RANK: dict[Status, int] = {
    Status.PRELIMINARY: 1,
    Status.FINAL: 2,
    Status.AMENDED: 3,
    Status.CORRECTED: 3,
    Status.ENTERED_IN_ERROR: 4,
}


class Decision(StrEnum):
    PUBLISH = "publish"
    TOMBSTONE = "tombstone"
    DUPLICATE = "duplicate"
    SUPERSEDED = "superseded"


class State(StrEnum):
    LIVE = "live"  # published (or being published) under the key
    HELD = "held"  # newest version, held back by the leak guard; the topic keeps the older one
    TOMBSTONE = "tombstone"


# --------------------------------------------------------------------------------------
# Fingerprint: what dedup knows of one document


def normalise(text: str) -> str:
    """Case- and whitespace-insensitive form used for the exact-repeat hash.

    ``str.split()`` splits on exactly the characters ``\\s`` matches (``str.isspace``), so
    this is ``re.sub(r"\\s+", " ", text).strip()`` — the stored hashes stay valid — in C.
    """
    return " ".join(text.split()).casefold()


_NORMALISE_PIECE_CHARS = 1 << 18  # a long text is normalised and hashed this much at a time


def normalised_hash(key: str, text: str, piece_chars: int = _NORMALISE_PIECE_CHARS) -> bytes:
    """``keyed_hash(key, normalise(text))`` without the normalised copy of a long text and a
    string per word of it at once: pieces cut at whitespace, each normalised and hashed in
    turn (``casefold`` is per character, so the pieces' folds join into the text's). An
    ASCII text's pieces are normalised by the compiled helper (``pipelines.compiled``,
    "normalise": one pass, no string per word) where it is built; :func:`_normalised_piece`
    is its reference."""
    digest = hashlib.blake2b(key=key.encode("utf-8")[:64], digest_size=16)
    fast = compiled.helper("normalise")
    piece = fast.ascii_normalised if fast is not None and text.isascii() else _normalised_piece
    separator = b""
    for start, end in whitespace_pieces(text, piece_chars):
        normal: bytes = piece(text, start, end)
        if normal:
            digest.update(separator)
            digest.update(normal)
            separator = b" "
    return digest.digest()


def _normalised_piece(text: str, start: int, end: int) -> bytes:
    """``text[start:end]`` normalised (:func:`normalise`), UTF-8; empty when it has no word."""
    return " ".join(text[start:end].split()).casefold().encode("utf-8")


def keyed_hash(key: str, data: str, size: int = 16) -> bytes:
    """A keyed BLAKE2b digest: the key is a secret-derived pseudonym, so short inputs
    (message ids, short notes) cannot be confirmed by guessing."""
    k = key.encode("utf-8")[:64]
    return hashlib.blake2b(data.encode("utf-8"), key=k, digest_size=size).digest()


def _utc_micros(moment: datetime | None) -> int:
    if moment is None:
        return -1
    if moment.tzinfo is None:  # HL7 times without an offset are taken as UTC
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1_000_000)


@dataclass(frozen=True, slots=True, order=True)
class VersionOrder:
    """Sort key of a document within its research key; larger is newer / more developed."""

    filing_us: int
    status_rank: int
    version: int
    tiebreak: bytes
    text_hash: bytes

    def to_json(self) -> list[object]:
        return [
            self.filing_us,
            self.status_rank,
            self.version,
            self.tiebreak.hex(),
            self.text_hash.hex(),
        ]

    @classmethod
    def from_json(cls, raw: Sequence[object]) -> VersionOrder:
        t, r, v, tb, th = raw
        return cls(
            int(str(t)), int(str(r)), int(str(v)), bytes.fromhex(str(tb)), bytes.fromhex(str(th))
        )


@dataclass(frozen=True, slots=True)
class Fingerprint:
    key: str  # the research key (pseudonym of patient|visit|report type)
    text_hash: bytes
    order: VersionOrder
    retraction: bool
    version_id: str  # pseudonymous id of this version, the research DocumentReference.id

    @property
    def status_rank(self) -> int:
        return self.order.status_rank


def fingerprint(document: ClinicalDocument, research_key: str) -> Fingerprint:
    text_hash = normalised_hash(research_key, document.text)
    rank = STATUS_RANK.get(document.status, STATUS_RANK[Status.FINAL])
    filed = document.version.filing_time or document.document_date
    version = document.version.version_number
    order = VersionOrder(
        filing_us=_utc_micros(filed),
        status_rank=rank,
        version=-1 if version is None else version,
        tiebreak=keyed_hash(research_key, "msg\x1f" + document.message_id, 8),
        text_hash=text_hash,
    )
    version_id = keyed_hash(research_key, f"version\x1f{text_hash.hex()}\x1f{rank}", 16).hex()
    return Fingerprint(
        key=research_key,
        text_hash=text_hash,
        order=order,
        retraction=document.status is Status.ENTERED_IN_ERROR,
        version_id=version_id,
    )


# --------------------------------------------------------------------------------------
# The per-key mark


@dataclass(frozen=True, slots=True)
class Current:
    """The newest version decided for a key."""

    state: State
    text_hash: bytes
    order: VersionOrder
    version_id: str
    acked: bool  # its output (publish / tombstone / held record) was acknowledged downstream
    live_id: str | None  # the version the research topic holds for the key (None: nothing)
    replaces: str | None  # what this version's output said it replaces (kept for a redo)


@dataclass(frozen=True, slots=True)
class Mark:
    current: Current | None = None
    seen: tuple[bytes, ...] = ()  # text hashes of earlier versions, newest last

    def encode(self) -> bytes:
        cur = self.current
        body: dict[str, object] = {"f": MARK_FORMAT, "seen": [h.hex() for h in self.seen]}
        if cur is not None:
            body["cur"] = {
                "s": cur.state.value,
                "h": cur.text_hash.hex(),
                "o": cur.order.to_json(),
                "id": cur.version_id,
                "a": cur.acked,
                "live": cur.live_id,
                "rep": cur.replaces,
            }
        return orjson.dumps(body)

    @classmethod
    def decode(cls, raw: bytes | None) -> Mark:
        if raw is None:
            return cls()
        body = orjson.loads(raw)
        if body.get("f") != MARK_FORMAT:
            raise ValueError(f"unknown version-mark format {body.get('f')!r}")
        c = body.get("cur")
        current = None
        if c is not None:
            current = Current(
                state=State(c["s"]),
                text_hash=bytes.fromhex(c["h"]),
                order=VersionOrder.from_json(c["o"]),
                version_id=c["id"],
                acked=bool(c["a"]),
                live_id=c.get("live"),
                replaces=c.get("rep"),
            )
        return cls(current=current, seen=tuple(bytes.fromhex(h) for h in body.get("seen", ())))


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    replaces: str | None = None  # version id the published document replaces
    redo: bool = False  # repeating an output whose acknowledgement was never recorded
    advance: bool = False  # a duplicate that carries a newer order: the mark moves forward
    correction: bool = False  # a same-time re-send with another text (module docstring)

    @property
    def writes(self) -> bool:
        """Does settling this verdict change the mark?"""
        return self.decision in (Decision.PUBLISH, Decision.TOMBSTONE) or self.advance


def decide(mark: Mark, fp: Fingerprint) -> Verdict:
    """The version rule. Pure: the same (mark, fingerprint) always gives the same verdict.

    An unacknowledged current version is redone by a document that is at least as new and
    has the same text (the replay of its own message, or a re-send taking over); an older
    one leaves it to the handler of the current version, whose input is not committed yet.
    """
    cur = mark.current
    if cur is None:
        return Verdict(Decision.TOMBSTONE if fp.retraction else Decision.PUBLISH)
    newer = fp.order > cur.order
    at_least = newer or fp.order == cur.order
    if fp.retraction:
        return _decide_retraction(cur, newer, at_least)
    if cur.state is State.TOMBSTONE:
        if newer:
            return Verdict(Decision.PUBLISH)
        return Verdict(Decision.DUPLICATE if fp.text_hash in mark.seen else Decision.SUPERSEDED)
    if fp.text_hash == cur.text_hash:
        return _decide_same_text(cur, fp, newer, at_least)
    return _decide_other_text(mark, cur, fp, newer)


def _decide_retraction(cur: Current, newer: bool, at_least: bool) -> Verdict:
    """A retraction against a current version."""
    if cur.state is State.TOMBSTONE:
        if not cur.acked and at_least:
            return Verdict(Decision.TOMBSTONE, redo=True)
        return Verdict(Decision.DUPLICATE, advance=newer and cur.acked)
    return Verdict(Decision.TOMBSTONE) if newer else Verdict(Decision.SUPERSEDED)


def _decide_same_text(cur: Current, fp: Fingerprint, newer: bool, at_least: bool) -> Verdict:
    """A document with the text of the current (live or held) version."""
    if cur.state is State.HELD and cur.acked:
        # a held version never reached the topic: it consumed nothing, so a re-send
        # (after the detector or the message was fixed) is decided again, not dropped
        return Verdict(Decision.PUBLISH, replaces=cur.live_id, redo=True)
    if newer and fp.status_rank > cur.order.status_rank:
        return Verdict(Decision.PUBLISH, replaces=cur.live_id)  # preliminary -> final
    if not cur.acked:
        if at_least:  # the earlier output may never have left: do it again
            return Verdict(Decision.PUBLISH, replaces=cur.replaces, redo=True)
        return Verdict(Decision.DUPLICATE)
    return Verdict(Decision.DUPLICATE, advance=newer)


def _decide_other_text(mark: Mark, cur: Current, fp: Fingerprint, newer: bool) -> Verdict:
    """A document with another text than the current (live or held) version."""
    seen = fp.text_hash in mark.seen
    if same_time(fp.order, cur.order):  # the later arrival wins (module docstring)
        if seen:
            return Verdict(Decision.DUPLICATE)
        return Verdict(Decision.PUBLISH, replaces=cur.live_id, correction=True)
    if newer:
        return Verdict(Decision.PUBLISH, replaces=cur.live_id)
    return Verdict(Decision.DUPLICATE if seen else Decision.SUPERSEDED)


def same_time(a: VersionOrder, b: VersionOrder) -> bool:
    """Same filing time, status rank and version number: what a sender sets (the message id
    and the text only break the tie)."""
    return a.filing_us == b.filing_us and a.status_rank == b.status_rank and a.version == b.version


def as_confirmed(mark: Mark) -> Mark:
    """The mark as it will be once its current version's output is confirmed: what a repeat
    is decided against while that output is in flight (never written)."""
    cur = mark.current
    if cur is None or cur.acked:
        return mark
    acked = Current(
        cur.state, cur.text_hash, cur.order, cur.version_id, True, cur.live_id, cur.replaces
    )
    return Mark(acked, mark.seen)


def _remember(seen: tuple[bytes, ...], text_hash: bytes) -> tuple[bytes, ...]:
    kept = tuple(h for h in seen if h != text_hash)
    return (*kept, text_hash)[-SEEN_LIMIT:]


def settle(mark: Mark, fp: Fingerprint, verdict: Verdict, *, held: bool = False) -> Mark:
    """The mark after ``verdict`` (``held``: the leak guard kept a publish back)."""
    cur = mark.current
    if verdict.decision in (Decision.DUPLICATE, Decision.SUPERSEDED):
        if not verdict.advance or cur is None:
            return mark
        order = max(cur.order, fp.order)
        return Mark(
            Current(
                cur.state,
                cur.text_hash,
                order,
                cur.version_id,
                cur.acked,
                cur.live_id,
                cur.replaces,
            ),
            mark.seen,
        )
    if verdict.redo and cur is not None:
        previous_live, seen = cur.replaces, mark.seen
    elif cur is not None:
        previous_live, seen = cur.live_id, _remember(mark.seen, cur.text_hash)
    else:
        previous_live, seen = None, mark.seen
    if verdict.decision is Decision.TOMBSTONE:
        state, live = State.TOMBSTONE, None
    elif held:
        state, live = State.HELD, previous_live
    else:
        state, live = State.LIVE, fp.version_id
    # a redo never moves the order back (a re-send of a held version may carry an older one)
    order = max(cur.order, fp.order) if verdict.redo and cur is not None else fp.order
    new = Current(
        state=state,
        text_hash=fp.text_hash,
        order=order,
        version_id=fp.version_id,
        acked=False,
        live_id=live,
        replaces=verdict.replaces,
    )
    return Mark(current=new, seen=seen)


def acknowledge(mark: Mark, text_hash: bytes, state: State, version_id: str = "") -> Mark:
    """The mark once the output for (text, state[, version id]) was acknowledged; unchanged
    if stale. The version id (text and status rank) keeps a confirmation from acknowledging
    a later version of the same text with another status (preliminary → final) decided
    while the first was in flight: that one's output is not sent yet."""
    cur = mark.current
    if cur is None or cur.acked or cur.text_hash != text_hash or cur.state is not state:
        return mark
    if version_id and cur.version_id != version_id:
        return mark
    # the constructors, not dataclasses.replace (dearer): once per published output
    acked = Current(
        cur.state, cur.text_hash, cur.order, cur.version_id, True, cur.live_id, cur.replaces
    )
    return Mark(acked, mark.seen)


# --------------------------------------------------------------------------------------
# Compare-and-set against the store


class _Codec(Protocol):
    def encode(self) -> bytes: ...


M = TypeVar("M", bound=_Codec)


def update_mark(
    store: MarkStore,
    key: str,
    step: Callable[[M], M],
    decode: Callable[[bytes | None], M],
    *,
    attempts: int = 32,
) -> tuple[M, M]:
    """Read the mark, compute ``step(mark)``, write it with compare-and-set; retry on a
    lost race. Returns (the mark read, the mark written). ``step`` must be pure."""
    for _ in range(attempts):
        raw = store.get_mark(key)
        before = decode(raw)
        after = step(before)
        if after == before:
            return before, after
        if store.compare_and_set_mark(key, raw, after.encode()):
            return before, after
    raise TransientError("version mark contention: compare-and-set kept losing", attempts=attempts)
