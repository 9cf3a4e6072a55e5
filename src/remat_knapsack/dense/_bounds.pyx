# cython: language_level=3
"""LP (Dantzig) upper bounds that tell a dense DP pass which capacities matter.

Private. A DP pass adds items one at a time; after item k the row holds, per
capacity b, the best value of the items seen so far (A) within b. A cell can
only lie on an optimal path if

    LP(A, b) + LP(S, cap - b) >= lower bound on the optimum,

where S are the items not yet added and LP is the fractional (Dantzig 1957)
relaxation, an upper bound on the integer optimum. The left side is concave in
b (a sum of concave functions), so the cells that pass form one interval, found
by binary search. Both LPs are evaluated in O(log n) with Fenwick trees indexed
by ratio rank, so a pass of n items costs O(n log(cap) log n) here.
"""

import numpy as np

from libc.stdint cimport int64_t

from ._fenwick cimport Fenwick, fen_add, fen_counted, fen_init, fen_within
from .._common._interrupt cimport CHECK_EVERY, interrupted, raise_pending


cdef inline double _lp(Fenwick* f, const double* ratio, double x) noexcept nogil:
    """LP relaxation of the items in ``f`` (ranks in ratio order) within x:
    the whole items of the longest prefix that fits, then a fraction of the
    next item present."""
    cdef double accw, accv, accc
    cdef Py_ssize_t p
    if x <= 0:
        return 0.0
    fen_within(f, x, False, &accw, &accv, &accc)
    p = fen_counted(f, accc)  # the next item present has rank p + 1
    if p < f.n:
        accv += (x - accw) * ratio[p]
    return accv


cdef inline double _g(Fenwick* A, Fenwick* S, const double* ratio, int64_t cap, int64_t b) noexcept nogil:
    return _lp(A, ratio, <double>b) + _lp(S, ratio, <double>(cap - b))


def intervals(const int64_t[::1] w, const double[::1] v, const int64_t[::1] order,
              int64_t cap, double thr):
    """Capacity interval [lo[k], hi[k]] that can matter after pass item k.

    ``w``, ``v``: all items of the (sub)problem; ``order``: the positions of
    the items the pass adds, in its order (the others stay in S throughout);
    ``thr``: a lower bound on the optimum of the (sub)problem, minus a
    tolerance for floating-point rounding. Where no cell passes (thr above the
    bound, which a valid thr cannot be) the whole range [0, cap] is returned.
    """
    cdef Py_ssize_t n = w.shape[0], m = order.shape[0], t, i
    wa = np.asarray(w, dtype=np.float64)
    va = np.asarray(v, dtype=np.float64)
    ratio_all = va / wa
    rank_order = np.argsort(-ratio_all, kind="stable")
    pos_a = np.empty(n, dtype=np.int64)
    pos_a[rank_order] = np.arange(n)
    ratio_a = np.ascontiguousarray(ratio_all[rank_order])
    cdef const double[::1] ratio = ratio_a
    cdef const int64_t[::1] pos = pos_a
    nodes = [np.zeros(3 * (n + 1)) for _ in range(2)]  # per node: weight, count, value
    cdef double[::1] an = nodes[0], sn = nodes[1]
    cdef Fenwick A, S
    cdef int log = 0
    while (1 << (log + 1)) <= n:
        log += 1
    fen_init(&A, &an[0], True, n)
    fen_init(&S, &sn[0], True, n)
    lo_a = np.zeros(m, dtype=np.int64)
    hi_a = np.full(m, cap, dtype=np.int64)
    cdef int64_t[::1] lo = lo_a, hi = hi_a
    cdef int64_t a, z, mid, t_mid
    # Work per pass item: three binary searches over [0, cap], two O(log n)
    # LPs per probe.
    cdef Py_ssize_t ticks = 0, per_item = 6 * (log + 1) * (64 if cap >= (1 << 62) else 1 + _bits(cap))
    cdef bint stopped = False
    with nogil:
        for i in range(n):
            fen_add(&S, pos[i] + 1, <double>w[i], v[i], 1)
        for t in range(m):
            ticks += per_item
            if ticks >= CHECK_EVERY:
                ticks = 0
                if interrupted():
                    stopped = True
                    break
            i = order[t]
            fen_add(&A, pos[i] + 1, <double>w[i], v[i], 1)
            fen_add(&S, pos[i] + 1, -<double>w[i], -v[i], -1)
            a, z = 0, cap  # the maximum of a concave function
            while a < z:
                mid = a + (z - a) // 2
                if _g(&A, &S, &ratio[0], cap, mid + 1) >= _g(&A, &S, &ratio[0], cap, mid):
                    a = mid + 1
                else:
                    z = mid
            if _g(&A, &S, &ratio[0], cap, a) < thr:
                continue
            mid = a
            z = mid  # leftmost cell that passes
            a = 0
            while a < z:
                t_mid = a + (z - a) // 2
                if _g(&A, &S, &ratio[0], cap, t_mid) >= thr:
                    z = t_mid
                else:
                    a = t_mid + 1
            lo[t] = a
            a, z = mid, cap  # rightmost cell that passes
            while a < z:
                t_mid = a + (z - a + 1) // 2
                if _g(&A, &S, &ratio[0], cap, t_mid) >= thr:
                    a = t_mid
                else:
                    z = t_mid - 1
            hi[t] = a
    if stopped:
        raise_pending()  # the KeyboardInterrupt the handler set
        raise KeyboardInterrupt
    return lo_a, hi_a


cdef inline int _bits(int64_t x) noexcept nogil:
    cdef int b = 0
    while x > 0:
        x >>= 1
        b += 1
    return b
