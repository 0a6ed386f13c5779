"""Report-version deduplication per (patient, visit, report type): NLM Scrubber's rule, online.

Only the most recent, most developed report of a key counts. Documents are ordered by
filing time, then status rank (corrected/amended > final > preliminary; a retraction ranks
above all so it wins a tie), then version number, then a keyed hash of the message id, then
the text hash — a total order, so every arrival order ends in the same state:

- same normalised text as the key's current version → ``duplicate`` (a replay, or a re-send;
  a re-send that only raises the status rank, preliminary → final, is published instead; a
  re-send filed later moves the mark's order forward, so a version filed in between stays
  ``superseded`` whatever the arrival order);
- same text as a recently seen older version, or older than the current one → ``duplicate``
  or ``superseded``;
- newer → ``publish`` under the same research key, replacing the current version's id;
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
across visits are found with a small keyed bottom-k sketch (:func:`sketch`) per visit, kept
in the patient's sealed state (:class:`VisitSketches`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
import zlib
from array import array
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from functools import lru_cache
from itertools import islice
from typing import Protocol, TypeVar

import orjson

from keystore.api import MarkStore
from pipelines.document import ClinicalDocument, Status
from pipelines.errors import TransientError

MARK_FORMAT = 1
SEEN_LIMIT = 8  # text hashes of earlier versions remembered per key (exact-repeat detection)
SKETCH_SIZE = 64  # bottom-k sketch size: Jaccard estimate error ~ 1/sqrt(k)
SKETCH_VISITS = 16  # visits remembered per (patient, report type) for near-duplicate checks
SHINGLE_WORDS = 3

STATUS_RANK: dict[Status, int] = {
    Status.PRELIMINARY: 1,
    Status.FINAL: 2,
    Status.AMENDED: 3,
    Status.CORRECTED: 3,
    Status.ENTERED_IN_ERROR: 4,
}

_WORD = re.compile(r"\w+")
# bytes.translate table: ASCII word characters (what rb"\w" matches) kept, all others → space
_NON_WORD_BYTES = bytes(c if chr(c).isalnum() and c < 128 or c == 0x5F else 0x20 for c in range(256))


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
        return cls(int(str(t)), int(str(r)), int(str(v)), bytes.fromhex(str(tb)), bytes.fromhex(str(th)))


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
    text_hash = keyed_hash(research_key, normalise(document.text))
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
        if cur.state is State.TOMBSTONE:
            if not cur.acked and at_least:
                return Verdict(Decision.TOMBSTONE, redo=True)
            return Verdict(Decision.DUPLICATE, advance=newer and cur.acked)
        return Verdict(Decision.TOMBSTONE) if newer else Verdict(Decision.SUPERSEDED)
    if cur.state is State.TOMBSTONE:
        if newer:
            return Verdict(Decision.PUBLISH)
        return Verdict(Decision.DUPLICATE if fp.text_hash in mark.seen else Decision.SUPERSEDED)
    if fp.text_hash == cur.text_hash:
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
    if newer:
        return Verdict(Decision.PUBLISH, replaces=cur.live_id)
    return Verdict(Decision.DUPLICATE if fp.text_hash in mark.seen else Decision.SUPERSEDED)


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
            Current(cur.state, cur.text_hash, order, cur.version_id, cur.acked, cur.live_id,
                    cur.replaces),
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


def acknowledge(mark: Mark, text_hash: bytes, state: State) -> Mark:
    """The mark once the output for (text, state) was acknowledged; unchanged if stale."""
    cur = mark.current
    if cur is None or cur.acked or cur.text_hash != text_hash or cur.state is not state:
        return mark
    # the constructors, not dataclasses.replace (dearer): once per published output
    acked = Current(cur.state, cur.text_hash, cur.order, cur.version_id, True, cur.live_id,
                    cur.replaces)
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


# --------------------------------------------------------------------------------------
# Near-duplicates across visits: a keyed bottom-k sketch (no text in it)


def sketch(text: str, key: str, size: int = SKETCH_SIZE) -> tuple[int, ...]:
    """The ``size`` smallest keyed 32-bit hashes of the text's word 3-shingles, ascending.

    Bottom-k MinHash (Broder; Cohen & Kaplan): one hash per shingle instead of k. The
    shingle hash is a keyed vector multiply-shift (Dietzfelbinger; Thorup) over the words'
    CRC-32 codes — ``(a1·w1 + a2·w2 + a3·w3 + b) mod 2^64``, top 32 bits, coefficients drawn
    from the key — a universal hash family, which is what bottom-k estimates need, at a
    fraction of the cost of a keyed BLAKE2b per shingle. Without the key the values cannot
    be recomputed; they are kept only inside the patient's sealed state.

    Computed for all shingles at once with one big-integer multiplication (:func:`_lanes`),
    not three multiplications per shingle in Python: the same values.
    """
    folded = text.casefold()
    if folded.isascii():  # ASCII \w is [0-9a-z_] once folded: every other byte separates
        words = folded.encode("ascii").translate(_NON_WORD_BYTES).split()
        codes = array("Q", map(zlib.crc32, words))
    else:
        codes = array("Q", [zlib.crc32(w.encode("utf-8")) for w in _WORD.findall(folded)])
    if not codes:
        return ()
    if len(codes) < SHINGLE_WORDS:  # one short shingle, padded with 2^32 (never a CRC-32)
        codes.extend([1 << 32] * (SHINGLE_WORDS - len(codes)))
    return _bottom(_lanes(codes, key), size)


def _bottom(values: array[int], size: int) -> tuple[int, ...]:
    """``tuple(sorted(set(values))[:size])``, sorting only the values below a cut-off when
    there are many: the hashes are uniform over 32 bits, so about ``size + 32`` of them lie
    below ``(size + 32) / n · 2^32``. If at least ``size`` distinct values do, the ``size``
    smallest of all are among them (the same result); else every value is sorted."""
    n = len(values)
    if n > size + _BOTTOM_MARGIN:
        cut = int((size + _BOTTOM_MARGIN) / n * 4294967296)
        below = {v for v in values if v < cut}
        if len(below) >= size:
            return tuple(sorted(below)[:size])
    return tuple(sorted(set(values))[:size])


_BOTTOM_MARGIN = 32  # expected values kept beyond ``size`` (falling short is ~5 sd away)


def _lanes(codes: array[int], key: str) -> array[int]:
    """``((a1·c[i] + a2·c[i+1] + a3·c[i+2] + b) mod 2^64) >> 32`` for every i, in C.

    Each code gets a 128-bit lane of one big integer X; X · (a3 + a2·2^128 + a1·2^256) puts
    ``a1·c[i] + a2·c[i+1] + a3·c[i+2]`` in lane i+2. A lane's sum stays below
    3·2^64·2^32 + 2^64 < 2^128 (b added in every lane too), so nothing carries into the next
    lane, and bits 32..63 of each lane are the shingle hash — the 32-bit word 4·lane + 1.
    """
    n = len(codes)
    multiplier, offsets = _lane_constants(key)
    lanes = array("Q", bytes(16 * n))
    lanes[0::2] = codes
    total = int.from_bytes(lanes, "little") * multiplier
    total += int.from_bytes(offsets * n, "little")
    words = array("I", total.to_bytes(16 * n + 48, "little"))
    if words.itemsize != 4 or lanes.itemsize != 8:  # pragma: no cover - exotic platforms
        raise RuntimeError("array type sizes differ from 4 and 8 bytes")
    return words[9 : 4 * n : 4]  # lanes 2 .. n-1: one per 3-word shingle


@lru_cache(maxsize=4096)
def _lane_constants(key: str) -> tuple[int, array[int]]:
    a1, a2, a3, b = _coefficients(key)
    return a3 | (a2 << 128) | (a1 << 256), array("Q", (b, 0))


@lru_cache(maxsize=4096)
def _coefficients(key: str) -> tuple[int, int, int, int]:
    """Four 64-bit coefficients drawn from the key (the multipliers odd)."""
    raw = hashlib.blake2b(key.encode("utf-8"), digest_size=32, person=b"dsketch-v2").digest()
    a1, a2, a3, b = struct.unpack("<4Q", raw)
    return a1 | 1, a2 | 1, a3 | 1, b


def similarity(a: Sequence[int], b: Sequence[int], size: int = SKETCH_SIZE) -> float:
    """Estimated Jaccard similarity of two bottom-k sketches (exact for short texts):
    the share of the union's k smallest values that both sketches hold."""
    if not a or not b:
        return 0.0
    return _similarity(frozenset(a), frozenset(b), size)


