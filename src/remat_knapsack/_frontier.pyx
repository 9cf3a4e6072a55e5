# cython: language_level=3
"""Kernel of ``frontier``: every Pareto-optimal (weight, value) pair, one pass.

Weights are exact int64 (quantised weights, or float64 weights on their
2**e grid), so breakpoints are exact sums compared exactly. Values are float64
sums in item order. The states of the prefix 1..i are merged with themselves
shifted by item i (Nemhauser and Ullmann, "Discrete dynamic programming and
capital allocation", Management Science 15, 1969); dominated states are dropped.
Time O(n * S), memory two buffers of S states (S: Pareto states, <= c + 1).
The GIL is released; Ctrl-C is checked every CHECK_STATES merged states.
(Tried: interleaved (weight, value) states, and copying the states lighter
than the item with memcpy; neither was faster at n = 1,000.)
"""

import numpy as np

from libc.math cimport INFINITY
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

from ._interrupt cimport interrupted, raise_pending

#: Bytes per state slot: two buffers of (int64 weight, float64 value).
STATE_BYTES = 2 * (8 + 8)

cdef enum:
    OK = 0
    STATE_LIMIT = 1
    NO_MEMORY = 2
    INTERRUPTED = 3
    FIRST_STATES = 256
    # Merged states between two Ctrl-C checks: 2**20 is a few ms, up to ~30 ms
    # on a busy machine (the pass is memory-bound), well within the 0.1 s
    # allowed; the shared CHECK_EVERY (2**23) measured 0.2 s here.
    CHECK_STATES = 1 << 20


class StateLimit(Exception):
    """The Pareto states outgrew ``max_states``."""


cdef struct Buf:
    int64_t* W     # current states: weight ascending, value strictly ascending
    double* P
    int64_t* W2    # the next item's states
    double* P2
    Py_ssize_t size


cdef int _resize(void** p, size_t nbytes) noexcept nogil:
    cdef void* q = realloc(p[0], nbytes)
    if q == NULL:
        return NO_MEMORY
    p[0] = q
    return OK


cdef int _grow(Buf* b, Py_ssize_t max_states) noexcept nogil:
    """Double the four buffers, up to max_states slots."""
    cdef Py_ssize_t new = min(2 * b.size, max_states)
    cdef size_t m = <size_t>new
    if new <= b.size:
        return STATE_LIMIT
    if (_resize(<void**>&b.W, m * 8) or _resize(<void**>&b.P, m * 8)
            or _resize(<void**>&b.W2, m * 8) or _resize(<void**>&b.P2, m * 8)):
        return NO_MEMORY
    b.size = new
    return OK


cdef int _pass(const int64_t* w, const double* v, Py_ssize_t n, int64_t c,
               Py_ssize_t max_states, Buf* b, Py_ssize_t* count) noexcept nogil:
    """All Pareto states of the n items within capacity c into b.W/b.P[:count]."""
    cdef Py_ssize_t cnt = 1, ia, ib, out, i, work = 0
    cdef int64_t dw, Wx
    cdef double dv, Px, maxP
    cdef int64_t* W
    cdef double* P
    cdef int rc
    b.W[0] = 0
    b.P[0] = 0.0
    for i in range(n):
        dw = w[i]
        dv = v[i]
        W = b.W
        P = b.P
        ia = 0
        ib = 0
        out = 0
        maxP = -INFINITY
        while True:  # merge "without item i" and "with item i" (within c)
            if ib < cnt and W[ib] <= c - dw and (ia >= cnt or W[ib] + dw < W[ia] or (
                    W[ib] + dw == W[ia] and P[ib] + dv > P[ia])):
                Wx = W[ib] + dw
                Px = P[ib] + dv
                ib += 1
            elif ia < cnt:
                Wx = W[ia]
                Px = P[ia]
                ia += 1
            else:
                break
            work += 1
            if work == CHECK_STATES:  # inside the merge: one merge can be 1e7 states
                work = 0
                if interrupted():
                    return INTERRUPTED
            if Px > maxP:  # not dominated by a lighter (or equal) state
                if out == b.size:
                    rc = _grow(b, max_states)
                    if rc != OK:
                        return rc
                    W = b.W
                    P = b.P
                maxP = Px
                b.W2[out] = Wx
                b.P2[out] = Px
                out += 1
        b.W, b.W2 = b.W2, b.W
        b.P, b.P2 = b.P2, b.P
        cnt = out
    count[0] = cnt
    return OK


def pareto(const int64_t[::1] w, const double[::1] v, int64_t c, Py_ssize_t max_states):
    """(weights, values, peak_states): every Pareto-optimal subset sum of the
    items with weight <= c, weight ascending and value strictly ascending, the
    empty set first. Needs 0 <= w[i] <= c and v[i] > 0. Raises
    :class:`StateLimit` beyond ``max_states`` slots, KeyboardInterrupt on Ctrl-C."""
    cdef Py_ssize_t n = w.shape[0], cnt = 0
    cdef Buf b
    cdef int rc = OK
    cdef size_t first = <size_t>max(1, min(<Py_ssize_t>FIRST_STATES, max_states))
    if v.shape[0] != n:
        raise ValueError("w and v have different lengths")
    b.size = <Py_ssize_t>first
    b.W = <int64_t*>malloc(first * 8)
    b.P = <double*>malloc(first * 8)
    b.W2 = <int64_t*>malloc(first * 8)
    b.P2 = <double*>malloc(first * 8)
    try:
        if b.W == NULL or b.P == NULL or b.W2 == NULL or b.P2 == NULL:
            raise MemoryError()
        with nogil:
            rc = _pass(&w[0] if n else NULL, &v[0] if n else NULL, n, c, max_states, &b, &cnt)
        peak = b.size
        if rc == INTERRUPTED:
            raise_pending()
            raise KeyboardInterrupt
        if rc == STATE_LIMIT:
            raise StateLimit(max_states)
        if rc == NO_MEMORY:
            raise MemoryError()
        free(b.W2)  # before the copies, so the peak stays that of the pass
        free(b.P2)
        b.W2 = NULL
        b.P2 = NULL
        Wr = np.empty(cnt, dtype=np.int64)
        Pr = np.empty(cnt, dtype=np.float64)
        _copy(b.W, b.P, Wr, Pr, cnt)
        return Wr, Pr, peak
    finally:
        free(b.W)
        free(b.P)
        free(b.W2)
        free(b.P2)


cdef void _copy(const int64_t* W, const double* P, int64_t[::1] Wr, double[::1] Pr, Py_ssize_t cnt) noexcept:
    if cnt:
        memcpy(&Wr[0], W, cnt * 8)
        memcpy(&Pr[0], P, cnt * 8)
