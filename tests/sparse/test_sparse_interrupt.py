"""Ctrl-C reaches the compiled loops of ``sparse`` and ``_bounds``.

Each case runs in a child process that starts a solve taking far longer than
the test (minutes), is sent SIGINT once the solve has started, and must die
of KeyboardInterrupt. Nothing is timed: the parent only waits (a generous
limit keeps a regression from hanging the suite).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")

SRC = os.path.join(os.path.dirname(__file__), os.pardir, "src")

SPARSE = """
from remat_knapsack import instances, solve
from remat_knapsack.sparse import _solver as sparse
sparse._configure_lift(False)  # without the lift: over 30 s (0.13 dev; with it, under a second)
ins = instances.pisinger("circle", 100_000, R=1_000_000, seed=0)
print("ready", flush=True)
solve(ins.memory, ins.runtimes, ins.max_memory, solver="sparse", scale=1)
print("finished", flush=True)
"""

BOUNDS = """
import numpy as np
from remat_knapsack.dense import _bounds
rng = np.random.default_rng(0)
n = 400_000  # about half a minute
w = rng.integers(1, 10**6, n).astype(np.int64)
v = w + rng.integers(1, 10**5, n).astype(np.float64)
order = np.arange(n, dtype=np.int64)
print("ready", flush=True)
_bounds.intervals(w, v, order, int(w.sum() // 2), 0.0)
print("finished", flush=True)
"""


# The child installs Python's own handler first: a process started with SIGINT
# ignored (a background job of a non-interactive shell, nohup) passes that on.
PREAMBLE = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"


def _interrupted(code: str) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(SRC) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    child = subprocess.Popen([sys.executable, "-c", PREAMBLE + code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # into the compiled loop
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    return child.returncode, out, err


@pytest.mark.parametrize("code", [SPARSE, BOUNDS], ids=["sparse", "bounds"])
def test_sigint_raises_keyboard_interrupt(code):
    rc, out, err = _interrupted(code)
    assert "finished" not in out
    assert rc != 0
    assert err.rstrip().splitlines()[-1] == "KeyboardInterrupt"