def _similarity(sa: frozenset[int], sb: frozenset[int], size: int) -> float:
    shared = sa & sb
    if not shared:
        return 0.0
    union = sa | sb
    if len(union) <= size:
        return len(shared) / len(union)
    cutoff = sorted(union)[size - 1]
    return sum(1 for v in shared if v <= cutoff) / size


@lru_cache(maxsize=4096)
def _filed(entry: str) -> int:
    """A stored table entry's filing time, parsed once per entry string (a patient's visits
    are looked at again on each of its later documents)."""
    return int(entry[: entry.index(":")])


def _pack(signature: Sequence[int]) -> str:
    return base64.b64encode(struct.pack(f"<{len(signature)}I", *signature)).decode("ascii")


@lru_cache(maxsize=4096)  # ~4.3 KB each: ~18 MB when full
def _stored_set(entry: str) -> frozenset[int]:
    """A stored table entry's sketch as a set, decoded once per entry string (whose hash
    the string keeps): every document of the patient compares against the same visits."""
    return frozenset(array("I", binascii.a2b_base64(entry.partition(":")[2])))


@lru_cache(maxsize=256)
def _probe_size(count: int, at_least: float) -> int:
    """How many of a sketch's ``count`` values a visit must miss to score below ``at_least``.

    Missing ``h`` of them leaves ``shared <= count - h``; the score is at most
    ``shared / count`` (``shared / union`` with ``union >= count``, or at most
    ``shared / size`` with ``size >= count``), so the smallest ``h`` with
    ``(count - h) / count < at_least`` is enough (float division rounds monotonically).
    Only for sketches of at most ``SKETCH_SIZE`` values (else ``shared / size`` is larger).
    """
    return next(h for h in range(count + 1) if (count - h) / count < at_least)


