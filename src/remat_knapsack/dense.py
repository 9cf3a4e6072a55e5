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
    O(nW log n). Sub-problems whose bit table fits ``LEAF_BYTES`` are solved by
    the bit-table DP (hybrid leaves). Memory O(W + n): two rows of W + 1 plus
    the leaf table.

Both return the set PyTorch's ``dp_knapsack`` backtracking returns for the same
arithmetic: scanning from the last item, an item is left out whenever the
optimum stays reachable without it.

Precision: ``dp`` keeps float64 rows. ``hirschberg`` keeps float64 rows while
two of them fit in ``F64_ROW_BYTES`` (W + 1 <= 2**24 cells, so every real
torch.compile instance, whose W <= 10,000) and float32 rows, PyTorch's own
precision, above that. Sums of integer runtimes are exact in float64 up to
2**53 and in float32 up to 2**24. ``Solution.value`` is always re-summed in
float64 from the chosen items.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from . import _dense
from ._memory import check_memory
from ._validate import Items

__all__ = ["solve_dp", "solve_hirschberg", "dp_bytes", "hirschberg_bytes"]

#: Largest bit table a Hirschberg leaf may use before it splits instead.
LEAF_BYTES = 16 << 20
#: Two float64 rows are kept up to this size; above it the rows are float32.
F64_ROW_BYTES = 2 * 8 * (1 << 24)
#: Threads for the two halves of a split.
THREADS = max(1, min(2, os.cpu_count() or 1))

_ITEM_BYTES = 64  # per-item arrays: weights, values, prefix sums, layout, selection


def dp_bytes(items: Items) -> int:
    """Bytes ``dp`` allocates: the bit table, one float64 row, per-item arrays."""
    c = int(items.capacity)
    bits = _dense.leaf_bits(items.weights, c) if items.weights.size else 0
    return bits // 8 + 8 * (c + 1) + _ITEM_BYTES * items.weights.size


def _row_dtype(c: int) -> type:
    return np.float64 if 2 * 8 * (c + 1) <= F64_ROW_BYTES else np.float32


def hirschberg_bytes(items: Items, leaf_bytes: int = LEAF_BYTES) -> int:
    """Bytes ``hirschberg`` allocates: two rows, at most one leaf table, per-item arrays.

    A tie across a split adds one uint64 key row; that is checked when it happens.
    """
    c = int(items.capacity)
    n = items.weights.size
    rows = 2 * np.dtype(_row_dtype(c)).itemsize * (c + 1)
    leaf = min(leaf_bytes, _dense.leaf_bits(items.weights, c) // 8 if n else 0)
    return rows + leaf + _ITEM_BYTES * n


def solve_dp(items: Items, memory_limit: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Full bit-table DP. Returns the chosen positions in ``items`` and stats."""
    need = dp_bytes(items)
    check_memory("dp", need, memory_limit, f"capacity {items.capacity}, {items.weights.size} items")
    sel = np.zeros(items.weights.size, dtype=np.uint8)
    c = int(items.capacity)
    if items.weights.size:
        row = np.empty(c + 1, dtype=np.float64)
        _dense.leaf(items.weights, items.values, c, row, sel)
    return np.flatnonzero(sel), {"peak_bytes": need, "dtype": "float64"}


def solve_hirschberg(
    items: Items,
    memory_limit: int | None = None,
    *,
    leaf_bytes: int = LEAF_BYTES,
    threads: int = THREADS,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Two-row Hirschberg DP. Returns the chosen positions in ``items`` and stats."""
    c = int(items.capacity)
    n = items.weights.size
    need = hirschberg_bytes(items, leaf_bytes)
    check_memory("hirschberg", need, memory_limit, f"capacity {c}, {n} items")
    sel = np.zeros(n, dtype=np.uint8)
    dtype = _row_dtype(c)
    stats: dict[str, Any] = {"dtype": np.dtype(dtype).name}
    peak = need
    if n:
        A = np.empty(c + 1, dtype=dtype)
        B = np.empty(c + 1, dtype=dtype)

        def key_row(size: int) -> np.ndarray:
            nonlocal peak
            extra = 8 * size
            check_memory("hirschberg", need + extra, memory_limit, "key row for a tie across a split")
            peak = max(peak, need + extra)
            return np.empty(size, dtype=np.uint64)

        stats.update(_dense.hirschberg(items.weights, items.values, c, A, B, sel, 8 * leaf_bytes, threads, key_row))
    stats["peak_bytes"] = peak
    return np.flatnonzero(sel), stats
