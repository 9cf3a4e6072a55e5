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
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

from .._common._interrupt cimport interrupted, raise_pending

#: Bytes per state slot: two buffers of (int64 weight, float64 value).
STATE_BYTES = 2 * (8 + 8)
#: The same with 128-bit weights (``pareto128``).
STATE_BYTES_128 = 2 * (16 + 8)

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


cdef extern from *:
    """
    typedef __int128 i128;
    """
    ctypedef long long i128  # Cython's view; the C type is __int128


ctypedef fused wint:
    int64_t
    i128


cdef struct Buf:
    void* W        # current states (wint weights): weight ascending, value strictly ascending
    double* P
    void* W2       # the next item's states
    double* P2
    Py_ssize_t size
    size_t wsize   # sizeof(wint)


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
    if (_resize(&b.W, m * b.wsize) or _resize(<void**>&b.P, m * 8)
            or _resize(&b.W2, m * b.wsize) or _resize(<void**>&b.P2, m * 8)):
        return NO_MEMORY
    b.size = new
    return OK


cdef int _pass(const wint* w, const double* v, Py_ssize_t n, wint c,
               Py_ssize_t max_states, Buf* b, Py_ssize_t* count) noexcept nogil:
    """All Pareto states of the n items within capacity c into b.W/b.P[:count]."""
    cdef Py_ssize_t cnt = 1, ia, ib, out, i, work = 0
    cdef wint dw, Wx
    cdef double dv, Px, maxP
    cdef wint* W
    cdef double* P
    cdef void* tv
    cdef double* tp
    cdef int rc
    (<wint*>b.W)[0] = 0
    b.P[0] = 0.0
    for i in range(n):
        dw = w[i]
        dv = v[i]
        W = <wint*>b.W
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
                    W = <wint*>b.W
                    P = b.P
                maxP = Px
                (<wint*>b.W2)[out] = Wx
                b.P2[out] = Px
                out += 1
        tv = b.W
        b.W = b.W2
        b.W2 = tv
        tp = b.P
        b.P = b.P2
        b.P2 = tp
        cnt = out
    count[0] = cnt
    return OK


cdef int _start(Buf* b, Py_ssize_t max_states, size_t wsize) except -1:
    cdef size_t first = <size_t>max(1, min(<Py_ssize_t>FIRST_STATES, max_states))
    b.size = <Py_ssize_t>first
    b.wsize = wsize
    b.W = malloc(first * wsize)
    b.P = <double*>malloc(first * 8)
    b.W2 = malloc(first * wsize)
    b.P2 = <double*>malloc(first * 8)
    if b.W == NULL or b.P == NULL or b.W2 == NULL or b.P2 == NULL:
        raise MemoryError()
    return 0


cdef int _finish(Buf* b, int rc, Py_ssize_t max_states) except -1:
    """Raise for a failed pass; else free the second buffers (so the copies
    that follow stay within the pass's peak)."""
    if rc == INTERRUPTED:
        raise_pending()
        raise KeyboardInterrupt
    if rc == STATE_LIMIT:
        raise StateLimit(max_states)
    if rc == NO_MEMORY:
        raise MemoryError()
    free(b.W2)
    free(b.P2)
    b.W2 = NULL
    b.P2 = NULL
    return 0


cdef void _release(Buf* b) noexcept:
    free(b.W)
    free(b.P)
    free(b.W2)
    free(b.P2)


def pareto(const int64_t[::1] w, const double[::1] v, int64_t c, Py_ssize_t max_states):
    """(weights, values, peak_states): every Pareto-optimal subset sum of the
    items with weight <= c, weight ascending and value strictly ascending, the
    empty set first. Needs 0 <= w[i] <= c < 2**62 and v[i] > 0. Raises
    :class:`StateLimit` beyond ``max_states`` slots, KeyboardInterrupt on Ctrl-C."""
    cdef Py_ssize_t n = w.shape[0], cnt = 0
    cdef Buf b
    cdef int rc = OK
    if v.shape[0] != n:
        raise ValueError("w and v have different lengths")
    b.W = b.W2 = NULL
    b.P = b.P2 = NULL
    try:
        _start(&b, max_states, sizeof(int64_t))
        with nogil:
            rc = _pass(&w[0] if n else <int64_t*>NULL, &v[0] if n else NULL, n, c, max_states, &b, &cnt)
        peak = b.size
        _finish(&b, rc, max_states)
        Wr = np.empty(cnt, dtype=np.int64)
        Pr = np.empty(cnt, dtype=np.float64)
        if cnt:
            memcpy(_ptr64(Wr), b.W, cnt * 8)
            memcpy(_ptrd(Pr), b.P, cnt * 8)
        return Wr, Pr, peak
    finally:
        _release(&b)


def pareto128(const uint64_t[::1] hi, const uint64_t[::1] lo, const double[::1] v, c, Py_ssize_t max_states):
    """``pareto`` for weights below 2**126, given as 64-bit halves
    (w = hi * 2**64 + lo); returns the state weights as halves too:
    (hi, lo, values, peak_states)."""
    cdef Py_ssize_t n = v.shape[0], cnt = 0, i
    cdef Buf b
    cdef int rc = OK
    cdef i128* w = NULL
    cdef i128 cap = ((<i128>(<uint64_t>(c >> 64))) << 64) | <i128>(<uint64_t>(c & 0xFFFFFFFFFFFFFFFF))
    cdef i128* W
    cdef uint64_t[::1] Rh
    cdef uint64_t[::1] Rl
    if hi.shape[0] != n or lo.shape[0] != n:
        raise ValueError("hi, lo and v have different lengths")
    b.W = b.W2 = NULL
    b.P = b.P2 = NULL
    try:
        w = <i128*>malloc(max(n, 1) * sizeof(i128))
        if w == NULL:
            raise MemoryError()
        for i in range(n):
            w[i] = ((<i128>hi[i]) << 64) | <i128>lo[i]
        _start(&b, max_states, sizeof(i128))
        with nogil:
            rc = _pass(w, &v[0] if n else NULL, n, cap, max_states, &b, &cnt)
        peak = b.size
        _finish(&b, rc, max_states)
        Wh = np.empty(cnt, dtype=np.uint64)
        Wl = np.empty(cnt, dtype=np.uint64)
        Pr = np.empty(cnt, dtype=np.float64)
        Rh = Wh
        Rl = Wl
        W = <i128*>b.W
        for i in range(cnt):
            Rh[i] = <uint64_t>(W[i] >> 64)
            Rl[i] = <uint64_t>W[i]
        if cnt:
            memcpy(_ptrd(Pr), b.P, cnt * 8)
        return Wh, Wl, Pr, peak
    finally:
        free(w)
        _release(&b)


cdef void* _ptr64(int64_t[::1] a) noexcept:
    return &a[0]


cdef void* _ptrd(double[::1] a) noexcept:
    return &a[0]
