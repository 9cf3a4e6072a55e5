"""How much memory a solve may use, and the check made before allocating."""

from __future__ import annotations

import os
import sys
import time

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

from ..errors import SolverMemoryError

__all__ = ["available_bytes", "check_memory", "limit_bytes"]

# Keep this much of the available memory for the interpreter and the caller.
_HEADROOM = 0.9
# MemAvailable is read again once its last reading is this old (seconds):
# reading /proc/meminfo costs about 10 us, a twentieth of a solve of 10^3
# items, and a solve in a loop asks every time; what is available does not
# change that fast in any way a solve could tell.
_FRESH = 0.05
_last_reading: tuple[float, int] = (-1.0, 0)  # (time.monotonic() when read, bytes)


def available_bytes() -> int:
    """Bytes this process can still allocate: MemAvailable, capped by RLIMIT_AS."""
    avail = _meminfo_available()
    if resource is not None:
        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            avail = min(avail, max(0, soft - _vm_size()))
    return int(avail * _HEADROOM)


def limit_bytes(memory_limit: int | None) -> int:
    """Bytes a solve may allocate: ``memory_limit``, capped by what is available."""
    avail = available_bytes()
    return avail if memory_limit is None else min(int(memory_limit), avail)


def check_memory(solver: str, needed: int, memory_limit: int | None, detail: str = "") -> None:
    """Raise :class:`SolverMemoryError` if ``needed`` bytes do not fit."""
    limit = limit_bytes(memory_limit)
    if needed > limit:
        raise SolverMemoryError(solver, needed, limit, detail)


def _meminfo_available() -> int:
    """Linux: MemAvailable (a reading at most ``_FRESH`` seconds old);
    Windows: the available physical memory; other POSIX systems (macOS):
    free pages, else all physical pages."""
    global _last_reading
    now = time.monotonic()
    read_at, last = _last_reading  # one read: another thread may replace it meanwhile
    if 0 <= now - read_at < _FRESH:
        return last
    avail = _proc_bytes("/proc/meminfo", "MemAvailable:")
    if avail is not None:
        _last_reading = (now, avail)
        return avail
    if sys.platform == "win32":  # pragma: no cover - Windows
        return _windows_available()
    for pages in ("SC_AVPHYS_PAGES", "SC_PHYS_PAGES"):  # pragma: no cover - non-Linux
        try:
            return os.sysconf(pages) * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            continue
    return 1 << 62  # pragma: no cover


def _windows_available() -> int:  # pragma: no cover - Windows
    import ctypes

    class MemoryStatusEx(ctypes.Structure):
        _fields_ = [("dwLength", ctypes.c_ulong), ("dwMemoryLoad", ctypes.c_ulong)] + [
            (name, ctypes.c_ulonglong)
            for name in ("total_phys", "avail_phys", "total_page", "avail_page", "total_virt", "avail_virt", "ext")
        ]

    stat = MemoryStatusEx()
    stat.dwLength = ctypes.sizeof(stat)
    if not ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(stat)):
        return 1 << 62
    return int(stat.avail_phys)


def _vm_size() -> int:
    return _proc_bytes("/proc/self/status", "VmSize:") or 0


def _proc_bytes(path: str, key: str) -> int | None:
    """The ``key: N kB`` line of a /proc file, in bytes (None if absent).
    Read as bytes in one system call or a few (every solve asks, and a text
    file's decoding and line iteration cost more than the read)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    chunks = []
    try:
        while chunk := os.read(fd, 1 << 13):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    data, tag = b"".join(chunks), key.encode()
    at = 0 if data.startswith(tag) else data.find(b"\n" + tag) + 1  # the key starts its line
    if at == 0 and not data.startswith(tag):
        return None
    end = data.find(b"\n", at)
    fields = data[at + len(tag):end if end >= 0 else len(data)].split()
    return int(fields[0]) * 1024 if fields else None
