"""``math.fsum`` of a float64 array without building a Python list.

The exact sum comes from ``_exact_sum`` (a fixed-point accumulator over the
whole float64 range, one pass in C) as an integer multiple of 2**-1074, and is
rounded once: an int divided by a power of two is correctly rounded (half to
even), as ``math.fsum`` is. O(n) time, O(1) extra memory. Arrays with inf or
nan take ``math.fsum``'s own rules; a total beyond float64 raises
OverflowError, as ``math.fsum`` does. One difference: ``math.fsum`` also
raises when only a partial sum overflows (``[M, M, -M]`` for the largest
double M), where this returns the correctly rounded total, M. The solvers'
sums (memory >= 0, runtimes summing below 2**960) never come near it.

>>> fsum(np.array([0.1] * 10)), sum([0.1] * 10)
(1.0, 0.9999999999999999)
"""

from __future__ import annotations

import math

import numpy as np

from ._exact_sum import MAX_ITEMS, exact_sum

__all__ = ["fsum"]

_TINY = -1074  # every float64 is an integer multiple of 2**-1074


def fsum(x: np.ndarray, mask: np.ndarray | None = None) -> float:
    """The correctly rounded sum of a 1-d float64 array, equal to
    ``math.fsum(x.tolist())`` (the sign of a zero included) whenever that
    does not overflow. With ``mask`` (bool, as long as x): the sum of
    ``x[mask]``, without gathering it.

    >>> fsum(np.array([1e100, 1.0, -1e100, 2.0**-1074]))
    1.0
    >>> fsum(np.array([0.1, 5.0, 0.2]), np.array([True, False, True]))
    0.30000000000000004
    """
    flags = None if mask is None else np.ascontiguousarray(mask, dtype=bool).view(np.uint8)
    total = exact_sum(np.ascontiguousarray(x, dtype=np.float64), flags) if x.size < MAX_ITEMS else None
    if total:  # the common case: finite and not zero
        return total / (1 << -_TINY)
    if mask is not None:  # the rare cases below read the items summed
        x = x[mask]
    if total is None:  # inf, nan (or more items than the accumulator takes): math.fsum's rules
        return math.fsum(x.tolist())
    # a zero's sign: what math.fsum gives when every item is -0.0
    return math.fsum([-0.0]) if x.size and bool(np.signbit(x).all()) else 0.0
