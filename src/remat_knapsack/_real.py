"""``scale=None`` for ``sparse``: exact canonical sets on float64 weights.

See "Exactness" in :mod:`remat_knapsack.sparse`. ``run(w, v, c, integral, tol,
max_states, detail)`` is the integer kernel's entry point (``sparse._run``):
weights whose sums are exact in float64, returns (chosen positions, stats).
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from ._grid import floor_grid as _floor_grid
from ._grid import grid_exponent as _grid_exponent
from ._grid import pareto_step
from ._types import solve_items
from ._validate import excess_weight
from .errors import SolverMemoryError

__all__ = ["solve_real"]


def _state_error(n: int, max_states: int, detail: str) -> Exception:
    from .sparse import sparse_bytes

    return SolverMemoryError("sparse", sparse_bytes(n, 2 * max_states), sparse_bytes(n, max_states), detail)


def solve_real(w, v, c, integral, tol, max_states, detail, run):
    """Exact canonical set for float64 (``scale=None``) weights; see "Exactness"."""
    n = w.size
    e = _grid_exponent(w)  # g_i = w_i / 2**e are integers
    # Few distinct (weight, value) pairs: one type per pair, exact on the grid.
    from .sparse import STATE_BYTES

    grouped = solve_items(w, v, c, e, integral, tol, max_states, STATE_BYTES, run)
    if grouped is not None:
        return grouped
    # fsum is correctly rounded, so sum(w) < 2**top and sum(g) < 2**(top - e).
    try:
        top = math.frexp(math.fsum(w.tolist()))[1]
    except OverflowError:  # every w_i < 2**1024
        top = 1024 + n.bit_length()
    s = max(0, top - e - 52)
    # floor(g_i / 2**s): ldexp by a power of two is exact unless the result is
    # subnormal, and then it is below 1 either way.
    a = np.floor(np.ldexp(w, -e - s))
    cap = min(_floor_grid(c, e + s), int(a.sum()))  # floor(floor(c / 2**e) / 2**s)
    if s == 0:
        # sum(g) < 2**52: the kernel's float64 arithmetic on the g_i is exact,
        # this is the problem itself.
        chosen, stats = run(a, v, float(cap), integral, tol, max_states, detail)
        stats["grid_shift"] = 0
        return chosen, stats
    # Relaxation: weights floor(g_i / 2**s) + 1 (>= 1), capacity
    # floor(floor(c / 2**e) / 2**s) + n. An exactly feasible set has
    # sum floor(g_i / 2**s) <= floor(sum(g_i) / 2**s) <= that floor and at
    # most n items, so it fits the relaxation too. All sums stay below 2**53.
    chosen, stats = run(a + 1.0, v, float(cap + n), integral, tol, max_states, detail)
    stats["grid_shift"] = s
    if excess_weight(w[chosen], c) <= 0:
        # The relaxation's canonical set fits exactly: it is the canonical set.
        return chosen, stats
    stats["exact_fallback"] = True
    g = [_floor_grid(y, e) for y in w.tolist()]  # exact: every g_i is an integer
    return _exact_canonical(g, v.tolist(), _floor_grid(c, e), tol, max_states, detail), stats


def _exact_canonical(g, v, cap, tol, max_states, detail):
    """dp_knapsack's canonical set in exact integer weights: the Pareto
    frontier of every prefix, then its backtrack from the last item. Used only
    when the relaxation's set is over the exact budget (a set within about
    n * 2**-52 of the budget), which takes a crafted instance."""
    fronts: list[tuple[list[int], list[float]]] = [([0], [0.0])]
    kept = 1
    for gi, vi in zip(g, v):
        nW, nP = pareto_step(*fronts[-1], gi, vi, cap)
        kept += len(nW)
        if kept > max_states:
            raise _state_error(len(g), max_states, detail + ", exact real-weight frontiers outgrew the limit")
        fronts.append((nW, nP))

    def best(k: int, j: int) -> float:
        W, P = fronts[k]
        return P[bisect.bisect_right(W, j) - 1]

    j = cap
    target = best(len(g), j)
    chosen = []
    for k in range(len(g) - 1, -1, -1):
        if best(k, j) >= target - tol:
            continue  # the optimum stays reachable without item k
        chosen.append(k)
        j -= g[k]
        target -= v[k]
    return np.array(sorted(chosen), dtype=np.int64)
