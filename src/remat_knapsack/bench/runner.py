"""Run one capped, timed child process per (solver, instance) and collect its row.

A child that raises, runs out of memory, is killed or hangs becomes a row with
``status`` ``error``, ``oom``, ``crash`` or ``timeout``; the benchmark goes on.
Children are forked from a :mod:`.forkserver` that has imported the peer's
modules (so torch is imported once per benchmark, not once per run), or spawned
as fresh interpreters (``fork=False``). Each is reaped with ``os.wait4``, so the
kernel's peak RSS of that child is known even when it died before reporting.
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .forkserver import ForkServer
from .peers import available

__all__ = ["Job", "Runner", "progress"]

_POLL = 0.02


@dataclass(frozen=True)
class Job:
    solver: str
    instance: dict[str, Any]  # memory, runtimes, max_memory, name, ...
    meta: dict[str, Any] = field(default_factory=dict)  # suite, n, seed, ... copied into the row
    #: This job's own ``scale`` (None included), ``min_time`` or ``timeout``, overriding the runner's.
    options: dict[str, Any] = field(default_factory=dict)


class Runner:
    """Runs jobs, each in its own process: forked from a per-import-set server, or spawned."""

    def __init__(self, *, scale: float, timeout: float, memory_cap: int | None, min_time: float, fork: bool = True):
        self.scale, self.timeout, self.memory_cap, self.min_time = scale, timeout, memory_cap, min_time
        self.fork = fork and hasattr(os, "fork")
        self.env = dict(os.environ)  # every solver keeps its own threading defaults
        self._servers: dict[tuple[str, ...], ForkServer] = {}
        self._peers = available()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for server in self._servers.values():
            server.close()
        self._servers.clear()

    def run(self, job: Job) -> dict[str, Any]:
        """Run ``job`` in a fresh process; never raises for anything the child does."""
        inst = job.instance
        unknown = set(job.options) - {"scale", "min_time", "timeout"}
        if unknown:
            raise ValueError(f"unknown job option(s) {', '.join(sorted(unknown))}")
        timeout = job.options.get("timeout", self.timeout)
        spec = {
            "solver": job.solver,
            "memory": inst["memory"],
            "runtimes": inst["runtimes"],
            "max_memory": inst["max_memory"],
            "scale": job.options.get("scale", self.scale),
            "memory_cap": self.memory_cap,
            "min_time": job.options.get("min_time", self.min_time),
        }
        with tempfile.TemporaryDirectory(prefix="remat-bench-") as tmp:
            paths = {k: os.path.join(tmp, k) for k in ("job", "result", "log")}
            with open(paths["job"], "w", encoding="utf-8") as f:
                json.dump(spec, f)
            peer = self._peers.get(job.solver)
            if self.fork and peer is not None:
                wall, status, maxrss, timed_out = self._forked(peer.needs, paths, timeout)
            else:
                wall, status, maxrss, timed_out = self._spawned(paths, timeout)
            result = _read_json(paths["result"])
            with open(paths["log"], encoding="utf-8", errors="replace") as f:
                log = f.read()
        row: dict[str, Any] = {**job.meta, "solver": job.solver, "wall": wall, "peak_rss_kernel": maxrss}
        return _classify(row, result, status, timed_out, timeout, log)

    def _forked(self, needs: tuple[str, ...], paths: dict[str, str], timeout: float):
        server = self._servers.get(needs)
        if server is None:
            server = self._servers[needs] = ForkServer(needs, self.env)
        pid = server.start(paths["job"], paths["result"], paths["log"])
        start = time.perf_counter()
        reply = server.finish(timeout)
        timed_out = reply is None
        if timed_out:
            _kill(pid)
            reply = server.finish(None)
        wall = time.perf_counter() - start
        return wall, reply.get("status", 0), reply.get("maxrss"), timed_out

    def _spawned(self, paths: dict[str, str], timeout: float):
        with open(paths["log"], "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "remat_knapsack.bench.child", paths["job"], paths["result"]],
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
                env=self.env,
                start_new_session=True,
            )
            start = time.perf_counter()
            timed_out = False
            while True:
                pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.perf_counter() - start > timeout:
                    timed_out = True
                    _kill(proc.pid)
                    _pid, status, rusage = os.wait4(proc.pid, 0)
                    break
                time.sleep(_POLL)
            proc.returncode = status  # reaped here; keep Popen from waiting again
        return time.perf_counter() - start, status, rusage.ru_maxrss * 1024, timed_out


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)  # the child leads its own session
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) and "status" in value else None


def _classify(row, result, status, timed_out, timeout, log) -> dict[str, Any]:
    if timed_out:
        return {**row, "status": "timeout", "message": f"killed after {timeout:g} s"}
    if result is not None:
        return {**row, **result}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        # SIGKILL with no report is the kernel's OOM killer in practice.
        return {**row, "status": "oom" if sig == signal.SIGKILL else "crash", "message": f"killed by {name}"}
    tail = " ".join(log.strip().splitlines()[-1:])[:300]
    return {**row, "status": "crash", "message": f"exit {os.WEXITSTATUS(status)}: {tail}"}


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

