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

from typing import Any

import numpy as np

from ._validate import Items, excess_weight

__all__ = ["solve_ilp", "milp_select"]


def milp_select(weights: np.ndarray, values: np.ndarray, capacity: float, *, exact: bool = True) -> np.ndarray:
    """Boolean mask of an optimal selection; ``exact=False`` is PyTorch's call."""
    try:
        from scipy.optimize import Bounds, LinearConstraint, milp
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "solver 'ilp' needs SciPy: pip install 'remat-knapsack[ilp]'"
        ) from None
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=bool)
    options = {"mip_rel_gap": 0.0, "presolve": True} if exact else {}
    res = milp(
        c=-np.asarray(values, dtype=np.float64),
        constraints=[LinearConstraint(np.asarray(weights, dtype=np.float64)[None, :], ub=capacity)],
        integrality=np.ones(n),
        bounds=Bounds(0, 1),
        options=options,
    )
    if res.x is None:
        raise RuntimeError(f"SciPy milp failed: {res.message}")
    return np.asarray(res.x) > 0.5


def solve_ilp(items: Items, memory_limit: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """HiGHS with a zero MIP gap; returns chosen positions and stats.

    Integer weights cannot leak past an integer capacity through HiGHS's 1e-7
    feasibility tolerance. Real weights (``scale=None``) can: a set a few ulps
    over the budget may come back. The selection is then checked exactly and,
    if it is over, solved again with the capacity lowered by twice the excess,
    so the plan never exceeds the budget (a set within that margin of the
    budget can be missed).
    """
    capacity = float(items.capacity)
    for attempt in range(8):
        chosen = np.flatnonzero(milp_select(items.weights, items.values, capacity))
        excess = excess_weight(items.weights[chosen], items.capacity)
        if excess <= 0:
            return chosen, {"peak_bytes": None, "ilp_attempts": attempt + 1}  # HiGHS allocates out of our sight
        capacity -= 2 * max(excess, 1e-7 * max(1.0, abs(capacity)))
    raise RuntimeError("SciPy milp kept returning a selection over the capacity")

