"""Near-duplicates across visits: a small keyed bottom-k sketch per visit (no text in it).

A report that repeats most of an earlier visit's report of the same patient and type
(copy-forward notes) is published with a ``near-duplicate`` flag naming that visit. Each
visit's latest version leaves a :func:`sketch` of its word 3-shingles in the patient's
sealed state (:class:`VisitSketches`); :class:`NearDuplicates` is one document's
bookkeeping of that table while its version decision is taken (and possibly taken again).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
import sys
import zlib
from array import array
from collections.abc import Callable, Collection, Mapping, MutableMapping, Sequence
from itertools import islice

from pipelines import compiled
from pipelines.memo import Memo, memoized
from surrogates.pieces import whitespace_pieces

SKETCH_SIZE = 64  # bottom-k sketch size: Jaccard estimate error ~ 1/sqrt(k)
SKETCH_VISITS = 16  # visits remembered per (patient, report type) for near-duplicate checks
SHINGLE_WORDS = 3

_WORD = re.compile(r"\w+")
# bytes.translate table: ASCII word characters (what rb"\w" matches) kept, all others → space
_NON_WORD_BYTES = bytes(
    c if chr(c).isalnum() and c < 128 or c == 0x5F else 0x20 for c in range(256)
)


def sketch(text: str, key: str, size: int = SKETCH_SIZE) -> tuple[int, ...]:
    """The ``size`` smallest keyed 32-bit hashes of the text's word 3-shingles, ascending.

    Bottom-k MinHash (Broder; Cohen & Kaplan): one hash per shingle instead of k. The
    shingle hash is a keyed vector multiply-shift (Dietzfelbinger; Thorup) over the words'
    CRC-32 codes — ``(a1·w1 + a2·w2 + a3·w3 + b) mod 2^64``, top 32 bits, coefficients drawn
    from the key — a universal hash family, which is what bottom-k estimates need, at a
    fraction of the cost of a keyed BLAKE2b per shingle. Without the key the values cannot
    be recomputed; they are kept only inside the patient's sealed state.

    Computed with one big-integer multiplication per block of shingles (:func:`_lanes`),
    not three multiplications per shingle in Python: the same values. A long text is read in
    pieces and hashed in blocks, so the memory it takes stays bounded at any length: the
    bottom ``size`` of a union is the bottom ``size`` of the blocks' bottoms.

    An ASCII text goes to the compiled helper where it is built (``_sketch_c``: one pass over
    the characters, the same values); this code is its reference.
    """
    fast = compiled.helper("sketch")
    if fast is not None and size > 0 and text.isascii():
        return fast.ascii_sketch(text, *_coefficients(key), size)  # type: ignore[no-any-return]
    return _sketch(text, key, size, _PIECE_CHARS, _LANE_BLOCK)


_PIECE_CHARS = 1 << 18  # text folded and split into words this much at a time
_LANE_BLOCK = 1 << 16  # shingles hashed per big-integer multiplication


def _sketch(text: str, key: str, size: int, piece_chars: int, block: int) -> tuple[int, ...]:
    """Blocks of ``block`` shingles are hashed as the pieces' word codes come: the codes of
    the whole text are never held at once (the last two stay for the next block's first
    shingles)."""
    best: set[int] = set()
    codes: array[int] = array("Q")
    hashed = False  # some block was hashed: the codes left are the next block's
    full = block + SHINGLE_WORDS - 1  # the codes of a whole block
    added: int | None = None  # a whole block's ``b`` in every lane, made for the first
    for start, end in whitespace_pieces(text, piece_chars):
        codes.extend(_word_codes(text[start:end]))
        while len(codes) >= full:
            if added is None:
                added = _lane_offsets(key, full)
            best = _keep_bottom(best, _lanes(codes[:full], key, added), size)
            del codes[:block]
            hashed = True
    if not hashed and 0 < len(codes) < SHINGLE_WORDS:
        # one short shingle, padded with 2^32 (never a CRC-32)
        codes.extend([1 << 32] * (SHINGLE_WORDS - len(codes)))
    if len(codes) >= SHINGLE_WORDS:
        if not hashed:  # one block only (most notes): its bottom, distinct and ascending
            return _bottom(_lanes(codes, key), size)
        best = _keep_bottom(best, _lanes(codes, key), size)
    return tuple(sorted(best))


def _keep_bottom(best: set[int], values: array[int], size: int) -> set[int]:
    """The ``size`` smallest of ``best`` and ``values``: the bottom of a union is the
    bottom of its parts' bottoms."""
    return set(sorted(best.union(_bottom(values, size)))[:size])


