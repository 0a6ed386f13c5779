"""The one memo facility: a remembered answer per key, bounded, counted, and switchable off.

A :class:`Memo` keeps ``compute(key)`` for keys it has seen, up to ``size`` keys; the store is
emptied when it is full (one eviction style for every memo: no order kept per hit, and a
stream whose vocabulary drifts starts over instead of keeping its first words forever). Each
memo counts its hits and misses; :func:`stats` lists every memo of the process.

:func:`memos` turns memos off (all of them, or those named): an off memo computes every answer
and stores none, so a run under ``memos(False)`` shows what the memos change (nothing, the
equivalence tests check) and what they save (``bench/README.md``, "Memos"). A memo is kept
only where it pays: the figures are measured with it on and off, and a memo worth under 1 %
is removed.

Data loaded once per process (a lexicon behind ``functools.cache``) is a loader, not a memo:
it answers no question about the text, and stays as it is.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import compress, count, repeat
from operator import is_, itemgetter
from typing import Final, Generic, ParamSpec, TypeVar

from pipelines import compiled

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
P = ParamSpec("P")

_MISS: Final = object()
_ALL: "weakref.WeakSet[Memo[object, object]]" = weakref.WeakSet()  # noqa: UP037
_OFF: set[str] = set()  # names of the memos turned off
_STATE = {"all_off": False}


@dataclass(frozen=True, slots=True)
class MemoStats:
    """One memo's figures (summed over the memos of that name: one per featurizer, say)."""

    name: str
    size: int  # the bound, in keys
    stored: int  # keys held now
    hits: int
    misses: int
    clears: int  # times the store was emptied because it was full

    @property
    def hit_rate(self) -> float:
        asked = self.hits + self.misses
        return self.hits / asked if asked else 0.0


class Memo(Generic[K, V]):
    """``compute(key)``, remembered for up to ``size`` keys (see the module's docstring)."""

    __slots__ = ("__weakref__", "_store", "clears", "compute", "hits", "misses", "name", "size")

    def __init__(self, name: str, compute: Callable[[K], V] | None, size: int) -> None:
        """``compute`` None: a memo read with :meth:`peek` and filled with :meth:`put`."""
        if not name or size < 1:
            raise ValueError("a memo needs a name and a size of at least one key")
        self.name = name
        self.compute = compute
        self.size = size
        self._store: dict[K, V] = {}
        self.hits = 0
        self.misses = 0
        self.clears = 0
        _ALL.add(self)  # type: ignore[arg-type]

    @property
    def on(self) -> bool:
        return not _STATE["all_off"] and self.name not in _OFF

    def __call__(self, key: K) -> V:
        value = self._store.get(key, _MISS)
        if value is not _MISS:
            self.hits += 1
            return value  # type: ignore[return-value]
        return self._computed(key)

    def peek(self, key: K, default: object = None) -> V | object:
        """The remembered answer for ``key`` (a hit) or ``default`` (a miss), for a memo whose
        answer needs more than its key to compute (store it with :meth:`put`)."""
        value = self._store.get(key, _MISS)
        if value is _MISS:
            self.misses += 1
            return default
        self.hits += 1
        return value

    def put(self, key: K, value: V) -> None:
        """Remember ``value`` for ``key`` (nothing while the memo is off)."""
        if self.on:
            store = self._store
            if len(store) >= self.size:
                store.clear()
                self.clears += 1
            store[key] = value

    def many(self, keys: Sequence[K]) -> list[V]:
        """``[self(k) for k in keys]``, with the look-ups in one C-level pass."""
        fast = compiled.helper("words")
        if fast is not None and type(keys) is list:  # hits and misses' positions in one C loop
            values, missed = fast.many(self._store, keys, _MISS)
        else:
            values, missed = self._looked_up(keys)
        self.hits += len(values) - len(missed)
        store = self._store
        for i in missed:  # what ``self(keys[i])`` does, inline: a key may repeat
            key = keys[i]
            value = store.get(key, _MISS)
            if value is _MISS:
                value = self._computed(key)
            else:
                self.hits += 1
            values[i] = value
        return values

    def _looked_up(self, keys: Sequence[K]) -> tuple[list[V], list[int]]:
        """Each key's stored value (``_MISS`` where none) and the positions of the misses:
        the reference of ``_words_c.many``."""
        if len(keys) > 1:
            try:  # every key a hit (a known vocabulary): one C call, no check per key
                return list(itemgetter(*keys)(self._store)), []
            except KeyError:
                pass
        values: list[object] = list(map(self._store.get, keys, repeat(_MISS)))
        # the misses by identity (``list.count`` would call each value's ``__eq__``)
        return values, list(compress(count(), map(is_, values, repeat(_MISS))))  # type: ignore[return-value]

    def _computed(self, key: K) -> V:
        self.misses += 1
        if self.compute is None:
            raise TypeError(f"memo {self.name} is filled with put(), not computed")
        value = self.compute(key)
        if not _STATE["all_off"] and self.name not in _OFF:  # ``put``, inline
            store = self._store
            if len(store) >= self.size:
                store.clear()
                self.clears += 1
            store[key] = value
        return value

    def clear(self) -> None:
        self._store.clear()

    def count_hits(self, hits: int) -> None:
        """Add ``hits`` look-ups answered from :meth:`table` by a caller's own loop."""
        self.hits += hits

    def table(self) -> dict[K, V]:
        """The remembered answers, for a compiled loop that looks keys up itself (read only:
        a miss goes through the memo, ``self(key)``, which counts and stores it)."""
        return self._store

    def __len__(self) -> int:
        return len(self._store)


