"""A job's peak memory, its worker processes included: the largest sum of proportional set sizes seen.

``ru_maxrss`` counts one process. Planning lowers plans in forked workers
(``remat_knapsack.torch.peaks._fork``) and inductor compiles kernels in worker
processes, so a job's memory is its process tree's. :class:`PeakMemory`
samples, every :data:`INTERVAL` seconds in a thread, the proportional set size
(``Pss`` of ``/proc/PID/smaps_rollup``: a page shared by ``n`` processes counts
``1/n`` to each) of this process and of every process below it, and keeps the
largest sum. :attr:`PeakMemory.peak_bytes` is that sum or this process's own
``ru_maxrss``, whichever is larger. Off Linux, only ``ru_maxrss``.
"""

from __future__ import annotations

import os
import resource
import threading
from typing import Any

__all__ = ["INTERVAL", "PeakMemory"]

#: Seconds between samples.
INTERVAL = 0.1


def _pss(pid: int) -> int:
    """Proportional set size of ``pid`` in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _children(pid: int) -> list[int]:
    """The pids of ``pid``'s children (every thread's)."""
    found: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as f:
                found += [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        pass
    return found


def tree_pss(root: int) -> int:
    """Summed proportional set size of ``root`` and every process below it."""
    total, stack, seen = 0, [root], set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += _pss(pid)
        stack += _children(pid)
    return total


class PeakMemory:
    """``with PeakMemory() as m: ...``; then ``m.peak_bytes`` (see the module docstring)."""

    def __init__(self) -> None:
        self._peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            self._peak = max(self._peak, tree_pss(me))
            self._stop.wait(INTERVAL)

    def __enter__(self) -> PeakMemory:
        if os.path.exists(f"/proc/{os.getpid()}/smaps_rollup"):
            self._thread = threading.Thread(target=self._sample, name="peak-memory", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    @property
    def peak_bytes(self) -> int:
        return max(self._peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
