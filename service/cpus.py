"""How many CPUs this process may use: its affinity mask, capped by a cgroup CPU quota (a
container's or a Kubernetes pod's limit). Used to size ``deidstream run``'s workers and
``deidstream detect``'s processes; stdlib only, so a short command pays no import for it."""

from __future__ import annotations

import math
import os
from pathlib import Path


def cgroup_cpu_limit(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """The CPU quota of this process's cgroup (v2 ``cpu.max``), rounded up to whole CPUs;
    None without a quota. A Kubernetes CPU limit is a quota, not an affinity mask."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    try:
        return max(1, math.ceil(int(quota) / int(period)))
    except (ValueError, ZeroDivisionError):
        return None


def usable_cpus() -> int:
    """The CPUs this process may use: its affinity mask, capped by a cgroup CPU quota."""
    allowed = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    count = allowed or os.cpu_count() or 1
    limit = cgroup_cpu_limit()
    return min(count, limit) if limit else count


__all__ = ["cgroup_cpu_limit", "usable_cpus"]