class Memoized(Generic[P, V]):
    """A function of hashable positional arguments with its answers in a :class:`Memo`
    keyed by the arguments' tuple (what ``functools.lru_cache`` was used for)."""

    __slots__ = ("__wrapped__", "memo")

    def __init__(self, name: str, size: int, function: Callable[P, V]) -> None:
        self.__wrapped__ = function
        self.memo: Memo[tuple[object, ...], V] = Memo(name, self._compute, size)

    def _compute(self, args: tuple[object, ...]) -> V:
        return self.__wrapped__(*args)  # type: ignore[arg-type, call-arg]

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> V:
        if kwargs:
            raise TypeError("a memoized function takes positional arguments only")
        return self.memo(args)


def memoized(name: str, size: int) -> Callable[[Callable[P, V]], Memoized[P, V]]:
    """Decorator: ``function`` with its answers in a memo ``name`` of ``size`` keys."""

    def wrap(function: Callable[P, V]) -> Memoized[P, V]:
        return Memoized(name, size, function)

    return wrap


def stats() -> list[MemoStats]:
    """Every memo of the process by name (memos of one name summed), sorted by name."""
    rows: dict[str, MemoStats] = {}
    for memo in list(_ALL):
        row = rows.get(memo.name)
        if row is None:
            rows[memo.name] = MemoStats(
                memo.name, memo.size, len(memo), memo.hits, memo.misses, memo.clears
            )
        else:
            rows[memo.name] = MemoStats(
                memo.name,
                row.size + memo.size,
                row.stored + len(memo),
                row.hits + memo.hits,
                row.misses + memo.misses,
                row.clears + memo.clears,
            )
    return [rows[name] for name in sorted(rows)]


def names() -> frozenset[str]:
    """The names of the memos alive in the process."""
    return frozenset(memo.name for memo in list(_ALL))


@contextmanager
def memos(on: bool, *only: str) -> Iterator[None]:
    """Every memo (or those named in ``only``) on or off inside the block, emptied on the
    way in and out so no answer stored under one setting is read under the other."""
    unknown = set(only) - names()
    if unknown:
        raise ValueError(f"no memo named {sorted(unknown)}")
    saved = (_STATE["all_off"], set(_OFF))
    if not only:
        _STATE["all_off"] = not on
    elif on:
        _OFF.difference_update(only)
    else:
        _OFF.update(only)
    _clear(only)
    try:
        yield
    finally:
        _STATE["all_off"] = saved[0]
        _OFF.clear()
        _OFF.update(saved[1])
        _clear(only)


def _clear(only: tuple[str, ...]) -> None:
    for memo in list(_ALL):
        if not only or memo.name in only:
            memo.clear()