class VisitSketches:
    """Sketches of the latest version of each recent visit of one (patient, report type).

    Kept as entries of a str → str table — the patient's sealed state (``PatientState.extra``),
    which the keystore caches and writes in batches — one entry per visit under ``prefix``,
    so two instances that add different visits merge cleanly. Best effort by design: it only
    feeds a flag. Each entry: filing time (for evicting the oldest) and the packed sketch.
    """

    def __init__(self, table: MutableMapping[str, str], prefix: str) -> None:
        self.table = table
        self.prefix = prefix

    def _entries(self) -> list[tuple[str, int, str]]:
        cut = len(self.prefix)
        out = []
        for name, value in self.table.items():
            if name.startswith(self.prefix):
                filed, _, packed = value.partition(":")
                out.append((name[cut:], int(filed), packed))
        return out

    def __len__(self) -> int:
        prefix = self.prefix
        return sum(1 for name in self.table if name.startswith(prefix))

    def nearest(
        self, research_key: str, signature: Sequence[int], at_least: float = 0.0
    ) -> tuple[str, float] | None:
        """The most similar *other* visit and its score, if any (the first of equals).

        With ``at_least``, None unless some visit scores that much: visits that cannot reach
        it — or beat the best so far — are then ruled out by the shared-value count alone,
        without ranking the union (the estimate never exceeds shared / size). Most visits
        share nothing: they are ruled out first by a few of this sketch's values (see
        :func:`_probe_size`) — a visit holding none of them scores below ``at_least`` —
        and such a visit could never be the answer (nor tie with it).
        """
        best: str | None = None
        top = 0.0
        mine = frozenset(signature)
        prefix, size = self.prefix, SKETCH_SIZE
        own = prefix + research_key
        probe: frozenset[int] | None = None
        if at_least > 0 and 0 < len(mine) <= size:
            probe = frozenset(islice(mine, _probe_size(len(mine), at_least)))
        for name, value in self.table.items():
            if not name.startswith(prefix) or name == own:
                continue
            theirs = _stored_set(value)
            if probe is not None and theirs.isdisjoint(probe):
                continue
            shared = len(mine & theirs)
            union = len(mine) + len(theirs) - shared
            if shared == 0 or union <= size:
                score = shared / union if shared else 0.0
            elif best is not None and shared / size <= top or shared / size < at_least:
                continue  # its score is at most shared / size
            else:
                score = _similarity(mine, theirs, size)
            if best is None or score > top:
                best, top = name, score
        if best is None or top < at_least:
            return None
        return best[len(prefix) :], top

    def add(self, research_key: str, filed_us: int, signature: Sequence[int]) -> bool:
        """Remember the visit's sketch (evicting the oldest visits); True if the table changed."""
        value = f"{filed_us}:{_pack(signature)}"
        name = self.prefix + research_key
        if self.table.get(name) == value:
            return False
        self.table[name] = value
        prefix = self.prefix
        # (filing time, entry name) of this (patient, type)'s visits; the names share the
        # prefix, so they order as the research keys do. Only the time is parsed.
        visits = [(_filed(v), n) for n, v in self.table.items() if n.startswith(prefix)]
        extra = len(visits) - SKETCH_VISITS
        if extra == 1:
            del self.table[min(visits)[1]]
        elif extra > 1:
            for _, oldest in sorted(visits)[:extra]:
                del self.table[oldest]
        return True

    def remove(self, research_key: str) -> bool:
        return self.table.pop(self.prefix + research_key, None) is not None
