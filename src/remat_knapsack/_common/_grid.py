"""Float64 weights as exact integers on a power-of-two grid.

Every finite float64 is m * 2**e with an integer m, so with e0 the smallest
such exponent over a set of weights (:func:`grid_exponent`), g_i = w_i / 2**e0
are integers, every subset sum is a multiple of 2**e0, and ``sum <= c`` holds
exactly when ``sum(g) <= floor(c / 2**e0)`` (:func:`floor_grid`).

>>> e = grid_exponent(np.array([0.5, 0.75]))
>>> e, floor_grid(1.3, e)
(-2, 5)
"""

from __future__ import annotations

import math

import numpy as np

from ._fsum import fsum

__all__ = ["grid_exponent", "floor_grid", "grid_integers", "pareto_step"]

#: Grid sums below this are exact in int64 (with room for one more weight).
INT64_SAFE = 1 << 62


def grid_exponent(w: np.ndarray) -> int:
    """The largest e with every non-zero weight an integer multiple of 2**e (0 if none)."""
    w = w[w != 0]
    if w.size == 0:
        return 0
    frac, exp = np.frexp(w)  # w = frac * 2**exp, 0.5 <= frac < 1
    mant = np.ldexp(frac, 53).astype(np.int64)  # w = mant * 2**(exp - 53), mant exact
    low = np.frexp((mant & -mant).astype(np.float64))[1] - 1  # trailing zero bits of mant
    return int((exp - 53 + low).min())


def floor_grid(x: float, e: int) -> int:
    """floor(x / 2**e), exactly, for a finite x."""
    num, den = float(x).as_integer_ratio()
    return (num << -e) // den if e <= 0 else num // (den << e)


def grid_integers(w: np.ndarray, e: int) -> np.ndarray | list[int]:
    """w / 2**e exactly: an int64 array when the total fits below 2**62, else
    a list of Python ints."""
    try:
        top = math.frexp(fsum(w))[1] if w.size else 0  # sum(w) < 2**top
    except OverflowError:  # the sum is beyond float64
        top = 1 << 20
    if top - e <= 61:
        return np.ldexp(w, -e).astype(np.int64)  # integers below 2**61: exact
    return [floor_grid(x, e) for x in w.tolist()]


def pareto_step(W: list[int], P: list[float], g: int, v: float, cap: int) -> tuple[list[int], list[float]]:
    """One item (integer weight g, value v) merged into a Pareto front, on
    Python integers (exact at any size; the kernels' fallback).

    ``W`` ascending with ``P`` strictly ascending; the result keeps the states
    without the item and with it (up to ``cap``) that no lighter state beats.
    On equal weight the larger value wins, and a tie goes to the state without
    the item, as in the kernels. O(len(W)).

    >>> pareto_step([0, 2], [0.0, 3.0], 1, 2.0, 3)
    ([0, 1, 2, 3], [0.0, 2.0, 3.0, 5.0])
    """
    nW: list[int] = []
    nP: list[float] = []
    ia = ib = 0
    m = len(W)
    maxp = -math.inf
    while True:
        b_ok = ib < m and W[ib] + g <= cap
        if ia < m and (not b_ok or W[ia] < W[ib] + g or (W[ia] == W[ib] + g and P[ia] >= P[ib] + v)):
            wx, px = W[ia], P[ia]
            ia += 1
        elif b_ok:
            wx, px = W[ib] + g, P[ib] + v
            ib += 1
        else:
            break
        if px > maxp:
            maxp = px
            nW.append(wx)
            nP.append(px)
    return nW, nP
