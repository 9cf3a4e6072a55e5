"""Ctrl-C stops the dense solvers from inside their compiled loops.

A timer thread sends SIGINT to this process while a long solve runs on the
main thread. The KeyboardInterrupt must come out of a running kernel (its
traceback passes through ``_dense.pyx``): before the kernels polled, it came
from the next Python line after a kernel that ran to its end. Then the
process must solve again as before. No timing is asserted.
"""

import os
import signal
import sys
import threading
import traceback

import numpy as np
import pytest

from remat_knapsack import solve
from remat_knapsack._common._validate import active_items, validate
from remat_knapsack.dense import _solver as dense

# SIGINT to a process that is running compiled code is a POSIX notion: on
# Windows os.kill(pid, SIGINT) ends the process instead of raising in it.
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery is POSIX-only")

DELAY = 0.3  # seconds before SIGINT; each solve below takes far longer uninterrupted


def _long_items():
    """n = 1,500 strongly correlated items (runtime = weight + 1000), W = 3.8e6:
    5.7e9 cells, and bounds prune little, so seconds of work on every dense
    path. Interrupted early, a solve touches a small part of what it allocates."""
    rng = np.random.default_rng(0)
    w = rng.integers(1000, 9000, 1500)
    return active_items(validate(w / 10_000, w + 1000.0, float(w.sum() / 2 / 10_000), 10_000))


RUNS = {
    "dp": lambda items: dense.solve_dp(items),
    "hirschberg": lambda items: dense.solve_hirschberg(items),
    "hirschberg splits, two threads": lambda items: dense.solve_hirschberg(items, leaf_bytes=0, threads=2),
    "hirschberg splits, one thread": lambda items: dense.solve_hirschberg(items, leaf_bytes=0, threads=1),
    "hirschberg leaves only": lambda items: dense.solve_hirschberg(items, leaf_bytes=1 << 40, prune=False),
}


class _Sigint:
    """SIGINT after DELAY, sent again every 50 ms while it lands in Python code
    (a numpy wrapper, a callback) rather than in a compiled loop, which polls
    with ``solve_dp``/``solve_hirschberg`` as the innermost Python frame."""

    KERNEL_CALLERS = frozenset({"solve_dp", "solve_hirschberg"})

    def __init__(self):
        self.timers = []
        self.done = False

    def send(self, delay):
        timer = threading.Timer(delay, lambda: self.done or os.kill(os.getpid(), signal.SIGINT))
        timer.daemon = True
        self.timers.append(timer)
        timer.start()

    def handler(self, signum, frame):
        if self.done:
            return
        if frame is not None and frame.f_code.co_name in self.KERNEL_CALLERS:
            self.done = True
            raise KeyboardInterrupt
        self.send(0.05)


def _interrupted(run, delay):
    """Run ``run()`` with SIGINT sent after ``delay`` seconds; return the KeyboardInterrupt."""
    sigint = _Sigint()
    old = signal.signal(signal.SIGINT, sigint.handler)
    try:
        sigint.send(delay)
        with pytest.raises(KeyboardInterrupt) as info:
            run()
    finally:
        sigint.done = True
        for timer in list(sigint.timers):
            timer.cancel()
            timer.join()
        signal.signal(signal.SIGINT, old)
    return info.value


def _files_of_a_kernel_interrupt(run):
    """The files of the traceback of a KeyboardInterrupt out of ``run()``: the first of three tries that came
    out of a compiled loop, the delay doubled after each. The handler runs in the innermost Python frame, which
    is the kernel's caller both while the kernel polls and while the caller's own lines run; on a loaded
    machine the first SIGINT can land in those lines, before the kernel starts. A kernel that never polls
    fails every try (its interrupt comes from the caller's next line, after it ran to its end)."""
    for attempt in range(3):
        exc = _interrupted(run, DELAY * 2**attempt)
        files = [f.filename for f in traceback.extract_tb(exc.__traceback__)]
        if any(f.endswith("_dense.pyx") for f in files):
            break
    return files


@pytest.mark.parametrize("name", list(RUNS))
def test_sigint_stops_a_long_dense_solve(name):
    items = _long_items()
    assert items.weights.size * int(items.capacity) > 5e9
    for _ in range(2):  # the second time shows the first left nothing behind
        files = _files_of_a_kernel_interrupt(lambda: RUNS[name](items))
        assert any(f.endswith("_dense.pyx") for f in files), files
    # usable afterwards: the same answers as ever, on every path
    memory, runtimes = [0.0002, 0.0002, 0.0003, 0.0001], [2.0, 2.0, 3.0, 1.0]
    for solver in ("dp", "hirschberg", "sparse"):
        assert solve(memory, runtimes, 0.0004, solver=solver).saved == [0, 1]