def _word_codes(piece: str) -> array[int] | list[int]:
    """The CRC-32 of every word of the case-folded piece, in order."""
    folded = piece.casefold()
    if folded.isascii():  # ASCII \w is [0-9a-z_] once folded: every other byte separates
        words = folded.encode("ascii").translate(_NON_WORD_BYTES).split()
        return array("Q", map(zlib.crc32, words))
    return [zlib.crc32(w.encode("utf-8")) for w in _WORD.findall(folded)]


def _bottom(values: array[int], size: int) -> tuple[int, ...]:
    """``tuple(sorted(set(values))[:size])``, sorting only the values below a cut-off when
    there are many: the hashes are uniform over 32 bits, so about ``size + 32`` of them lie
    below ``(size + 32) / n · 2^32``. If at least ``size`` distinct values do, the ``size``
    smallest of all are among them (the same result); else every value is sorted."""
    n = len(values)
    if n > size + _BOTTOM_MARGIN:
        cut = int((size + _BOTTOM_MARGIN) / n * 4294967296)
        below = _below(values, cut)
        if len(below) >= size:
            return tuple(sorted(below)[:size])
    return tuple(sorted(set(values))[:size])


_BOTTOM_MARGIN = 32  # expected values kept beyond ``size`` (falling short is ~5 sd away)
_TOP_BYTE = 3 if sys.byteorder == "little" else 0  # of a 32-bit array item


def _below(values: array[int], cut: int) -> set[int]:
    """``{v for v in values if v < cut}``. A 32-bit value under a cut-off of at most 2^24
    (what a block of 24,576 shingles or more asks for) has a zero top byte, as about one
    value in 256 has: those are found with ``bytes.find`` in the column of top bytes, not
    with a Python step per value."""
    if values.itemsize != 4 or cut > 1 << 24:
        return {v for v in values if v < cut}
    tops = values.tobytes()[_TOP_BYTE::4]
    below: set[int] = set()
    at = tops.find(0)
    while at >= 0:
        value = values[at]
        if value < cut:
            below.add(value)
        at = tops.find(0, at + 1)
    return below


def _lanes(codes: array[int], key: str, added: int | None = None) -> array[int]:
    """``((a1·c[i] + a2·c[i+1] + a3·c[i+2] + b) mod 2^64) >> 32`` for every i, in C.
    ``added``: ``_lane_offsets(key, len(codes))`` if the caller has it.

    Each code gets a 128-bit lane of one big integer X; X · (a3 + a2·2^128 + a1·2^256) puts
    ``a1·c[i] + a2·c[i+1] + a3·c[i+2]`` in lane i+2. A lane's sum stays below
    3·2^64·2^32 + 2^64 < 2^128 (b added in every lane too), so nothing carries into the next
    lane, and bits 32..63 of each lane are the shingle hash — the 32-bit word 4·lane + 1.
    """
    n = len(codes)
    multiplier, _ = _lane_constants(key)
    lanes = _ZERO * (2 * n)  # array repetition: no bytes object of zeros copied in
    lanes[0::2] = codes
    total = int.from_bytes(lanes, "little") * multiplier
    total += _lane_offsets(key, n) if added is None else added
    words = array("I", total.to_bytes(16 * n + 48, "little"))
    if words.itemsize != 4 or lanes.itemsize != 8:  # pragma: no cover - exotic platforms
        raise RuntimeError("array type sizes differ from 4 and 8 bytes")
    return words[9 : 4 * n : 4]  # lanes 2 .. n-1: one per 3-word shingle


_ZERO = array("Q", (0,))


def _lane_offsets(key: str, n: int) -> int:
    """``b`` in each of ``n`` lanes (what ``_lanes`` adds): the same for every whole block
    of a text, so ``_sketch`` makes it once (a 1 MB integer for a block of 65,536)."""
    return int.from_bytes(_lane_constants(key)[1] * n, "little")


