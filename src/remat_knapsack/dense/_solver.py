"""Dense solvers: dynamic programming over every capacity 0..W.

``dp``
    The full table, as PyTorch's ``dp_knapsack``, but with one decision bit per
    cell instead of a float32 (32x smaller), plus one float64 row.
    Time O(nW), memory O(nW) bits + O(W).

``hirschberg``
    The paper's sliding-window Hirschberg (Maczan 2026, after Hirschberg 1975),
    done so that it stays exact and canonical. Two DP rows, each item one fused
    in-place pass in compiled code, the two halves of a split on the two cores.
    Because a split gives the right half only the capacity it uses, each
    recursion level costs at most (items at that level) x (capacity) cells, and
    capacities that cannot matter are skipped, so the total is O(nW), not
    O(nW log n). A sub-problem whose bit table fits in the second row's memory
    is solved there by the bit-table DP (hybrid leaves), so memory is O(W + n):
    two rows of W + 1 and per-item arrays. A leaf also skips the chunks of
    capacities whose own values, plus Dantzig's bound on the items still to
    come, cannot reach the optimum (the gate; docs/algorithms.md).

Both return the set PyTorch's ``dp_knapsack`` backtracking returns for the same
arithmetic: scanning from the last item, an item is left out whenever the
optimum stays reachable without it.

>>> from remat_knapsack import solve
>>> memory, runtimes = [0.0002, 0.0002, 0.0003, 0.0001], [2.0, 2.0, 3.0, 1.0]
>>> [solve(memory, runtimes, 0.0004, solver=s).saved for s in ("dp", "hirschberg")]
[[0, 1], [0, 1]]

(Value 4 is also reached by items 2 and 3; the backtrack leaves the last items
out first.)

References: R. Bellman, *Dynamic Programming*, 1957; D. S. Hirschberg, "A linear
space algorithm for computing maximal common subsequences", CACM 18(6), 1975;
J. Maczan, "Memory-efficient activation checkpointing with sliding window and
Hirschberg's algorithm for 0/1 knapsack solving in PyTorch", arXiv 2608.08740;
G. B. Dantzig, "Discrete-variable extremum problems", Oper. Res. 5(2), 1957
(the LP bound used for pruning).

Precision: both keep float64 rows whenever they fit in the memory allowed
(``memory_limit``, or what the machine has available), and fall back to
float32 rows, PyTorch's own precision, only when float64 ones do not fit but
float32 ones do; ``Solution.stats["precision"]`` says which ("float64" or
"float32"). Sums of integer runtimes are exact in float64 up to 2**53 and in
float32 only up to 2**24. Integer runtimes whose float64 sums may round (the
total, divided by the largest power of two dividing them all, reaches 2**53:
odd FLOP counts near 2**52 and up) are compared exactly: the rows' set is a
lower bound for ``sparse._exact.exact_canonical``, which returns the exact
optimum's canonical set (``stats["exact_values"]``). ``Solution.value`` is always re-summed in float64
from the chosen items. The passes are memory-bound, so float64 rows cost about
twice the time and the row memory of float32 ones.

Ctrl-C: on the main thread the compiled loops poll Python's signal handlers
every ``_interrupt.CHECK_EVERY / 8`` cells and while they wait, and raise
``KeyboardInterrupt`` having freed their scratch memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .._common._memory import check_memory
from .._common._validate import Items
from ..errors import SolverMemoryError
from ..greedy import greedy_select
from ..sparse._exact import beyond_exact, exact_canonical
from ..sparse._solver import solve_sparse
from ..sparse._states import max_states_within
from . import _dense

__all__ = ["dp_bytes", "hirschberg_bytes", "solve_dp", "solve_hirschberg"]

#: Threads for the two halves of a split.
THREADS = max(1, min(2, os.cpu_count() or 1))

#: A leaf's bit table may always use this much, however short the rows.
LEAF_FLOOR_BYTES = 32 << 20
#: The sparse core may use this much for the optimum that ``hirschberg``'s
#: pruning starts from (``_lower_bound``).
LOWER_BOUND_BYTES = 16 << 20
#: Sub-problems with a smaller capacity are not pruned: a pass over them costs
#: less than its bound interval (about 10 us an item).
PRUNE_MIN_CAPACITY = 1 << 16

_ITEM_BYTES = 64  # per-item arrays: weights, values, prefix sums, layout, selection


def dp_bytes(items: Items, dtype: type = np.float64) -> int:
    """Bytes ``dp`` allocates: the bit table, one row of ``dtype``, per-item arrays."""
    n = items.weights.size
    if n == 0:
        return 0
    c = int(items.capacity)
    bits = _dense.leaf_bits(items.weights, c)
    return bits // 8 + 8 + np.dtype(dtype).itemsize * (c + 1) + _ITEM_BYTES * n


def hirschberg_bytes(items: Items, dtype: type = np.float64) -> int:
    """Bytes ``hirschberg`` allocates with rows of ``dtype``: two rows (leaves
    keep their bit table in the second one, or in at most ``LEAF_FLOOR_BYTES``
    of their own when rows are smaller than that) and per-item arrays. A tie
    across a split adds one uint64 key row; that is checked when it happens."""
    n = items.weights.size
    if n == 0:
        return 0
    c = int(items.capacity)
    row = _row_bytes(c, dtype)
    extra = 0
    if row < LEAF_FLOOR_BYTES:
        extra = min(LEAF_FLOOR_BYTES, _dense.leaf_bits(items.weights, c) // 8 + 16)
    # a gated leaf's block maps and LP lists (leaves of at most GATE_MAX_ITEMS items)
    extra += _dense.gate_bytes(min(n, _dense.GATE_MAX_ITEMS), c)
    return 2 * row + extra + _ITEM_BYTES * n


def _row_bytes(c: int, dtype: type) -> int:
    """One row of c + 1 cells, rounded up to whole uint64 words plus one."""
    return 8 * ((c + 1) * np.dtype(dtype).itemsize // 8 + 1)


def _precision(solver: str, bytes_of: Callable[[type], int], memory_limit: int | None, detail: str) -> tuple[type, int]:
    """float64 rows if they fit in the memory allowed, else float32 rows if
    those fit (else :class:`SolverMemoryError`). Returns (dtype, bytes)."""
    need = bytes_of(np.float64)
    try:
        check_memory(solver, need, memory_limit, detail)
        return np.float64, need
    except SolverMemoryError:
        need32 = bytes_of(np.float32)
        if need32 >= need:
            raise
    check_memory(solver, need32, memory_limit, f"{detail}, even with float32 rows")
    return np.float32, need32


def _lower_bound(items: Items, dtype: type, memory_limit: int | None = None) -> tuple[float, float, int]:
    """A feasible value, the tolerance that covers the rows' rounding (n
    additions of ``dtype``) and the bytes finding the value took at its peak.

    The value is the optimum itself when the sparse core finds it within
    ``LOWER_BOUND_BYTES`` of states, and within ``memory_limit`` (a few
    milliseconds where a dense pass takes seconds; it runs before the rows are
    allocated), else the better of greedy and the best single item. The
    higher the bound, the fewer capacities the passes keep: on paper-like
    instances (n = 20 to 100, three seeds each) the optimum keeps 0-41% fewer
    cells than greedy's value."""
    taken, _ = greedy_select(items.weights, items.values, items.capacity)
    lb = max(float(np.sum(items.values[taken])), float(items.values.max()))
    peak = 0
    if not beyond_exact(items.values):  # (else the sparse core's exact-integer pass could take long)
        budget = LOWER_BOUND_BYTES if memory_limit is None else min(LOWER_BOUND_BYTES, memory_limit)
        try:
            best, found = solve_sparse(items, budget)
        except SolverMemoryError:
            pass  # too many states for a bound: greedy's value will do
        else:
            lb = max(lb, float(np.sum(items.values[best])))
            peak = int(found["peak_bytes"])
    return lb, _lower_bound_tolerance(items, dtype), peak


