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


cdef enum:
    # At most this many values are sorted by insertion, in place: the keys'
    # array and numpy's sort cost more than the O(n^2) moves there.
    INSERTION_UP_TO = 32


cdef void _by_insertion(const double* x, Py_ssize_t n, bint falling, Py_ssize_t* order) noexcept nogil:
    """Positions by descending (``falling``) or ascending x, ties by
    ascending position: an insertion sort that moves an item only past
    strictly smaller (larger) ones."""
    cdef Py_ssize_t i, q
    for i in range(n):
        q = i
        while q > 0 and (x[order[q - 1]] < x[i] if falling else x[order[q - 1]] > x[i]):
            order[q] = order[q - 1]
            q -= 1
        order[q] = i


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
    cdef Py_ssize_t[::1] o = order
    if n <= INSERTION_UP_TO:
        with nogil:
            _by_insertion(&x[0], n, True, &o[0])
        return order
    key_a = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] key = key_a
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
    position. Up to INSERTION_UP_TO values by insertion; integers from 0
    to ``COUNTING_SPAN`` times n (quantised
    weights: R = 10^4 on 10^4 items) by a counting sort in O(n + max);
    else ``descending`` of -x (negation is exact). The canonical pass's
    weight and value orders, cheaper so than ``_radix``'s sort there
    (docs/algorithms.md).

    >>> ascending(np.array([0.5, 2.0, 0.5, 3.0])).tolist()
    [0, 2, 1, 3]
    >>> ascending(np.array([3.0, 1.0, 3.0, 0.0])).tolist()
    [3, 1, 0, 2]
    """
    xa = np.ascontiguousarray(x, dtype=np.float64)
    cdef const double[::1] xv = xa
    cdef Py_ssize_t n = xv.shape[0]
    cdef double limit = COUNTING_SPAN * <double>n + COUNTING_FLOOR
    cdef Py_ssize_t[::1] o
    if 0 < n <= INSERTION_UP_TO:
        order = np.empty(n, dtype=np.intp)
        o = order
        with nogil:
            _by_insertion(&xv[0], n, False, &o[0])
        return order
    cdef Py_ssize_t top = -1
    key_a = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] key = key_a
    if n:
        with nogil:
            top = _integer_keys(&xv[0], n, limit, &key[0])
    if top < 0:
        return descending(-xa)
    order = np.empty(n, dtype=np.intp)
    count_a = np.zeros(top + 2, dtype=np.intp)
    o = order
    cdef Py_ssize_t[::1] count = count_a
    with nogil:
        _counting_order(&key[0], n, &count[0], top, &o[0])
    return order


#: ``ascending`` sorts by counting when every value is an integer from 0 to
#: COUNTING_SPAN n + COUNTING_FLOOR: its count array is then at most about as
#: large as the positions it returns.
COUNTING_SPAN = 2
COUNTING_FLOOR = 1024


cdef Py_ssize_t _integer_keys(const double* x, Py_ssize_t n, double limit, Py_ssize_t* key) noexcept nogil:
    """When every x is an integer in [0, limit]: x as integers into ``key``,
    and the largest of them; else -1. (The integer test and the maximum
    are folded over the pass, not branched on per item.)"""
    cdef Py_ssize_t i, k, top = 0
    cdef double y
    cdef bint fraction = False
    for i in range(n):
        y = x[i]
        if not (0 <= y <= limit):  # first: the conversion below is defined within this range only
            return -1
        k = <Py_ssize_t>y
        fraction |= <double>k != y
        top = k if k > top else top
        key[i] = k
    return -1 if fraction else top


cdef void _counting_order(const Py_ssize_t* key, Py_ssize_t n, Py_ssize_t* count, Py_ssize_t top,
                          Py_ssize_t* order) noexcept nogil:
    """Positions by ascending key (integers 0..top), ties by position: a
    counting sort; ``count`` holds top + 2 zeros."""
    cdef Py_ssize_t i, k
    for i in range(n):
        count[key[i] + 1] += 1
    for k in range(top + 1):
        count[k + 1] += count[k]
    for i in range(n):
        k = key[i]
        order[count[k]] = i
        count[k] += 1
