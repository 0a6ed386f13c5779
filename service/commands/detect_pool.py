"""``deidstream detect --jobs N``: the notes of a file over N worker processes, in input order.

The caller loads the detector (policy, lexicons, model) first and passes a ``run`` function
that turns a chunk of notes into their output text (or their :class:`RecordError`). The
first chunk runs in this process: it builds what the detector loads lazily on its first
notes. The pool is then started with ``fork``, so the workers share all that copy-on-write
(``gc.freeze`` first, so their collector leaves those pages alone) and ``run`` is never
pickled. Chunks go out a few per worker ahead (the input is streamed, never all in memory)
and their results come back strictly in input order.

A chunk whose worker fails (an exception outside the per-note handling, a worker that dies)
is not lost: each of its notes becomes a per-record error, by coordinates only. After a
worker died the pool is broken, and the notes not yet sent are run in this process.
"""

from __future__ import annotations

import gc
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING

from pipelines.corpus import Note, RecordError
from pipelines.document import Identifiers

if TYPE_CHECKING:  # multiprocessing's imports (~0.05 s) only for a pool: see _in_pool
    from concurrent.futures import Future

Item = Note | tuple[Note, Identifiers] | RecordError
Result = str | RecordError  # a note's output, or why it has none
Run = Callable[[list[Item]], list[Result]]

# notes: a smaller input runs in one process. A pool adds ~0.1 s of CPU (300 dev notes: 2.46 s
# in one process, 2.52-2.63 s over two workers and the parent): it pays from a few hundred on.
SMALL_INPUT = 256
CHUNK = 32  # notes a task: ~60 ms of detection, against well under 1 ms of pickling
AHEAD = 4  # chunks in flight per worker

_RUN: Run | None = None  # set before the fork; the workers inherit it


def choose_jobs(requested: int, head: int, cpus: int) -> int:
    """Worker processes for a run: ``requested`` when given (> 0); automatic (0) is one when
    the input's first ``SMALL_INPUT`` notes were all of it (``head`` fewer), else ``cpus``."""
    if requested > 0:
        return requested
    return 1 if head < SMALL_INPUT else max(cpus, 1)


def look_ahead(items: Iterable[Item]) -> tuple[list[Item], Iterator[Item]]:
    """The first ``SMALL_INPUT`` items (to size the run) and an iterator over the rest."""
    rest = iter(items)
    return list(islice(rest, SMALL_INPUT)), rest


def failed(item: Item, reason: str) -> RecordError:
    """``item`` as a per-record error (coordinates and ``reason``, never its text)."""
    if isinstance(item, RecordError):
        return item
    note = item[0] if isinstance(item, tuple) else item
    return RecordError(note.index, note.line, reason, note.patient, note.note)


def _chunks(items: Iterable[Item]) -> Iterator[list[Item]]:
    rest = iter(items)
    while chunk := list(islice(rest, CHUNK)):
        yield chunk


def ordered_results(items: Iterable[Item], run: Run, jobs: int) -> Iterator[Result]:
    """``run`` over the chunks of ``items``, in ``jobs`` processes; results in input order.
    The first chunk runs here, then the collector is settled (:func:`settle_collector`)."""
    chunks = _chunks(items)
    try:
        first = next(chunks, None)
        results = run(first) if first else []  # builds the detector's lazy tables
    finally:
        settle_collector()
    yield from results
    batches = _pooled(chunks, run, jobs) if jobs > 1 else map(run, chunks)
    for batch in batches:
        yield from batch


def settle_collector() -> None:
    """Once the detector is loaded and warm: what is alive now (its tables, ~10^6 objects)
    out of the garbage collector's reach, and a young collection every 20,000 allocations,
    as the service after its warm-up (``service.wiring.freeze_after_warmup``); then the
    collector on (``detect`` turns it off while loading, where nothing is garbage).

    Never undone here: the interpreter's last collection at exit would walk all of it again
    (~0.15 s of a one-note run). What is collected does not change, only how often."""
    gc.freeze()
    gc.set_threshold(20_000, 10, 10)
    gc.enable()


def _work(chunk: list[Item]) -> list[Result]:
    """In a worker: the inherited ``run`` over one chunk."""
    if _RUN is None:  # only a worker forked by _pooled runs this
        raise RuntimeError("no detection job in this process")
    return _RUN(chunk)


def _outcome(chunk: list[Item], future: Future[list[Result]]) -> list[Result]:
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001 - the chunk's notes are reported, not lost
        reason = f"detector failed ({type(exc).__name__})"
        return [failed(item, reason) for item in chunk]


def _pooled(chunks: Iterator[list[Item]], run: Run, jobs: int) -> Iterator[list[Result]]:
    global _RUN
    _RUN = run
    # a forked worker flushes the std streams when it ends: nothing of ours may be buffered
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()
    try:
        yield from _in_pool(chunks, run, jobs)
    finally:
        _RUN = None


def _in_pool(chunks: Iterator[list[Item]], run: Run, jobs: int) -> Iterator[list[Result]]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("fork")
    pending: deque[tuple[list[Item], Future[list[Result]]]] = deque()
    with ProcessPoolExecutor(jobs, mp_context=context) as pool:
        for chunk in chunks:
            try:
                pending.append((chunk, pool.submit(_work, chunk)))
            except BrokenProcessPool:  # a worker died: the rest here, after what was sent
                yield from (_outcome(*sent) for sent in pending)
                yield run(chunk)
                yield from map(run, chunks)
                return
            if len(pending) >= jobs * AHEAD:
                yield _outcome(*pending.popleft())
        while pending:
            yield _outcome(*pending.popleft())
