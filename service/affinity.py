"""CPU affinity for the whole service process (``DEIDSTREAM_CPU_AFFINITY``).

The service runs Python on two threads, the event loop and the processing thread, and the
GIL lets only one of them run at a time. On two cores every hand-over of the GIL moves the
interpreter's hot data from one core's caches to the other's; on one core it is a plain
context switch. bench/stream.py measured the difference: the service's CPU per document
fell by about a fifth with its threads kept on one CPU (docs/operations.md). The default
leaves placement to the kernel; set it where the service has a CPU to itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """``"0"``, ``"0,2"``, ``"2-3"`` (the cpuset list format ``taskset -c`` reads), sorted and
    without repeats; ``""`` means no pinning."""
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        low, dash, high = part.partition("-")
        if not low.strip().isdigit() or (dash and not high.strip().isdigit()):
            raise ValueError(f"not a CPU list item: {part!r} (use e.g. 0 or 0,2 or 2-3)")
        first, last = int(low), int(high) if dash else int(low)
        if last < first:
            raise ValueError(f"CPU range runs backwards: {part!r}")
        cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def pin_process(cpus: Iterable[int]) -> set[int]:
    """Restrict every thread of this process (and the threads it starts later, which inherit
    the calling thread's mask) to ``cpus``. Returns the set applied.

    Raises ``ValueError`` when a CPU is outside the set this process may use (a container's
    cpuset, ``taskset``), and ``OSError`` where the platform has no CPU affinity call."""
    wanted = set(cpus)
    if not wanted:
        raise ValueError("no CPUs given")
    if not hasattr(os, "sched_setaffinity"):
        raise OSError("this platform does not support CPU affinity")
    allowed = os.sched_getaffinity(0)
    outside = wanted - allowed
    if outside:
        raise ValueError(
            f"cpu_affinity names CPUs {sorted(outside)} outside this process's allowed set "
            f"{sorted(allowed)}"
        )
    tasks = Path("/proc/self/task")
    threads = [int(t.name) for t in tasks.iterdir()] if tasks.is_dir() else [0]
    for tid in threads:
        try:
            os.sched_setaffinity(tid, wanted)
        except ProcessLookupError:  # a thread that ended meanwhile
            continue
    return wanted
