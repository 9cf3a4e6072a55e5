# cython: language_level=3
"""The exact sum of finite float64 values, as an integer multiple of 2**-1074.

Private; ``remat_knapsack._common._fsum`` rounds it. A fixed-point accumulator wide
enough for every finite double (Kulisch's long accumulator; the carry-save
layout of Neal, "Fast exact summation using small and large
superaccumulators", 2015): each value is m 2**(p - 1074) with an integer
mantissa m < 2**53 and p in [0, 2045], and its bits are added, unnormalised,
into signed 64-bit limbs of 32 bits each. A limb gains less than 2**33 an
item, so 2**30 items cannot overflow it; the limbs become one Python integer
at the end. O(n), a few operations an item, no allocation but the limbs.

Integers first: when every item is an integer and every running sum stays
below 2**53 in magnitude, float64 adds them exactly, so one plain loop
(``_integer_sum``, branch-free) gives the sum of integer runtimes (FLOP
counts) at about half the cost of the limbs; when an item or a running sum
breaks that, the limbs sum the items again.
"""

from libc.math cimport fabs
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcpy, memset

cdef enum:
    LIMB_BITS = 32
    LIMBS = 68  # 2045 + 53 bits, one limb more for the last carry, rounded up
    EXP_INF_NAN = 0x7FF  # the exponent field of inf and nan

cdef uint64_t LOW32 = (<uint64_t>1 << 32) - 1
#: Integers of smaller magnitude, and their sums, are exact in float64.
cdef double EXACT_INTEGERS = 9007199254740992.0  # 2**53

#: Items the limbs can take without overflow (each adds < 2**33 to a limb).
MAX_ITEMS = 1 << 30


cdef inline bint _add(int64_t* limb, double x) noexcept nogil:
    """Add the double x into the limbs; False (nothing added) if it is inf or nan."""
    cdef uint64_t u, m, lo, hi
    cdef int64_t sign
    cdef Py_ssize_t p, i, r
    memcpy(&u, &x, 8)
    p = <Py_ssize_t>((u >> 52) & 0x7FF)
    if p == EXP_INF_NAN:
        return False
    m = u & ((<uint64_t>1 << 52) - 1)
    if p == 0:  # subnormal (or zero): m 2**-1074
        p = 1
    else:
        m |= <uint64_t>1 << 52
    p -= 1  # x = m 2**(p - 1074)
    i = p >> 5
    r = p & 31
    lo = (m & LOW32) << r  # < 2**63
    hi = (m >> 32) << r  # < 2**52
    sign = -1 if u >> 63 else 1
    limb[i] += sign * <int64_t>(lo & LOW32)
    limb[i + 1] += sign * <int64_t>((lo >> 32) + (hi & LOW32))
    limb[i + 2] += sign * <int64_t>(hi >> 32)
    return True


cdef inline double _kept(double x, uint8_t flag) noexcept nogil:
    """x where ``flag`` is set, else +0.0, in integer operations only."""
    cdef uint64_t u
    memcpy(&u, &x, sizeof(u))
    u &= -<uint64_t>(flag != 0)
    memcpy(&x, &u, sizeof(u))
    return x


cdef bint _integer_sum(const double* x, const uint8_t* mask, Py_ssize_t n, double* total) noexcept nogil:
    """Whether the items (where ``mask`` is set, unless it is NULL) are
    integers whose running sums all stay below 2**53 in magnitude: then
    every addition is exact and ``total`` is their sum (an inf or nan is
    not an integer here either).

    Branch-free, with no early exit (a miss sends the sum to the limbs,
    which cost more than this pass): an item the mask leaves out becomes
    +0.0 by clearing its bits (``_kept``), and integrality is an int64 round
    trip of the item, or of 0 when the item is too large to convert. A
    random mask mispredicts a branch per item (3x the time at 10^5 items),
    and ``floor`` is a libm call on the baseline x86-64 target."""
    cdef double s = 0.0, xi, small, largest = 0.0
    cdef Py_ssize_t i
    cdef int exact = 1
    for i in range(n):
        xi = x[i] if mask == NULL else _kept(x[i], mask[i])
        small = xi if fabs(xi) < EXACT_INTEGERS else 0.0
        exact &= (fabs(xi) < EXACT_INTEGERS) & (small == <double><int64_t>small)
        s += xi
        largest = max(largest, fabs(s))
    total[0] = s
    return exact and largest < EXACT_INTEGERS


def exact_sum(const double[::1] x, const uint8_t[::1] mask=None):
    """sum(x) * 2**1074 as a Python int, exactly, or None when an item is
    inf or nan; fewer than ``MAX_ITEMS`` items (unchecked: the caller's part).
    With ``mask`` (as long as x), only the items where it is set.

    >>> import numpy as np
    >>> exact_sum(np.array([0.5, 0.25, -1.0])) == -(1 << 1072)
    True
    >>> exact_sum(np.array([0.5, 0.25, -1.0]), np.array([1, 0, 0], dtype=np.uint8)) == 1 << 1073
    True
    """
    cdef int64_t limb[LIMBS]
    cdef Py_ssize_t i, n = x.shape[0]
    cdef bint finite = True
    if mask is not None and mask.shape[0] != n:
        raise ValueError(f"exact_sum: mask has {mask.shape[0]} items, x has {n}")
    cdef double integers = 0.0
    cdef bint exact_integers
    with nogil:
        exact_integers = n > 0 and _integer_sum(&x[0], &mask[0] if mask is not None else NULL, n, &integers)
    if exact_integers:
        return int(integers) << 1074
    memset(limb, 0, sizeof(limb))
    with nogil:
        for i in range(n):
            if (mask is None or mask[i]) and not _add(limb, x[i]):
                finite = False
                break
    if not finite:
        return None
    total = 0
    for i in range(LIMBS - 1, -1, -1):
        total = (total << LIMB_BITS) + limb[i]
    return total
