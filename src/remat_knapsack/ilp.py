"""Exact 0/1 knapsack as a mixed-integer program, solved by SciPy's HiGHS.

PyTorch's ``ilp_knapsack`` calls :func:`scipy.optimize.milp` with its default
tolerances (a relative MIP gap of 1e-4), so it stops early: 4157063 instead of
4157069 on an uncorrelated n=1000 instance. Here the gap is set to zero and the
weights are the quantised integers, so the value is the optimum.

The set returned is *an* optimal set: HiGHS breaks ties its own way, not by
dp_knapsack's lowest-index rule. Time: exponential in the worst case
(branch and bound), fast in practice. Needs the ``ilp`` extra (SciPy).

>>> from remat_knapsack import solve
>>> solve([0.2, 0.3, 0.5], [2.0, 3.0, 4.0], 0.5, solver="ilp").value
5.0

Reference: Q. Huangfu and J. A. J. Hall, "Parallelizing the dual revised simplex
method", Math. Prog. Comp. 10, 2018 (HiGHS).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._common._grid import floor_grid, grid_exponent, grid_integers
from ._common._validate import Items

__all__ = ["solve_ilp", "milp_select"]

#: Solves (each excluding one more set found over the budget) before the plan
#: is trimmed instead.
_ATTEMPTS = 32


def milp_select(
    weights: np.ndarray, values: np.ndarray, capacity: float, *, exact: bool = True, cuts: Sequence[np.ndarray] = ()
) -> np.ndarray:
    """Boolean mask of an optimal selection; ``exact=False`` is PyTorch's call.
    Each of ``cuts`` (a set of positions) is excluded: at most len - 1 of it.
    HiGHS prints nothing (``disp=False``)."""
    try:
        from scipy.optimize import Bounds, LinearConstraint, milp
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "solver 'ilp' needs SciPy: pip install 'remat-knapsack[ilp]'"
        ) from None
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=bool)
    options: dict[str, Any] = {"disp": False}
    if exact:
        options.update(mip_rel_gap=0.0, presolve=True)
    constraints = [LinearConstraint(np.asarray(weights, dtype=np.float64)[None, :], ub=capacity)]
    for cut in cuts:
        row = np.zeros((1, n))
        row[0, cut] = 1.0
        constraints.append(LinearConstraint(row, ub=cut.size - 1))
    res = milp(
        c=-np.asarray(values, dtype=np.float64),
        constraints=constraints,
        integrality=np.ones(n),
        bounds=Bounds(0, 1),
        options=options,
    )
    if res.x is None:
        raise RuntimeError(f"SciPy milp failed: {res.message}")
    return np.asarray(res.x) > 0.5


def solve_ilp(items: Items, memory_limit: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """HiGHS with a zero MIP gap on a well-scaled model; returns chosen positions and stats.

    HiGHS sees the weights and the capacity divided by a power of two that
    brings the largest weight near 1, and the runtimes likewise (exact
    rescalings: tiny or subnormal runtimes keep their value). Feasibility is
    then checked exactly, in integers (quantised weights, or ``scale=None``
    weights on their 2**e grid). HiGHS's 1e-7 feasibility tolerance, and
    matrix entries it drops as tiny (below 1e-9 of the largest), can let a set
    slightly over the budget through: that set, and only it, is then excluded
    by a cut (at most |S| - 1 of its items) and the model solved again, so
    no feasible set is lost. After ``_ATTEMPTS`` solves (many sets within
    HiGHS's tolerance above the budget: weights spanning more than 1e9) the
    last plan is trimmed (lowest runtime per memory first) until it fits and
    ``stats["ilp_trimmed"]`` is set. So the plan never exceeds the budget;
    its value is optimal up to HiGHS's tolerances unless trimmed.
    """
    w, cap = items.weights, items.capacity
    if w.dtype.kind in "iu":
        g: Any = w
        C = int(cap)
    else:
        e = grid_exponent(w)
        g = grid_integers(w, e)
        C = floor_grid(float(cap), e)
    gf = np.asarray(g, dtype=np.float64) if isinstance(g, np.ndarray) else np.array([float(x) for x in g])
    k = math.frexp(float(gf.max()))[1] if gf.size else 0
    wf = np.ldexp(gf, -k)  # largest weight in [0.5, 1)
    vf = np.ldexp(items.values, -math.frexp(float(items.values.max()))[1]) if items.values.size else items.values
    capacity = math.ldexp(float(C), -k)
    cuts: list[np.ndarray] = []
    for attempt in range(_ATTEMPTS):
        chosen = np.flatnonzero(milp_select(wf, vf, capacity, cuts=cuts))
        if _excess(g, chosen, C) <= 0:
            return chosen, {"peak_bytes": None, "ilp_attempts": attempt + 1}  # HiGHS allocates out of our sight
        cuts.append(chosen)  # over the budget exactly: exclude this set, and only it
    return _trim(g, items.values, gf, chosen, C), {"peak_bytes": None, "ilp_attempts": _ATTEMPTS, "ilp_trimmed": True}


def _excess(g: Any, chosen: np.ndarray, C: int) -> int:
    """Exact sum of the chosen grid weights minus the capacity."""
    if isinstance(g, np.ndarray) and g.dtype.kind in "iu":
        return int(g[chosen].sum()) - C
    return sum(int(g[i]) for i in chosen.tolist()) - C


def _trim(g: Any, values: np.ndarray, gf: np.ndarray, chosen: np.ndarray, C: int) -> np.ndarray:
    """Drop chosen items, lowest runtime per weight first, until the rest fits."""
    keep = chosen.tolist()
    order = sorted(keep, key=lambda i: (values[i] / gf[i], i))
    over = _excess(g, chosen, C)
    for i in order:
        if over <= 0:
            break
        keep.remove(i)
        over -= int(g[i])
    return np.asarray(sorted(keep), dtype=np.int64)