@memoized("near_duplicates.lane_constants", 4096)
def _lane_constants(key: str) -> tuple[int, array[int]]:
    a1, a2, a3, b = _coefficients(key)
    return a3 | (a2 << 128) | (a1 << 256), array("Q", (b, 0))


@memoized("near_duplicates.coefficients", 4096)
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


def _filed(entry: str) -> int:
    """A stored table entry's filing time."""
    return int(entry[: entry.index(":")])


# A stored entry's filing time, parsed once per entry string (a patient's visits are looked
# at again on each of its later documents); read through ``table()`` in ``add``'s loop.
_FILED: Memo[str, int] = Memo("near_duplicates.filed", _filed, 4096)

_LITTLE = sys.byteorder == "little"


def _pack(signature: Sequence[int]) -> str:
    """The sketch as base64 of its values as little-endian 32-bit words."""
    return _packed(signature)[0]


def _packed(signature: Sequence[int]) -> tuple[str, bytes | None]:
    """``_pack(signature)``, and the values as native 32-bit words where those are the words
    packed (what :func:`_stored_words` gives back for it), else None: the base64 is what
    ``base64.b64encode(struct.pack(f"<{n}I", *signature))`` gives, without a call argument
    per value."""
    words = array("I", signature)
    if words.itemsize != 4:  # pragma: no cover - exotic platforms
        raw = struct.pack(f"<{len(signature)}I", *signature)
        return base64.b64encode(raw).decode("ascii"), None
    if not _LITTLE:  # pragma: no cover - big-endian platforms
        words.byteswap()
        return binascii.b2a_base64(words.tobytes(), newline=False).decode("ascii"), None
    raw = words.tobytes()
    return binascii.b2a_base64(raw, newline=False).decode("ascii"), raw


def _stored_set(entry: str) -> frozenset[int]:
    """A stored table entry's sketch as a set."""
    return frozenset(array("I", binascii.a2b_base64(entry.partition(":")[2])))


def _stored_words(entry: str) -> bytes:
    """A stored table entry's values as native 32-bit words, decoded as :func:`_stored_set`
    decodes them (the same errors): what the compiled comparison reads."""
    return array("I", binascii.a2b_base64(entry.partition(":")[2])).tobytes()


# The same for the compiled comparison (``VisitSketches.nearest``): ~0.3 KB each.
_WORDS: Memo[str, bytes] = Memo("near_duplicates.stored_words", _stored_words, 4096)

# A stored entry's sketch as a set, decoded once per entry string (whose hash the string
# keeps): every document of the patient compares against the same visits. ~4.3 KB each:
# ~18 MB when full. ``add`` puts the set it was given, so a new entry is never decoded.
_SETS: Memo[str, frozenset[int]] = Memo("near_duplicates.stored_set", _stored_set, 4096)


@memoized("near_duplicates.probe_size", 256)
def _probe_size(count: int, at_least: float) -> int:
    """How many of a sketch's ``count`` values a visit must miss to score below ``at_least``.

    Missing ``h`` of them leaves ``shared <= count - h``; the score is at most
    ``shared / count`` (``shared / union`` with ``union >= count``, or at most
    ``shared / size`` with ``size >= count``), so the smallest ``h`` with
    ``(count - h) / count < at_least`` is enough (float division rounds monotonically).
    Only for sketches of at most ``SKETCH_SIZE`` values (else ``shared / size`` is larger).
    """
    return next(h for h in range(count + 1) if (count - h) / count < at_least)


def _probe(mine: frozenset[int], at_least: float) -> tuple[int, ...] | None:
    """A few of ``mine``'s values: a visit holding none of them scores below ``at_least``
    (None when there is no bound, or the sketch is larger than ``SKETCH_SIZE``). A tuple:
    ``isdisjoint`` looks each up in the visit's set, as it would a smaller set's."""
    if at_least > 0 and 0 < len(mine) <= SKETCH_SIZE:
        return tuple(islice(mine, _probe_size(len(mine), at_least)))
    return None


