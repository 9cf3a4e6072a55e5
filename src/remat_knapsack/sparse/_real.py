"""``scale=None`` for ``sparse``: exact canonical sets on float64 weights.

See "Exactness" in :mod:`remat_knapsack.sparse._solver`. ``run(w, v, c, integral, tol,
max_states, detail)`` is the integer kernel's entry point (``sparse._run``):
weights whose sums are exact in float64, returns (chosen positions, stats).

Routes, in order:

1. Few distinct (weight, value) pairs (the shape of real graphs): the
   grouped solver (:mod:`remat_knapsack.sparse._types`) on the exact grid integers.
2. Sums below 2**52 on the grid: the kernel on the grid integers (exact).
3. Otherwise the kernel's relaxation (shift s); its set, when it fits
   exactly, is the canonical set.
4. A relaxation set over the exact budget: ``_reduced`` (a restriction's
   exactly feasible set as lower bound, a Lagrangian reduction, the free
   items solved exactly on their grid), else ``_exact_canonical``.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from .._common._fsum import fsum
from .._common._grid import floor_grid as _floor_grid
from .._common._grid import grid_exponent as _grid_exponent
from .._common._grid import pareto_step
from .._common._validate import excess_weight
from ._states import STATE_BYTES, state_error
from ._types import MAX_STATES, solve_grouped, solve_items

__all__ = ["solve_real"]

#: The reduction's margin, as a share of the value total (float rounding of
#: the Lagrangian bound and reduced profits is ~1e-16 of it).
_REDUCE_SLACK = 1e-9
#: At most this many items left free by the reduction go to the exact
#: grouped solver; beyond, the item-by-item fallback.
_MAX_FREE = 2048
#: Bytes a Python-integer Pareto state of ``_exact_canonical`` costs (two
#: list slots, an int and a float object), against the kernel's state budget.
_PY_STATE_BYTES = 96


def solve_real(w, v, c, integral, tol, max_states, detail, run):
    """Exact canonical set for float64 (``scale=None``) weights; see "Exactness"."""
    n = w.size
    e = _grid_exponent(w)  # g_i = w_i / 2**e are integers
    # Few distinct (weight, value) pairs: one type per pair, exact on the grid.
    grouped = solve_items(w, v, c, e, integral, tol, max_states, STATE_BYTES)
    if grouped is not None:
        return grouped
    # fsum is correctly rounded, so sum(w) < 2**top and sum(g) < 2**(top - e).
    try:
        top = math.frexp(fsum(w))[1]
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
    reduced = _reduced(w, v, c, e, s, integral, tol, max_states, detail, run)
    if reduced is not None:
        chosen, stats["reduced_free"] = reduced
        return chosen, stats
    g = [_floor_grid(y, e) for y in w.tolist()]  # exact: every g_i is an integer
    return _exact_canonical(g, v.tolist(), _floor_grid(c, e), tol, max_states, detail), stats


def _reduced(w, v, c, e, s, integral, tol, max_states, detail, run):
    """The canonical set when the relaxation's set is over the exact budget:
    items fixed by a reduction, the rest (near the break) solved exactly by
    the grouped solver with one type per item. (chosen, free count) or None
    when too many items stay free.

    * A lower bound: the *restriction* (weights ceil(g_i / 2**s), capacity
      floor(C / 2**s)) admits only exactly feasible sets (sum g_i <= 2**s
      sum ceil(g_i / 2**s) <= 2**s floor(C / 2**s) <= C), so its optimum LB
      is the value of an exactly feasible set: OPT >= LB.
    * With lam the efficiency of the break item (items by efficiency, the
      first whose prefix weight exceeds c) and d_i = v_i - lam w_i, every
      set S within c has v(S) <= lam c + sum_{i in S} d_i <= UL - [d_i > 0,
      i not in S] d_i - [d_i < 0, i in S] |d_i|, with UL = lam c + sum of
      the positive d_i. So an item with d_i > UL - LB + tol is in every set
      of value >= LB - tol >= OPT - tol, and one with d_i < -(UL - LB + tol)
      in none (a margin covers the float rounding of UL and d_i).
    * dp_knapsack's scan only ever accepts a witness of value >= OPT - tol
      (it completes the kept items to the optimum), so it keeps every item
      fixed in and leaves out every item fixed out, and on the free items it
      is the scan of the reduced problem: capacity C minus the exact grid
      weight of the fixed-in items, the same values. That problem is solved
      exactly (two-limb integer weights) by ``_types.solve_grouped``.
    """
    n = w.size
    ac = np.ceil(np.ldexp(w, -e - s))
    low, _ = run(ac, v, float(min(_floor_grid(c, e + s), int(ac.sum()))), integral, tol, max_states, detail)
    if excess_weight(w[low], c) > 0:  # cannot happen (see above); stay safe
        return None
    lb = fsum(v[low])
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # subnormal weights
        eff = v / w
        order = np.argsort(-eff, kind="stable")
        brk = int(np.searchsorted(np.cumsum(w[order]), c, side="right"))
        if brk >= n:
            return None
        lam = float(eff[order[brk]])
        d = v - lam * w
        ul = lam * c + fsum(d[d > 0]) if np.all(np.isfinite(d)) else math.inf
    gap = ul - lb + tol + _REDUCE_SLACK * fsum(v)
    if not math.isfinite(gap):
        return None  # bounds beyond float64: the exact fallback
    fixed_in = np.flatnonzero(d > gap)
    free = np.flatnonzero(np.abs(d) <= gap)
    if free.size > _MAX_FREE:
        return None
    cap = _floor_grid(c, e) - sum(_floor_grid(x, e) for x in w[fixed_in].tolist())
    if cap < 0:
        return None
    G = [_floor_grid(x, e) for x in w[free].tolist()]
    sub = _grid_canonical(G, v[free], cap, integral, tol, max_states, detail, run)
    if sub is None:
        return None
    return np.sort(np.concatenate((fixed_in, free[sub]))), int(free.size)


def _grid_canonical(G, v, cap, integral, tol, max_states, detail, run):
    """The canonical set of items with exact integer weights ``G`` (a few:
    Python ints of any size) and capacity ``cap``, or None. As
    ``solve_real``: the kernel itself when the sums fit 2**52, else its
    relaxation (weights floor(G / 2**s) + 1, capacity floor(cap / 2**s) +
    k), whose set is the canonical one when it fits exactly; else the
    grouped solver, one type per item (exact, two-limb weights)."""
    k = len(G)
    s = max(0, sum(G).bit_length() - 52)
    if s == 0:
        chosen, _ = run(np.array(G, dtype=np.float64), v, float(min(cap, sum(G))), integral, tol, max_states, detail)
        return chosen
    a = np.array([(x >> s) + 1 for x in G], dtype=np.float64)
    chosen, _ = run(a, v, float(min((cap >> s) + k, int(a.sum()))), integral, tol, max_states, detail)
    if sum(G[i] for i in chosen.tolist()) <= cap:
        return chosen
    budget = max(1, min(MAX_STATES, max_states * STATE_BYTES // 64))
    res = solve_grouped(np.arange(k), G, v.tolist(), cap, integral, tol, budget)
    return None if res is None else res[0]


def _exact_canonical(g, v, cap, tol, max_states, detail):
    """dp_knapsack's canonical set in exact integer weights: the Pareto
    frontier of every prefix, then its backtrack from the last item. Used only
    when the relaxation's set is over the exact budget (a set within about
    n * 2**-52 of the budget), which takes a crafted instance."""
    limit = max(1, max_states * STATE_BYTES // _PY_STATE_BYTES)  # Python objects are larger
    fronts: list[tuple[list[int], list[float]]] = [([0], [0.0])]
    kept = 1
    for gi, vi in zip(g, v):
        nW, nP = pareto_step(*fronts[-1], gi, vi, cap)
        kept += len(nW)
        if kept > limit:
            raise state_error(len(g), max_states, detail + ", exact real-weight frontiers outgrew the limit")
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
