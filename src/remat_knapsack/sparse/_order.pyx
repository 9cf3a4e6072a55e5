# cython: language_level=3
"""Positions by descending value, exactly, through numpy's vectorised sort.

``np.argsort`` of float64 costs about three times ``np.sort`` of as many
64-bit integers (and ``_radix``'s LSD sort, eight passes on float keys,
about twice ``np.argsort``). So each value becomes an unsigned key that grows as the
value falls (its IEEE-754 bits, made monotone), the key's low bits are
replaced by the position (``ceil(log2 n)`` bits: keys that differ only there
tie, and the position breaks the tie), and the integers are sorted. Values
that the truncated keys could not tell apart (within 2**b units in the last
place of each other, b the position bits) may be out of order; one insertion
pass on the exact values puts them right, in O(n + such pairs). Should
those pairs be many (values crowded within that distance: efficiencies
1 + 1e-12 i), the pass gives up after MOVES_PER_ITEM moves an item and
``np.argsort`` sorts instead. Ties keep ascending position.
"""

import numpy as np

from libc.stdint cimport uint64_t
from libc.string cimport memcpy

cdef uint64_t SIGN = (<uint64_t>1) << 63
cdef Py_ssize_t MOVES_PER_ITEM = 8


cdef inline uint64_t _falling_key(double x) noexcept nogil:
    """An unsigned key that grows as x falls (x not NaN; -0.0 as 0.0)."""
    if x == 0:
        x = 0.0
    cdef uint64_t u
    memcpy(&u, &x, sizeof(u))  # the bits of x (a pointer cast would break strict aliasing)
    # negative: the bits grow with the magnitude; the others reversed, below SIGN
    return u if u & SIGN else ~u & ~SIGN


cdef void _keys(const double* x, Py_ssize_t n, uint64_t* key, int bits) noexcept nogil:
    """Falling keys with their low ``bits`` bits replaced by the position."""
    cdef uint64_t low = ((<uint64_t>1) << bits) - 1
    cdef Py_ssize_t i
    for i in range(n):
        key[i] = (_falling_key(x[i]) & ~low) | <uint64_t>i


cdef bint _positions(const double* x, const uint64_t* key, Py_ssize_t n, int bits,
                     Py_ssize_t* order) noexcept nogil:
    """The positions from the sorted keys, then an insertion pass by the
    exact values (descending; ties stay as they are). False when that pass
    would move items more than MOVES_PER_ITEM times n in all."""
    cdef uint64_t low = ((<uint64_t>1) << bits) - 1
    cdef Py_ssize_t i, q, p, budget = MOVES_PER_ITEM * n
    for i in range(n):
        p = <Py_ssize_t>(key[i] & low)
        q = i
        while q > 0 and x[order[q - 1]] < x[p]:
            order[q] = order[q - 1]
            q -= 1
        order[q] = p
        budget -= i - q
        if budget < 0:
            return False
    return True


cdef bint _non_increasing(const double* x, Py_ssize_t n) noexcept nogil:
    """Whether x[0] >= x[1] >= ... (stops at the first rise)."""
    cdef Py_ssize_t i
    for i in range(1, n):
        if x[i] > x[i - 1]:
            return False
    return True


def descending(const double[::1] x):
    """Positions of ``x`` (no NaN) by descending value, ties by ascending
    position, as ``np.argsort(-x, kind="stable")``.

    >>> descending(np.array([0.5, 2.0, 0.5, 3.0])).tolist()
    [3, 1, 0, 2]
    """
    cdef Py_ssize_t n = x.shape[0]
    cdef int bits = max(1, int(n - 1).bit_length())
    order = np.empty(n, dtype=np.intp)
    if n == 0:
        return order
    key_a = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] key = key_a
    cdef Py_ssize_t[::1] o = order
    cdef bint done
    with nogil:
        done = _non_increasing(&x[0], n)
    if done:  # already in order (equal values, as all of a subset-sum instance's efficiencies)
        return np.arange(n, dtype=np.intp)
    with nogil:
        _keys(&x[0], n, &key[0], bits)
    key_a.sort()
    with nogil:
        done = _positions(&x[0], &key[0], n, bits, &o[0])
    return order if done else np.argsort(-np.asarray(x), kind="stable")


def ascending(x):
    """Positions of ``x`` (no NaN) by ascending value, ties by ascending
    position: ``descending`` of -x (negation is exact). The canonical pass's
    weight and value orders, cheaper so than ``_radix``'s sort there
    (docs/algorithms.md).

    >>> ascending(np.array([0.5, 2.0, 0.5, 3.0])).tolist()
    [0, 2, 1, 3]
    """
    return descending(-np.asarray(x, dtype=np.float64))
