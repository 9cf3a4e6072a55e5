"""Run one solver on one instance and measure it: ``python -m remat_knapsack.bench.child JOB.json OUT.json``.

The job file holds ``solver``, ``memory``, ``runtimes``, ``max_memory``,
``scale``, ``memory_cap`` (bytes, applied as RLIMIT_AS first) and ``min_time``
(seconds). The child writes one JSON object to OUT.json:

* ``status``: ``ok``, ``oom`` (MemoryError, SolverMemoryError or a failed
  allocation reported by a library) or ``error``;
* ``seconds``: solve time per call, measured around the call only (imports
  excluded). A fast solver is called again until ``min_time`` has passed, and
  the first (warm-up) call is then left out of the mean; ``seconds_median``
  and ``seconds_min`` are the median and minimum of the same calls;
* ``rss_before``, ``peak_rss``, ``peak_extra`` (bytes): resident memory before
  the solve, the process's peak, and the peak reached during the solve minus
  ``rss_before``. The peak is reset just before solving (``/proc/self/clear_refs``)
  so import transients do not count as solver memory.
"""

from __future__ import annotations

import importlib
import json
import resource
import statistics
import sys
import time
from typing import Any

from .._common._memory import _proc_bytes  # the one /proc reader

__all__ = ["main", "is_alloc_failure"]

MAX_CALLS = 1000
_ALLOC_PHRASES = ("can't allocate memory", "not enough memory", "out of memory", "bad_alloc", "unable to allocate")


def is_alloc_failure(exc: BaseException) -> bool:
    """True for MemoryError and for libraries' own allocation failures (torch raises RuntimeError)."""
    return isinstance(exc, MemoryError) or any(p in str(exc).lower() for p in _ALLOC_PHRASES)


def _status_kb(field: str) -> int | None:
    """Bytes of the ``field`` line of /proc/self/status (None where there is no /proc)."""
    return _proc_bytes("/proc/self/status", field + ":")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss() -> int:
    hwm = _status_kb("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run(job: dict[str, Any]) -> dict[str, Any]:
    from .peers import available, load

    cap = job.get("memory_cap")
    if cap:
        resource.setrlimit(resource.RLIMIT_AS, (int(cap), int(cap)))
    name = job["solver"]
    peer = available().get(name)
    out: dict[str, Any] = {"solver": name}
    try:
        for module in peer.needs if peer else ():
            importlib.import_module(module)
        fn = load(name)
    except Exception as e:  # noqa: BLE001 - reported, never raised
        return {**out, "status": "oom" if is_alloc_failure(e) else "error", "message": f"loading: {_one_line(e)}"}
    args = (job["memory"], job["runtimes"], job["max_memory"], job["scale"])
    exact_peak = _reset_peak()
    rss_before = _status_kb("VmRSS") or 0
    out.update(rss_before=rss_before, peak_reset=exact_peak)
    times: list[float] = []
    try:
        while True:
            t0 = time.perf_counter()
            saved, reported = fn(*args)
            times.append(time.perf_counter() - t0)
            if sum(times) >= job.get("min_time", 0.0) or len(times) >= MAX_CALLS:
                break
    except BaseException as e:  # noqa: BLE001 - MemoryError included
        peak = _peak_rss()
        status = "oom" if is_alloc_failure(e) else "error"
        return {**out, "status": status, "message": _one_line(e), "peak_rss": peak, "peak_extra": peak - rss_before}
    peak = _peak_rss()
    timed = times[1:] if len(times) > 1 else times
    return {
        **out,
        "status": "ok",
        "seconds": sum(timed) / len(timed),
        "seconds_median": statistics.median(timed),
        "seconds_min": min(timed),
        "calls": len(times),
        "saved": [int(i) for i in saved],
        "reported_value": float(reported),
        "peak_rss": peak,
        "peak_extra": max(0, peak - rss_before),
    }


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}"[:300]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0], encoding="utf-8") as f:
        job = json.load(f)
    result = run(job)
    with open(argv[1], "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