def _visit_score(
    mine: frozenset[int], theirs: frozenset[int], top: float | None, at_least: float
) -> float | None:
    """A visit's score, or None when it cannot beat ``top`` (the best score so far, None
    before the first) nor reach ``at_least``: its score is at most shared / size, so the
    union is only ranked when that bound leaves it in the running."""
    size = SKETCH_SIZE
    shared = len(mine & theirs)
    union = len(mine) + len(theirs) - shared
    if shared == 0 or union <= size:
        return shared / union if shared else 0.0
    if top is not None and shared / size <= top or shared / size < at_least:
        return None
    return _similarity(mine, theirs, size)


def _oldest(table: Mapping[str, str], names: list[str], count: int) -> list[str]:
    """The ``count`` entries of ``names`` filed first, by (filing time, entry name): the
    names share the prefix, so they order as the research keys do. Only the time is parsed
    (once per entry string: see ``_FILED``)."""
    filed = _FILED.table()
    hits = 0
    visits: list[tuple[int, str]] = []
    for name in names:
        value = table[name]
        at = filed.get(value)
        if at is None:
            at = _FILED(value)
        else:
            hits += 1
        visits.append((at, name))
    _FILED.count_hits(hits)
    if count == 1:
        return [min(visits)[1]]
    return [name for _, name in sorted(visits)[:count]]


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
        self, research_key: str, signature: Collection[int], at_least: float = 0.0
    ) -> tuple[str, float] | None:
        """The most similar *other* visit and its score, if any (the first of equals).

        With ``at_least``, None unless some visit scores that much: visits that cannot reach
        it — or beat the best so far — are then ruled out by the shared-value count alone,
        without ranking the union (the estimate never exceeds shared / size). Most visits
        share nothing: they are ruled out first by a few of this sketch's values (see
        :func:`_probe_size`) — a visit holding none of them scores below ``at_least`` —
        and such a visit could never be the answer (nor tie with it).

        The compiled helper compares every visit in one C loop over the packed entries
        (``_sketch_c.nearest``: no set built or decoded), given the sorted tuple
        :func:`sketch` returns; this code is its reference, and decides when it declines.
        """
        own = self.prefix + research_key
        found = self._compiled_nearest(own, signature)
        best, top = self._nearest(own, signature, at_least) if found is None else found
        if best is None or top < at_least:
            return None
        return best[len(self.prefix) :], top

    def _compiled_nearest(
        self, own: str, signature: Collection[int]
    ) -> tuple[str | None, float] | None:
        """The first best entry and its score by ``_sketch_c.nearest``; None when it is not
        built or declines (the Python code then decides)."""
        fast = compiled.helper("sketch")
        if fast is None or not _LITTLE or type(self.table) is not dict:
            return None
        if type(signature) is not tuple:
            return None
        found = fast.nearest(
            self.table, self.prefix, own, signature, SKETCH_SIZE, _WORDS.table(), _WORDS
        )
        if found is None:
            return None
        name, score, hits = found
        _WORDS.count_hits(hits)
        return name, score

    def _nearest(
        self, own: str, signature: Collection[int], at_least: float
    ) -> tuple[str | None, float]:
        """The first best entry (or one that cannot be the answer when none reaches
        ``at_least``) and its score: the reference of ``_compiled_nearest``."""
        best: str | None = None
        top = 0.0
        mine = frozenset(signature)
        prefix = self.prefix
        probe = _probe(mine, at_least)
        sets = _SETS.table()  # the decoded visits, looked up here (a miss goes through _SETS)
        hits = 0
        for name, value in self.table.items():
            if not name.startswith(prefix) or name == own:
                continue
            theirs = sets.get(value)
            if theirs is None:
                theirs = _SETS(value)
            else:
                hits += 1
            if probe is not None and theirs.isdisjoint(probe):
                continue
            score = _visit_score(mine, theirs, None if best is None else top, at_least)
            if score is not None and (best is None or score > top):
                best, top = name, score
        _SETS.count_hits(hits)
        return best, top

    def add(
        self,
        research_key: str,
        filed_us: int,
        signature: Sequence[int],
        as_set: frozenset[int] | None = None,
    ) -> bool:
        """Remember the visit's sketch (evicting the oldest visits); True if the table changed.
        ``as_set``: ``frozenset(signature)`` if the caller has it (the new entry's decoded
        form: later documents then find it without decoding it)."""
        packed, words = _packed(signature)
        value = f"{filed_us}:{packed}"
        table = self.table
        name = self.prefix + research_key
        if table.get(name) == value:
            return False
        table[name] = value
        if compiled.helper("sketch") is None:  # the memo of the comparison that will run
            _SETS.put(value, frozenset(signature) if as_set is None else as_set)
        elif words is not None:
            _WORDS.put(value, words)
        for oldest in self._oldest():
            del table[oldest]
        return True

    def _oldest(self) -> list[str]:
        """The entries to evict: those filed first beyond ``SKETCH_VISITS``, found in one C
        loop by the sketch helper where it is built and the filing times are plain digits."""
        table, prefix = self.table, self.prefix
        fast = compiled.helper("sketch")
        if fast is not None and type(table) is dict:
            found: list[str] | None = fast.oldest(table, prefix, SKETCH_VISITS)
            if found is not None:
                return found
        visits = [n for n in table if n.startswith(prefix)]
        extra = len(visits) - SKETCH_VISITS
        return _oldest(table, visits, extra) if extra > 0 else []

    def remove(self, research_key: str) -> bool:
        return self.table.pop(self.prefix + research_key, None) is not None


