"""``solve``: one entry point, one signature, every solver behind it."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import greedy, ilp
from ._common import _heap
from ._common._fsum import fsum
from ._common._lists import split_positions
from ._common._validate import Items, Problem, active_items, all_fit, check_memory_limit, validate
from .dense import _solver as dense
from .solution import Solution
from .sparse import _solver as sparse

__all__ = ["solve", "SOLVERS", "choose_solver"]

Kernel = Callable[[Items, "int | None"], "tuple[np.ndarray, dict[str, Any]]"]


@dataclass(frozen=True)
class _Spec:
    kernel: Kernel
    exact: bool
    unquantised: bool  # accepts scale=None


_REGISTRY: dict[str, _Spec] = {
    "greedy": _Spec(greedy.solve_greedy, exact=False, unquantised=False),
    "ilp": _Spec(ilp.solve_ilp, exact=True, unquantised=True),
    "dp": _Spec(dense.solve_dp, exact=True, unquantised=False),
    "hirschberg": _Spec(dense.solve_hirschberg, exact=True, unquantised=False),
    "sparse": _Spec(sparse.solve_sparse, exact=True, unquantised=True),
}

#: Names accepted by ``solve(..., solver=...)``.
SOLVERS: tuple[str, ...] = (*_REGISTRY, "auto")

#: "auto" uses the bit-table ``dp`` while n * (W + 1) is at most this many cells.
AUTO_DP_CELLS = 100_000


def choose_solver(problem: Problem, items: Items) -> str:
    """The rule behind ``solver="auto"``.

    * ``scale=None`` (real-valued memory): ``sparse``, the only exact
      compiled solver that takes unquantised weights.
    * Tiny dense tables, n * (W + 1) <= ``AUTO_DP_CELLS`` (n undecided items,
      W the capacity): the bit-table ``dp``, one short pass per item, which is
      on a par with ``sparse``'s fixed cost there.
    * Everything else: ``sparse``. Its states are distinct integer weights, so
      it never holds more than about W of them, and its pruning keeps them far
      fewer; measured, it beats the dense solvers from n * W of about 1e6 up
      (README, sparse section). Dense ``hirschberg`` remains available by name.
    """
    n = items.weights.size
    if problem.scale is None or n == 0:
        return "sparse"
    if n * (int(items.capacity) + 1) <= AUTO_DP_CELLS:
        return "dp"
    return "sparse"


def solve(
    memory: Sequence[float] | np.ndarray,
    runtimes: Sequence[float] | np.ndarray,
    max_memory: float,
    *,
    solver: str = "auto",
    scale: float | None = 10_000,
    memory_limit: int | None = None,
) -> Solution:
    """Choose which activations to save so the saved runtime is maximal within a budget.

    Parameters
    ----------
    memory : sequence of float
        Memory of each candidate activation (any unit; PyTorch normalises it).
        Finite and >= 0.
    runtimes : sequence of float
        Runtime saved by keeping each activation. Items with runtime <= 0 are
        never saved.
    max_memory : float
        The budget, in the units of ``memory``.
    solver : str
        One of :data:`SOLVERS`. ``"auto"`` (the default) picks an exact solver
        by instance; see :func:`choose_solver`.
    scale : float or None
        Weights are ``round(memory * scale)`` and the capacity
        ``round(max_memory * scale)``, as in PyTorch (10,000).
    memory_limit : int, optional
        Bytes the solver may allocate. It raises :class:`SolverMemoryError`
        before allocating when its estimate exceeds this, or the memory
        available to the process. When every undecided item fits (an
        infinite budget, or nothing left to decide) no solver runs and
        nothing is allocated, so any limit, 0 included, is met.
        Without a limit, on glibc, the heap keeps up to 512 bytes an item
        (at most 64 MiB) of freed memory for the next solve: fewer page
        faults for a higher peak (docs/contract.md, "Heap"); a solve with a
        limit raises no padding (one an earlier solve raised stays).

    Returns
    -------
    Solution

    Raises
    ------
    ValueError
        On malformed input, naming the offending index or value: booleans,
        numbers beyond float64, NaN or infinite items, negative memory, a
        negative or NaN budget, positive runtimes summing to 2**960 or more.
    SolverMemoryError
        When the solve would not fit in memory.

    Examples
    --------
    >>> s = solve([0.2, 0.3, 0.5], [2.0, 3.0, 4.0], 0.5)
    >>> s.value, s.saved, s.recomputed
    (5.0, [0, 1], [2])
    """
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    check_memory_limit(memory_limit)
    problem = validate(memory, runtimes, max_memory, scale)
    if memory_limit is None:  # a limit asks for memory first: no padding raised for it
        _heap.keep_for(problem.n)
    quantised = problem.scale is not None
    if solver != "auto" and not quantised and not _REGISTRY[solver].unquantised:
        unq = [k for k, s in _REGISTRY.items() if s.unquantised]
        raise ValueError(
            f"solver {solver!r} needs quantised weights (scale=None is accepted by {', '.join(unq + ['auto'])})"
        )
    start = time.perf_counter()
    items = active_items(problem, quantised=quantised)
    name = choose_solver(problem, items) if solver == "auto" else solver
    if all_fit(items):
        # Nothing to decide (no undecided items, or all of them fit, e.g. an
        # infinite budget): every solver's answer is all of them, and no
        # kernel runs, so nothing is allocated.
        chosen, stats = None, {"peak_bytes": 0, "all_fit": True}
    else:
        chosen, stats = _REGISTRY[name].kernel(items, memory_limit)
    seconds = time.perf_counter() - start
    return _solution(problem, items, chosen, name, {**stats, "seconds": seconds})


def _solution(
    problem: Problem, items: Items, chosen: np.ndarray | None, name: str, stats: dict[str, Any]
) -> Solution:
    """The Solution of ``chosen`` (positions in ``items``; None: all of them)
    and the forced items; ``value`` is their runtimes' correctly rounded sum."""
    n = problem.n
    if chosen is None:
        taken = items.index
    else:  # every item undecided: the index is 0..n-1, and a position is its item
        taken = chosen if items.index.size == n else items.index[chosen]
    stats.setdefault("capacity", problem.capacity)
    if chosen is None and taken.size + items.forced.size == n:  # every item saved: no mask
        saved, recomputed, value = _all_indices(n), [], fsum(problem.runtimes)
    else:
        saved_mask = np.zeros(n, dtype=bool)
        saved_mask[items.forced] = True
        saved_mask[taken] = True
        saved, recomputed = split_positions(saved_mask.view(np.uint8), _shared_range(n))
        value = fsum(problem.runtimes, saved_mask)
    return Solution(value=value, saved=saved, recomputed=recomputed, solver=name, stats=stats)


#: ``list(range(n))`` for n up to this reuses one list's int objects (ints are
#: immutable): a slice copies pointers, about 7x faster than making 10^4 ints.
#: Covers n = 10^5; what it keeps alive is about 6 MiB at its largest.
_SHARED_INDICES = 1 << 17
_indices: list[int] = []


def _shared_range(n: int) -> list[int]:
    """The shared ``list(range(m))``, m >= n, or [] above ``_SHARED_INDICES``.
    Its ints are handed out; the list itself is never changed (a longer one
    replaces it), so another thread may go on reading the old one."""
    global _indices
    if n > _SHARED_INDICES:
        return []
    shared = _indices  # one read: another thread may replace it meanwhile
    if n > len(shared):
        shared = _indices = list(range(n))
    return shared


def _all_indices(n: int) -> list[int]:
    """A new list equal to ``list(range(n))``."""
    return _shared_range(n)[:n] if n <= _SHARED_INDICES else list(range(n))
