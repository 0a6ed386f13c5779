"""Deterministic choices derived from the patient's seed: HMAC-SHA256(seed, purpose, original).

No global random and no clock: the same seed and the same original give the same choice in
every process, so surrogates stay consistent even before the maps are saved.
"""

from __future__ import annotations

import hmac
import string
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

_SEP = b"\x1f"
_LONG = 512  # message bytes above which the HMAC state is kept (see Chooser.__init__)


class Chooser:
    """A stream of uniform choices keyed by (seed, purpose, original); re-creatable at will."""

    __slots__ = ("_seed", "_msg", "_counter", "_buf", "_prefix")

    def __init__(self, seed: bytes, purpose: str, original: str) -> None:
        self._seed = seed
        self._msg = purpose.encode("utf-8") + _SEP + original.encode("utf-8") + _SEP
        self._counter = 0
        self._buf = b""
        # a long original: its HMAC state is computed once and copied per block (the same
        # bytes); hashing the whole message again for every 32 bytes drawn was quadratic
        self._prefix = hmac.new(seed, self._msg, "sha256") if len(self._msg) > _LONG else None

    def _take(self, n: int) -> bytes:
        while len(self._buf) < n:
            counter = self._counter.to_bytes(4, "big")
            if self._prefix is None:
                # one-shot HMAC in C: the same bytes as hmac.new(...).digest(), no HMAC object
                block = hmac.digest(self._seed, self._msg + counter, "sha256")
            else:
                state = self._prefix.copy()
                state.update(counter)
                block = state.digest()
            self._counter += 1
            self._buf += block
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def below(self, n: int) -> int:
        """Uniform integer in [0, n) (64-bit draw; the modulo bias is below 2**-40)."""
        if n <= 0:
            raise ValueError("n must be positive")
        return int.from_bytes(self._take(8), "big") % n

    def pick(self, items: Sequence[T]) -> T:
        return items[self.below(len(items))]

    def digit(self, nonzero: bool = False) -> str:
        return str(1 + self.below(9)) if nonzero else str(self.below(10))

    def letter(self, upper: bool) -> str:
        return self.pick(string.ascii_uppercase if upper else string.ascii_lowercase)


class Refused:
    """Indices of a sequence known to be refused, skipped in amortised constant time.

    ``next_free(at)`` is the first index at or after ``at`` (cyclically) not refused, or -1
    when all are: a union-find of "refused index → the next index to try" with path
    halving, so a draw that lands on a refused item walks to a free one without drawing
    again. Every index is refused at most once, so a pool costs at most its size in walks,
    however many names are drawn from it.
    """

    __slots__ = ("size", "count", "_next")

    def __init__(self, size: int) -> None:
        self.size = size
        self.count = 0
        self._next: dict[int, int] = {}

    def refuse(self, at: int) -> None:
        if at not in self._next:
            self._next[at] = at + 1
            self.count += 1

    def next_free(self, at: int) -> int:
        if self.count >= self.size:
            return -1
        nxt = self._next
        for _ in range(2):  # at most one wrap past the end
            while at in nxt:
                step = nxt[at]
                if step in nxt:
                    nxt[at] = nxt[step]  # path halving
                at = step
            if at < self.size:
                return at
            at = 0
        return -1


def reshape(chooser: Chooser, original: str, keep_leading_nonzero: bool = True) -> str:
    """Same length and shape: digit → digit, letter → letter (case kept), others kept.

    The first digit of every digit run stays non-zero when the original's was non-zero, so
    "1234" never becomes "0234" (a leading zero would change how the number reads).
    """
    out: list[str] = []
    prev_digit = False
    for ch in original:
        if ch.isdigit() and ch.isascii():
            run_start = not prev_digit
            out.append(chooser.digit(nonzero=keep_leading_nonzero and run_start and ch != "0"))
            prev_digit = True
            continue
        prev_digit = False
        if ch.isascii() and ch.isalpha():
            out.append(chooser.letter(ch.isupper()))
        else:
            out.append(ch)
    return "".join(out)
