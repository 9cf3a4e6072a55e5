"""``math.fsum`` of a float64 array without building a Python list.

Error-free extraction (as in Rump, Ogita & Oishi's AccSum, SIAM J. Sci.
Comput. 2008): with 2**e above every |x_i| and a grid 2**k, k = e - width,
``q_i = rint(x_i / 2**k)`` are integers of at most ``width`` bits, so their
float64 sum is exact while n 2**width < 2**52, and ``x_i - q_i 2**k`` is exact
and at most 2**(k-1) in size. Repeating on those remainders drops ``width``
bits a level until they are all zero; every float64 is a multiple of 2**-1074,
so a grid of 2**-1074 ends it. The levels' sums, added as Python integers,
give the exact total, rounded once: an int divided by a power of two is
correctly rounded (half to even), as ``math.fsum`` is.

O(n) numpy work a level, and a level per ``width`` (about 38 at n = 10^4) bits
between the largest item and the finest bit of any: one or two levels for
runtimes of a few digits, at most 56. Memory O(n).

>>> fsum(np.array([0.1] * 10)), sum([0.1] * 10)
(1.0, 0.9999999999999999)
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["fsum"]

_TINY = -1074  # every float64 is an integer multiple of 2**-1074
_TOP = 1023  # items of 2**1023 or more: a level could round up to 2**1024 (inf)
#: Levels beyond which math.fsum on a list is cheaper.
_MAX_LEVELS = 12


def fsum(x: np.ndarray) -> float:
    """The correctly rounded sum of a 1-d float64 array, equal to
    ``math.fsum(x.tolist())`` (the sign of a zero included).

    >>> fsum(np.array([1e100, 1.0, -1e100, 2.0**-1074]))
    1.0
    """
    n = x.size
    top = float(np.abs(x).max()) if n else 0.0
    if not (math.isfinite(top) and top < 2.0**_TOP):
        return math.fsum(x.tolist())  # inf, nan, overflow: its own rules
    width = 52 - n.bit_length()  # n 2**width < 2**52: each level's float sum is exact
    if top < 2.0**width and np.array_equal(np.rint(x), x):
        # integers of at most ``width`` bits (FLOP counts): their float sum
        # is exact in any order, so it is the level below in one pass
        exact = float(x.sum())
        if exact:
            return exact
    total, rest = 0, x
    for _ in range(_MAX_LEVELS):
        if not top:
            break
        k = max(math.frexp(top)[1] - width, _TINY)  # top < 2**(k + width)
        q = np.rint(np.ldexp(rest, -k))
        total += int(q.sum()) << (k - _TINY)
        rest = rest - np.ldexp(q, k)
        top = float(np.abs(rest).max())
    else:
        if top:
            return math.fsum(x.tolist())
    if total == 0:  # a zero's sign: what math.fsum gives when every item is -0.0
        return math.fsum([-0.0]) if n and bool(np.signbit(x).all()) else 0.0
    return total / (1 << -_TINY)
