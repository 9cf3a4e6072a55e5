# cython: language_level=3
"""The input checks' passes over float64 arrays, in C, for ``_validate``.

``extremes``: the least and the greatest value in one pass (numpy's ``min``
and ``max`` are a call and a pass each), of float64 or int64 values; many
values go to numpy, whose SIMD passes are faster there. ``quantise``: ``np.rint(x * scale)``
as int64 and its total in one pass (numpy makes three temporaries). Both
take strided arrays: what the user passed, unconverted when it is float64.
Private.

>>> extremes(np.array([2.0, -1.0, 5.0]))
(-1.0, 5.0)
>>> quantise(np.array([0.25, 0.5, 1.5]), 2.0)  # 0.5 -> 0, 1 -> 1, 3 -> 3: halves to even
(array([0, 1, 3]), 4)
"""

import numpy as np

from libc.math cimport NAN, rint
from libc.stdint cimport int64_t, uint64_t


ctypedef fused number:
    double
    int64_t


#: ``extremes`` leaves more values than this to numpy's vectorised min and
#: max (two calls, but SIMD: about 5x faster a value than the scalar pass).
EXTREMES_C_UP_TO = 1024


def extremes(const number[:] x):
    """(min, max) of x (float64 or int64, at least one value); (nan, nan)
    when a value is NaN, as numpy's ``min`` and ``max`` give. Up to
    EXTREMES_C_UP_TO values in one C pass, more by numpy."""
    cdef Py_ssize_t i, n = x.shape[0]
    cdef number lo, hi, y
    cdef bint nan = False
    if n == 0:
        raise ValueError("extremes: no values")
    if n > EXTREMES_C_UP_TO:
        a = np.asarray(x)
        return a.min().item(), a.max().item()
    lo = hi = x[0]
    with nogil:
        for i in range(n):
            y = x[i]
            if number is double:  # only floats have a NaN (chosen when compiled)
                nan |= y != y
            if y < lo:
                lo = y
            if y > hi:
                hi = y
    if nan:
        return NAN, NAN
    return lo, hi


def quantise(const double[:] x, double scale):
    """(``np.rint(x * scale).astype(np.int64)``, its sum as numpy's int64 sum
    gives it) in one pass: the product rounded to the nearest integer, halves
    to even (C's ``rint`` in the default rounding mode, as numpy). Needs every
    |x * scale| below 2**63 (the caller allows 2**52)."""
    cdef Py_ssize_t i, n = x.shape[0]
    cdef int64_t q
    cdef uint64_t total = 0  # wraps as numpy's int64 sum does, with no undefined overflow
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        for i in range(n):
            q = <int64_t>rint(x[i] * scale)
            o[i] = q
            total += <uint64_t>q
    return out, <int64_t>total