def _lower_bound_tolerance(items: Items, dtype: type) -> float:
    """What the rows' rounding (n additions of ``dtype``) can cost a value."""
    total = float(items.values.sum())
    return 4.0 * (items.values.size + 1) * total * float(np.finfo(dtype).eps) + 1e-9 * total


def solve_dp(items: Items, memory_limit: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Full bit-table DP. Returns the chosen positions in ``items`` and stats."""
    c = int(items.capacity)
    detail = f"capacity {c}, {items.weights.size} items"
    dtype, need = _precision("dp", lambda t: dp_bytes(items, t), memory_limit, detail)
    sel = np.zeros(items.weights.size, dtype=np.uint8)
    if items.weights.size:
        row = np.empty(c + 1, dtype=dtype)
        _dense.leaf(items.weights, items.values, c, row, sel, None, None, None, THREADS)
    stats = {"peak_bytes": need, "precision": np.dtype(dtype).name}
    return _exact_values(items, np.flatnonzero(sel.view(bool)), memory_limit, detail, stats), stats


def solve_hirschberg(
    items: Items,
    memory_limit: int | None = None,
    *,
    leaf_bytes: int | None = None,
    threads: int = THREADS,
    prune: bool = True,
    gate: bool = True,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Two-row Hirschberg DP. Returns the chosen positions in ``items`` and stats.

    ``leaf_bytes`` caps a leaf's bit table (default: the second row's size,
    which is where the table lives, or ``LEAF_FLOOR_BYTES`` if larger); tests
    set it low to exercise the splits.
    ``prune=False`` turns off the LP-bound pruning of capacities;
    ``gate=False`` only the leaves' pruning by the row's own values.
    """
    c = int(items.capacity)
    n = items.weights.size
    detail = f"capacity {c}, {n} items"
    dtype, need = _precision("hirschberg", lambda t: hirschberg_bytes(items, t), memory_limit, detail)
    sel = np.zeros(n, dtype=np.uint8)
    stats: dict[str, Any] = {
        "precision": np.dtype(dtype).name, "frames": 0, "leaves": 0, "tie_splits": 0, "key_passes": 0
    }
    peak = need
    if n:
        # The lower bound first: its states are freed before the rows exist.
        # The tolerance covers the rows' rounding in every pruned frame: the
        # sub-problems below a split are pruned with their known optimum even
        # when ``prune=False`` turns off the top-level bound (a zero tolerance
        # there pruned the optimal path on an LP bound rounded just below it).
        if prune:
            lb, tol, bound_bytes = _lower_bound(items, dtype, memory_limit)
            peak = max(peak, bound_bytes)
        else:
            lb, tol = 0.0, _lower_bound_tolerance(items, dtype)
        row_bytes = _row_bytes(c, dtype)
        # Zeros from np.zeros cost nothing until touched: the kernel maps in
        # only the pages its passes use, and needs not clear them first.
        A: np.ndarray = np.zeros(row_bytes // np.dtype(dtype).itemsize, dtype=dtype)
        B = np.empty_like(A)
        leaf_max = max(row_bytes, LEAF_FLOOR_BYTES) if leaf_bytes is None else leaf_bytes

        def key_row(size: int) -> np.ndarray:
            nonlocal peak
            extra = 8 * size
            check_memory("hirschberg", need + extra, memory_limit, "key row for a tie across a split")
            peak = max(peak, need + extra)
            return np.empty(size, dtype=np.uint64)

        stats.update(
            _dense.hirschberg(
                items.weights, items.values, c, A, B, sel, 8 * leaf_max, threads, key_row, lb, tol, PRUNE_MIN_CAPACITY,
                gate, True,
            )
        )
    stats["peak_bytes"] = peak
    return _exact_values(items, np.flatnonzero(sel.view(bool)), memory_limit, detail, stats), stats


def _exact_values(items: Items, chosen: np.ndarray, memory_limit: int | None, detail: str,
                  stats: dict[str, Any]) -> np.ndarray:
    """``chosen``, or with integer runtimes whose sums float64 may round (see
    "Precision"), the canonical set in exact integers from it
    (``sparse._exact``)."""
    if not beyond_exact(items.values):
        return chosen
    stats["exact_values"] = True
    max_states = max_states_within(items.weights.size, memory_limit, detail)
    return exact_canonical(items.weights, items.values, int(items.capacity), chosen, max_states, detail)
