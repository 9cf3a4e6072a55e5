"""Independent lowerings side by side: each task in a forked process, the results sent back.

Reading inductor's generated code for a plan (:mod:`._inductor`) is pure
Python, one core per plan, and the plans of several budgets do not depend on
one another. :func:`side_by_side` runs such tasks in forked copies of this
process (copy-on-write: the captured graphs are not sent, only each task's
picklable result comes back), :func:`workers` at a time.

It falls back to running the tasks here, one after the other, where that is
as good or the only safe way: one task or one worker, a platform without
``fork`` (Windows) or where forking a process that has loaded torch is unsafe
(macOS). A task that fails in a worker (or a worker that dies) is run again
here, so its error is raised as it would be without the workers.

``REMAT_KNAPSACK_WORKERS`` sets the number of workers (``1``: none); by
default, the cores this process may run on, at most :data:`MAX_WORKERS`.

May import: nothing of the package.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

__all__ = ["MAX_WORKERS", "WORKERS_ENV", "side_by_side", "workers"]

T = TypeVar("T")

#: The environment variable that sets the number of workers.
WORKERS_ENV = "REMAT_KNAPSACK_WORKERS"
#: At most this many workers by default: each holds a copy of the lowering's working memory.
MAX_WORKERS = 4

_tasks: Sequence[Callable[[], Any]] = ()  # the tasks of the running call, inherited by the forked workers


def workers() -> int:
    """How many forked workers :func:`side_by_side` may use (1: run the tasks here)."""
    given = os.environ.get(WORKERS_ENV, "").strip()
    if given:
        try:
            n = int(given)
        except ValueError:
            raise ValueError(f"{WORKERS_ENV}={given!r}: expected a whole number of workers (1: none)") from None
        if n < 1:
            raise ValueError(f"{WORKERS_ENV}={given!r}: expected at least 1 worker")
        return n
    if sys.platform != "linux":
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - Linux has sched_getaffinity
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def _run(index: int) -> Any:
    """Run task ``index`` in a worker (the tasks are inherited through the fork, never pickled)."""
    import torch

    torch.set_num_threads(1)  # a forked OpenMP pool is unsafe; lowering computes nothing of size anyway
    return _tasks[index]()


def side_by_side(tasks: Sequence[Callable[[], T]]) -> list[T]:
    """``[task() for task in tasks]``, the tasks run in forked workers where that is possible."""
    global _tasks
    n = min(workers(), len(tasks))
    if n <= 1 or not hasattr(os, "fork"):
        return [task() for task in tasks]
    import multiprocessing

    results: list[Any] = [None] * len(tasks)
    failed: list[int] = []
    _tasks = tasks
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns that forking a multi-threaded process may deadlock: the workers only
            # lower graphs, taking no lock another thread could hold, and compute nothing in parallel.
            warnings.simplefilter("ignore", DeprecationWarning)
            with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
                futures = [pool.submit(_run, i) for i in range(len(tasks))]
                for i, future in enumerate(futures):
                    try:
                        results[i] = future.result()
                    except Exception:  # its error is raised below, by the task run here
                        failed.append(i)
    finally:
        _tasks = ()
    for i in failed:
        results[i] = tasks[i]()
    return results
