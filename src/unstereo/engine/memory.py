"""Hand the process's free heap back to the system after a large, short-lived working set.

glibc's ``malloc`` keeps freed memory in the process for reuse: a sampling call's KV cache (about 1 GB for 16 rows
of the 1.5B's generation prompts) stays resident after the call, and the next model the job loads (the generate
stage's naturalness scorer) comes on top of it. ``malloc_trim(0)`` returns every free page of every arena (a few
milliseconds); peak RSS of the default's generate job: docs/performance.md, "bf16 products for generation".
"""

from __future__ import annotations

import ctypes
import functools
import sys


@functools.cache
def _trim():
    """glibc's ``malloc_trim``, or None (another C library, another system)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        return None


def give_back_free_memory() -> bool:
    """Return the process's free heap pages to the system; whether the C library could."""
    trim = _trim()
    if trim is None:
        return False
    trim(0)
    return True


def available_bytes() -> int | None:
    """Memory this process can still take without swapping or being killed: the system's ``MemAvailable``
    (``/proc/meminfo``), or less where the process's memory cgroup (a Slurm job's limit, a container's) leaves less
    (:func:`cgroup_room`); None where neither is known."""
    known = [b for b in (_meminfo_available(), cgroup_room()) if b is not None]
    return min(known) if known else None


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def cgroup_room(proc: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup") -> int | None:
    """The limit of this process's memory cgroup less what the cgroup uses, in bytes; None without a limit or where
    it cannot be read. cgroup v2 (``0::/path``: ``memory.max``, ``memory.current``) and v1 (the ``memory``
    controller's ``memory.limit_in_bytes``, ``memory.usage_in_bytes``)."""
    from pathlib import Path

    try:
        lines = Path(proc).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # v2
            folder, limit_name, usage_name = Path(root, path.lstrip("/")), "memory.max", "memory.current"
        elif "memory" in controllers.split(","):  # v1
            folder = Path(root, "memory", path.lstrip("/"))
            limit_name, usage_name = "memory.limit_in_bytes", "memory.usage_in_bytes"
        else:
            continue
        try:
            limit, usage = (
                (folder / limit_name).read_text().strip(),
                (folder / usage_name).read_text().strip(),
            )
        except OSError:
            continue
        if limit == "max" or not limit.isdigit() or not usage.isdigit() or int(limit) >= 1 << 60:
            continue  # no limit here (v1 writes "no limit" as a number near 2**63)
        return max(0, int(limit) - int(usage))
    return None
