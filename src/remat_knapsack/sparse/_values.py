"""The sparse solver's values on their exact grid, and the tie tolerance of
values off it.

Private; ``_solver.solve_sparse`` and ``_run`` use these (see "Values" in
:mod:`remat_knapsack.sparse._solver`). A runtime vector whose values are
integers on a common power-of-two grid with an integer sum below 2**53 is
solved exactly (``value_grid``: the grid integers, divided by their greatest
common divisor); others compare within ``value_tolerance`` of their total.

>>> value_grid(np.array([0.5, 1.5, 2.0]))
(array([1., 3., 4.]), True)
"""

from __future__ import annotations

import math

import numpy as np

from .._common._fsum import fsum
from .._common._grid import grid_exponent
from . import _sparse

__all__ = ["EXACT", "VALUE_TOL", "divide_gcd", "value_grid", "value_tolerance"]

#: Largest total weight whose sums are exact in float64.
EXACT = float(1 << 53)
#: Values not exact on their power-of-two grid (see ``value_grid``) are
#: compared with this tolerance relative to their total: closer values tie.
VALUE_TOL = 1e-12


def value_grid(v: np.ndarray) -> tuple[np.ndarray, bool]:
    """Values as integers on their common power-of-two grid, when that is exact.

    Every float64 is m * 2**e; with e0 the largest exponent shared by all
    values (``grid_exponent``), G_i = v_i / 2**e0 are integers, and scaling
    by a power of two changes no comparison between subset sums. If
    sum(G) < 2**53 every subset sum of the G_i is an integer below 2**53, so
    the kernel's float64 sums and comparisons on them are exact: returns
    (G, True). Otherwise returns (v, False) and the kernel compares values
    with the tolerance ``VALUE_TOL`` of their total.
    """
    if v.size == 0:
        return v, True
    if _sparse.integers_below(v, EXACT):
        g = divide_gcd(v)  # integers already; the gcd takes any common power of two
        return (g, True) if _total_below_exact(g) else (v, False)
    if np.array_equal(v, np.floor(v)):
        g = _divide_big_gcd(v)  # FLOP counts past 2**53 often share a large factor
        if g is not None and _total_below_exact(g):
            return g, True
    with np.errstate(over="ignore"):  # a grid too fine for float64: not exact
        g = np.ldexp(v, -grid_exponent(v))  # exact, or inf on overflow
    if np.all(np.isfinite(g)) and _total_below_exact(g):
        return divide_gcd(g), True
    return v, False


def _total_below_exact(g: np.ndarray) -> bool:
    """Whether the sum of ``g`` (finite, >= 0) is below 2**53: n * max(g)
    settles it when that is below 2**52 (its float64 rounding is far less
    than the margin), else the correctly rounded sum decides."""
    return float(g.max()) * g.size < 2.0**52 or fsum(g) < EXACT


def divide_gcd(g: np.ndarray) -> np.ndarray:
    """Integers below 2**53 divided by their greatest common divisor.

    Divisibility (Martello, Pisinger and Toth 1999): when every value is a
    multiple of d (profit ceiling items, v = d ceil(w / d)), a better set is
    worth at least d more, and on the divided values the kernel's integer
    rounding of its bounds sees that. Weights likewise: every subset sum is a
    multiple of d, so the capacity can drop to a multiple of d. Exact: the
    quotients are integers and float64 holds them.
    """
    if g.size == 0:
        return g
    d = _sparse.gcd_of(np.ascontiguousarray(g, dtype=np.float64))
    return g / d if d > 1 else g


def _divide_big_gcd(v: np.ndarray) -> np.ndarray | None:
    """Integers, some at or above 2**53, divided by their greatest common
    divisor in Python integers (float64 holds each value exactly, but
    ``_sparse.gcd_of`` only integers below 2**53), or None when the gcd is 1.
    Works on the distinct values: a real graph repeats a few shapes.
    """
    distinct, where = np.unique(v, return_inverse=True)
    ints = [int(x) for x in distinct.tolist()]
    d = 0
    for x in ints:
        d = math.gcd(d, x)
        if d == 1:
            return None
    if d <= 1:
        return None
    return np.array([x // d for x in ints], dtype=np.float64)[where.reshape(-1)]


def value_tolerance(v: np.ndarray) -> float:
    """Values closer than this compare as ties (values off their grid).

    Any float64 sum of a subset, in any order, is within (n - 1) 2**-53
    sum(v) of the exact sum, so two such sums of the same set differ by less
    than n 2**-52 sum(v): that much covers the kernel's rounding, and less
    would let a rounding error hide a reachable value. Capped at
    ``VALUE_TOL`` of the total (beyond about 4,500 items the worst case is
    larger than what rounding ever reaches in practice).
    """
    return min(VALUE_TOL, v.size * 2.0**-52) * float(v.sum())