class NearDuplicates:
    """One document's near-duplicate bookkeeping while its version is decided — and decided
    again after a lost compare-and-set: its sketch (computed once, on first use), the
    nearest other visit, and the visit's table entry, which follows the decision (added on
    publish, removed on a tombstone) and can be put back as it was before (:meth:`undo`).

    ``sketch_key`` gives the hashing key of the (patient, report type), asked for on first
    use only (duplicates never need it); ``save`` persists the patient state after the
    table changed."""

    __slots__ = (
        "_filed_us",
        "_key",
        "_research_key",
        "_save",
        "_signature",
        "_sketch_key",
        "_sketches",
        "_table",
        "_text",
        "_undo",
    )

    def __init__(
        self,
        table: MutableMapping[str, str],
        text: str,
        research_key: str,
        filed_us: int,
        sketch_key: Callable[[], str],
        save: Callable[[], None],
    ) -> None:
        self._table = table
        self._text = text
        self._research_key = research_key
        self._filed_us = filed_us
        self._sketch_key = sketch_key
        self._save = save
        self._key: str | None = None
        self._sketches: VisitSketches | None = None
        self._signature: tuple[int, ...] | None = None
        self._undo: tuple[str, str | None] | None = None  # (entry, value before)

    def _visits(self) -> tuple[str, VisitSketches]:
        """One hashing key per (patient, report type), so the visits' sketches compare.
        Made on first use. The caller's key kind names the sketch format, so sketches of
        an older format are never compared."""
        if self._key is None or self._sketches is None:
            key = self._sketch_key()
            self._key, self._sketches = key, VisitSketches(self._table, f"near-duplicate:{key}:")
        return self._key, self._sketches

    def nearest(self, at_least: float) -> tuple[str, float] | None:
        """The most similar other visit scoring at least ``at_least``, and its score."""
        key, sketches = self._visits()
        if self._signature is None:
            self._signature = sketch(self._text, key)
        return sketches.nearest(self._research_key, self._signature, at_least=at_least)

    def remember(self) -> None:
        """The document was published: its sketch stands for its visit (if it was made)."""
        if self._signature is None:
            return
        sketches = self._note_undo()
        if sketches.add(self._research_key, self._filed_us, self._signature):
            self._save()

    def forget(self) -> None:
        """The visit's report was entered in error: its sketch goes."""
        if self._note_undo().remove(self._research_key):
            self._save()

    def _note_undo(self) -> VisitSketches:
        sketches = self._visits()[1]
        if self._undo is None:
            name = sketches.prefix + self._research_key
            self._undo = (name, self._table.get(name))
        return sketches

    def undo(self) -> None:
        """Put the visit's entry back as it was before this document's decision (the
        decision is being taken again; best effort: an eviction is not undone)."""
        if self._undo is None:
            return
        name, before = self._undo
        self._undo = None
        table = self._table
        if table.get(name) == before:
            return
        if before is None:
            table.pop(name, None)
        else:
            table[name] = before
        self._save()
