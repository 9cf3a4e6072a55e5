"""Integer runtimes beyond float64's exact sums: the canonical set in exact integers.

Runtimes that are integers (FLOP counts) are compared exactly by the float64
kernels as long as their sums are (``_values.value_grid``: integers on a common
power-of-two grid whose total is below 2**53). Beyond that (odd counts whose
total passes 2**53, counts up to 2**62) a float64 subset sum is rounded, and
two sets a few units apart compare as ties, or the wrong way round. There the
solvers' float64 answer is only the start: :func:`exact_canonical` takes its
exact value as a lower bound and finds the optimum and dp_knapsack's canonical
set in Python integers.

* **Lower bound.** Z = the exact value of the given feasible set: OPT >= Z.
* **Reduction.** With b the break item (efficiency order, the first that no
  longer fits) and D_i = v_i w_b - v_b w_i (exact: v_b / w_b is the
  multiplier lam, scaled by w_b), every set S within c has
  w_b v(S) <= v_b c + sum over S of D_i <= U - [i not in S, D_i > 0] D_i
  - [i in S, D_i < 0] |D_i|, with U = v_b c + the positive D_i. So an item
  with D_i > U - w_b Z is in every set worth Z or more, one with
  D_i < -(U - w_b Z) in none. Every set dp_knapsack's scan asks about
  completes the kept items to the optimum, so it is worth OPT >= Z: the scan
  keeps the items fixed in, leaves out those fixed out, and on the others is
  the scan of the reduced problem (the capacity less the fixed-in weight).
* **Free items.** The Pareto front of every prefix (index order) of the free
  items, exact integer weights and values, a state (W, P) dropped when even
  the Lagrangian bound of the items after it, w_b P + v_b (c - W) + the
  positive D_i still to come, is below w_b Z. A prefix of an optimal set (or
  a state dominating it) is never dropped, and those are the only states the
  backtrack asks about: scanning from the last item, item k is left out when
  the front of the items before it reaches the target within the capacity
  left, else kept (target and capacity less its value and weight).

Cost: O(n) integer operations for the reduction, and O(states) per free item,
the states (Python lists) counted against the solve's state budget. It runs
only for integer runtimes whose grid total reaches 2**53.

>>> exact_canonical([1, 4, 9], [2**52 + 1, 2**52 + 9, 2**52 + 17], 13, [0, 1], 10**6, "3 items").tolist()
[1, 2]
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from .._common._fsum import fsum
from .._common._grid import grid_exponent, pareto_step
from ._states import STATE_BYTES, state_error

__all__ = ["beyond_exact", "exact_canonical", "integer_values"]

#: Bytes a Python state (two list slots and two int objects) counts for
#: against the kernel's state budget.
_PY_STATE_BYTES = 96


def integer_values(v: np.ndarray) -> bool:
    """Whether every value (finite) is an integer."""
    return bool(v.size) and bool(np.array_equal(v, np.floor(v)))


def beyond_exact(v: np.ndarray) -> bool:
    """Whether the values (finite, > 0) are integers whose float64 sums may
    round: with 2**e the largest power of two dividing them all, the sum of
    v / 2**e reaches 2**53. (``sparse`` itself divides by their greatest
    common divisor first, and asks ``_values.value_grid`` instead.) A
    few vectorised passes; a total below 2**52 settles it at once."""
    if v.size == 0 or float(v.max()) * v.size < 2.0**52 or not integer_values(v):
        return False
    g = np.ldexp(v, -grid_exponent(v))  # exact: integers, divided by a power of two
    return not (float(g.max()) * g.size < 2.0**52 or fsum(g) < 2.0**53)


def exact_canonical(g, values, cap: int, chosen, max_states: int, detail: str) -> np.ndarray:
    """dp_knapsack's canonical set of items with exact integer weights ``g``
    (> 0, Python ints or an int array) and integer ``values`` (> 0; floats
    that are integers, or ints) within the integer capacity ``cap``, given a
    feasible set ``chosen`` (positions), in exact integer arithmetic (module
    docstring). Returns the positions, ascending."""
    g = [int(x) for x in g]
    V = [int(x) for x in values]
    n = len(g)
    chosen = [int(i) for i in chosen]
    if sum(g[i] for i in chosen) > cap:  # not feasible: no lower bound from it
        chosen = []
    z = sum(V[i] for i in chosen)
    # The break item, by efficiency (float keys choose it; any multiplier >= 0 gives a valid bound).
    order = sorted(range(n), key=lambda i: -V[i] / g[i])
    room, brk = cap, -1
    for i in order:
        if g[i] > room:
            brk = i
            break
        room -= g[i]
    if brk < 0:  # everything fits
        return np.arange(n, dtype=np.int64)
    wb, vb = g[brk], V[brk]
    D = [V[i] * wb - vb * g[i] for i in range(n)]
    gap = vb * cap + sum(d for d in D if d > 0) - wb * z  # >= 0: U bounds OPT >= Z
    fixed_in = [i for i in range(n) if D[i] > gap]
    free = [i for i in range(n) if -gap <= D[i] <= gap]
    c = cap - sum(g[i] for i in fixed_in)
    zr = z - sum(V[i] for i in fixed_in)
    if not free:
        return np.array(fixed_in, dtype=np.int64)
    # Positive reduced profits still to come after each free prefix.
    tail = [0] * (len(free) + 1)
    for k in range(len(free) - 1, -1, -1):
        tail[k] = tail[k + 1] + max(0, D[free[k]])
    limit = max(1, max_states * STATE_BYTES // _PY_STATE_BYTES)
    goal = wb * zr
    fronts: list[tuple[list[int], list[int]]] = [([0], [0])]
    kept = 1
    for k, i in enumerate(free):
        W, P = pareto_step(*fronts[-1], g[i], V[i], c)
        rest = tail[k + 1]
        keep = [q for q in range(len(W)) if wb * P[q] + vb * (c - W[q]) + rest >= goal]
        if len(keep) < len(W):
            W, P = [W[q] for q in keep], [P[q] for q in keep]
        kept += len(W)
        if kept > limit:
            raise state_error(n, max_states, detail + ", exact integer-value fronts outgrew the limit")
        fronts.append((W, P))

    def best(k: int, j: int) -> float:
        W, P = fronts[k]
        q = bisect.bisect_right(W, j) - 1
        return P[q] if q >= 0 else -math.inf

    j = c
    target = best(len(free), j)
    out = list(fixed_in)
    for k in range(len(free) - 1, -1, -1):
        if best(k, j) >= target:
            continue  # the optimum stays reachable without this item
        i = free[k]
        out.append(i)
        j -= g[i]
        target -= V[i]
    return np.array(sorted(out), dtype=np.int64)
