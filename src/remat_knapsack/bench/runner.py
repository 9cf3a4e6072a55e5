"""Spawn one capped, timed child per (solver, instance) and collect its row.

A child that raises, runs out of memory, is killed or hangs becomes a row with
``status`` ``error``, ``oom``, ``crash`` or ``timeout``; the benchmark goes on.
The parent reaps each child with ``os.wait4``, so the kernel's peak RSS of that
child is known even when it died before reporting.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

__all__ = ["Job", "run_job", "run_jobs", "progress"]

_POLL = 0.02


@dataclass(frozen=True)
class Job:
    solver: str
    instance: dict[str, Any]  # memory, runtimes, max_memory, name, ...
    meta: dict[str, Any] = field(default_factory=dict)  # suite, n, seed, ... copied into the row


def run_job(job: Job, *, scale: float, timeout: float, memory_cap: int | None, min_time: float) -> dict[str, Any]:
    """Run ``job`` in a fresh interpreter; never raises for anything the child does."""
    inst = job.instance
    spec = {
        "solver": job.solver,
        "memory": inst["memory"],
        "runtimes": inst["runtimes"],
        "max_memory": inst["max_memory"],
        "scale": scale,
        "memory_cap": memory_cap,
        "min_time": min_time,
    }
    row: dict[str, Any] = {**job.meta, "solver": job.solver}
    with tempfile.TemporaryDirectory(prefix="remat-bench-") as tmp:
        path = os.path.join(tmp, "job.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        out_path, err_path = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "remat_knapsack.bench.child", path],
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")},
                start_new_session=True,
            )
            wall, status, rusage, timed_out = _wait(proc, timeout)
        with open(out_path, encoding="utf-8", errors="replace") as f:
            stdout = f.read()
        with open(err_path, encoding="utf-8", errors="replace") as f:
            stderr = f.read()
    row["wall"] = wall
    row["peak_rss_kernel"] = rusage.ru_maxrss * 1024 if rusage else None
    if timed_out:
        return {**row, "status": "timeout", "message": f"killed after {timeout:g} s"}
    result = _last_json(stdout)
    if result is not None:
        row.update(result)
        return row
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        # SIGKILL with no report is the kernel's OOM killer in practice.
        return {**row, "status": "oom" if sig == signal.SIGKILL else "crash", "message": f"killed by {name}"}
    tail = " ".join(stderr.strip().splitlines()[-1:])[:300]
    return {**row, "status": "crash", "message": f"exit {os.WEXITSTATUS(status)}: {tail}"}


def _wait(proc: subprocess.Popen, timeout: float):
    start = time.perf_counter()
    timed_out = False
    while True:
        pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - start > timeout:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _pid, status, rusage = os.wait4(proc.pid, 0)
            break
        time.sleep(_POLL)
    proc.returncode = status  # reaped here; keep Popen from waiting again
    return time.perf_counter() - start, status, rusage, timed_out


def _last_json(text: str) -> dict[str, Any] | None:
    for line in reversed(text.strip().splitlines()):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and "status" in value:
            return value
    return None


def run_jobs(
    jobs: list[Job], *, on_row: Callable[[dict[str, Any]], None] | None = None, quiet: bool = False, **kw: Any
) -> list[dict[str, Any]]:
    """Run every job in order, with a progress bar on stderr."""
    rows = []
    for job, bar in progress(jobs, quiet=quiet):
        bar(f"{job.solver} {job.instance.get('name', '')}")
        row = run_job(job, **kw)
        rows.append(row)
        if on_row:
            on_row(row)
    return rows


def progress(jobs: list[Job], *, quiet: bool = False) -> Iterator[tuple[Job, Callable[[str], None]]]:
    """Yield ``(job, set_label)``; tqdm when installed, else one line per job."""
    total = len(jobs)
    try:
        if quiet:
            raise ImportError
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        with tqdm(total=total, unit="run", file=sys.stderr, dynamic_ncols=True) as pbar:
            for job in jobs:
                yield job, lambda s: pbar.set_description_str(s[:50])
                pbar.update(1)
        return
    t0 = time.perf_counter()
    for k, job in enumerate(jobs, 1):
        label = [""]
        yield job, lambda s, _l=label: _l.__setitem__(0, s)
        if not quiet:
            print(f"[{k}/{total}] {label[0]}  ({_fmt_elapsed(time.perf_counter() - t0)})", file=sys.stderr, flush=True)


def _fmt_elapsed(s: float) -> str:
    return f"{int(s // 60)}:{int(s % 60):02d}" if math.isfinite(s) else "?"

