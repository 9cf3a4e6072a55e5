"""How much memory a solve may use, and the check made before allocating."""

from __future__ import annotations

import os
import resource

from .errors import SolverMemoryError

__all__ = ["available_bytes", "check_memory"]

# Keep this much of the available memory for the interpreter and the caller.
_HEADROOM = 0.9


def available_bytes() -> int:
    """Bytes this process can still allocate: MemAvailable, capped by RLIMIT_AS."""
    avail = _meminfo_available()
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        avail = min(avail, max(0, soft - _vm_size()))
    return int(avail * _HEADROOM)


def check_memory(solver: str, needed: int, memory_limit: int | None, detail: str = "") -> None:
    """Raise :class:`SolverMemoryError` if ``needed`` bytes do not fit."""
    limit = available_bytes() if memory_limit is None else min(int(memory_limit), available_bytes())
    if needed > limit:
        raise SolverMemoryError(solver, needed, limit, detail)


def _meminfo_available() -> int:
    avail = _proc_bytes("/proc/meminfo", "MemAvailable:")
    if avail is not None:
        return avail
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 1 << 62


def _vm_size() -> int:
    return _proc_bytes("/proc/self/status", "VmSize:") or 0


def _proc_bytes(path: str, key: str) -> int | None:
    """The ``key: N kB`` line of a /proc file, in bytes (None if absent)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None
