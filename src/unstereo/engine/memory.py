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
    """Memory the system can still give without swapping (``MemAvailable`` of ``/proc/meminfo``), None where
    that is not known."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
