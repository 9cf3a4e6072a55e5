"""Fork servers: import a solver's heavy modules once, then fork one child per run.

Importing torch costs 1.5-4 s of wall time here, more than most solves. A
server process imports a peer's modules (``Peer.needs``) once and forks a fresh
child for every (solver, instance) run, so each run still has its own process,
its own RLIMIT_AS and its own peak RSS (the server's resident pages count, as
they would in a fresh interpreter that imported the same modules).

Protocol, one JSON line each way over the server's stdin/stdout:
request ``{"job": path, "result": path, "log": path}``; replies ``{"pid": pid}``
as soon as the child is forked, then ``{"status": wait_status, "maxrss": bytes}``
once it has been reaped. The parent kills the child's pid on timeout.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import select
import subprocess
import sys
from typing import Any

__all__ = ["ForkServer", "serve"]


class ForkServer:
    """The parent's handle on one server process (started on first use)."""

    def __init__(self, modules: tuple[str, ...], env: dict[str, str]) -> None:
        self.modules = modules
        self.env = env
        self.proc: subprocess.Popen | None = None

    def _ensure(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "remat_knapsack.bench.forkserver", *self.modules],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=self.env,
                bufsize=0,
            )
        return self.proc

    def start(self, job: str, result: str, log: str) -> int:
        """Fork a child for ``job``; its pid. Blocks while the server imports on first use."""
        proc = self._ensure()
        proc.stdin.write((json.dumps({"job": job, "result": result, "log": log}) + "\n").encode())
        reply = self._read(None)
        if reply is None or "pid" not in reply:
            raise RuntimeError(f"fork server for {self.modules or 'numpy'} failed: {reply}")
        return int(reply["pid"])

    def finish(self, timeout: float | None) -> dict[str, Any] | None:
        """The reap reply, or None if ``timeout`` passed first."""
        return self._read(timeout)

    def _read(self, timeout: float | None) -> dict[str, Any] | None:
        out = self.proc.stdout
        if timeout is not None:
            ready, _, _ = select.select([out], [], [], max(0.0, timeout))
            if not ready:
                return None
        line = out.readline()
        if not line:
            return {"error": "server exited"}
        return json.loads(line)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def serve(modules: list[str]) -> None:
    import numpy  # noqa: F401 - every peer needs it

    from . import child, peers  # noqa: F401

    for m in modules:
        importlib.import_module(m)
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:  # the run's own process
            _child(req)
        out.write((json.dumps({"pid": pid}) + "\n").encode())
        out.flush()
        _pid, status, rusage = os.wait4(pid, 0)
        out.write((json.dumps({"status": status, "maxrss": rusage.ru_maxrss * 1024}) + "\n").encode())
        out.flush()


def _child(req: dict[str, str]) -> None:
    code = 0
    try:
        os.setsid()
        fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        os.close(0)
        from .child import run

        with open(req["job"], encoding="utf-8") as f:
            result = run(json.load(f))
        with open(req["result"], "w", encoding="utf-8") as f:
            json.dump(result, f)
    except BaseException as e:  # noqa: BLE001 - the server must survive anything
        try:
            sys.stderr.write(f"{type(e).__name__}: {e}\n")
            sys.stderr.flush()
        finally:
            code = 1
    os._exit(code)


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    serve(sys.argv[1:])
