# cython: language_level=3
"""Compiled steps of the grouped solver's Pareto DP (``_types._dp``).

Private. A front is a list of states sorted by exact weight, each weight
two int64 limbs ``h * 2**LIMB + lo`` with ``0 <= lo < 2**LIMB`` (totals
below 2**104, as ``_types`` needs for ``scale=None`` grids), with float64
values rising strictly along it. ``merge`` adds one piece (weight, value)
to a front: the states that take it (those still within the capacity J)
are the old front shifted, already sorted, so the two lists are merged in
one linear pass with the Pareto filter in the same pass (O(S) a step; a
stable sort of the concatenation before, O(S log S) plus numpy's call
overheads per step).

Ties, as ``_types._merge`` documented them: at equal weight the state
without the piece comes first, and of the states of one weight the one kept
is the first (in that order) that reaches the largest value.

``lp_keep`` prunes a front by Dantzig's bound of each state's residual and
``fill_one_limb`` completes each state by one type (how many copies fit),
both O(S) in one loop where numpy took a dozen calls per step: on fronts of
a few hundred states the calls, not the arithmetic, were the cost.
"""

import numpy as np

from libc.math cimport INFINITY
from libc.stdint cimport int64_t, uint8_t

#: Bits of the low limb (``_types`` reads it from here).
LIMB = 61
cdef int64_t MASK = ((<int64_t>1) << 61) - 1


cdef inline bint _le(int64_t ah, int64_t al, int64_t bh, int64_t bl) noexcept nogil:
    """Exact weight a <= b (limbs normalised)."""
    return ah < bh or (ah == bh and al <= bl)


cdef inline void _shift(int64_t h, int64_t lo, int64_t ph, int64_t pl,
                        int64_t* oh, int64_t* ol) noexcept nogil:
    """(h, lo) + (ph, pl), normalised (both low limbs below 2**61: no overflow)."""
    cdef int64_t l2 = lo + pl
    oh[0] = h + ph + (l2 >> 61)
    ol[0] = l2 & MASK


cdef Py_ssize_t _merge_into(const int64_t* h, const int64_t* lo, const double* V, Py_ssize_t n,
                            int64_t ph, int64_t pl, double pv, int64_t Jh, int64_t Jl,
                            int64_t* H, int64_t* L, double* P, Py_ssize_t* parent,
                            uint8_t* took) noexcept nogil:
    """The merged front into H, L, P, parent, took (room for 2n); its size."""
    cdef Py_ssize_t i = 0, j = 0, nb = 0, m = 0, par
    cdef int64_t bh, bl, wh, wl
    cdef double p, top = -INFINITY
    cdef uint8_t tk
    while nb < n:  # the shifted states within J: a prefix (weights rise)
        _shift(h[nb], lo[nb], ph, pl, &bh, &bl)
        if not _le(bh, bl, Jh, Jl):
            break
        nb += 1
    while i < n or j < nb:
        if j < nb:
            _shift(h[j], lo[j], ph, pl, &bh, &bl)
        if j >= nb or (i < n and _le(h[i], lo[i], bh, bl)):  # the old state first on ties
            wh, wl, p, par, tk = h[i], lo[i], V[i], i, 0
            i += 1
        else:
            wh, wl, p, par, tk = bh, bl, V[j] + pv, j, 1
            j += 1
        if p > top:  # not dominated by a lighter (or equal, earlier) state
            if m > 0 and H[m - 1] == wh and L[m - 1] == wl:
                m -= 1  # same weight, less value: this one replaces it
            H[m], L[m], P[m], parent[m], took[m] = wh, wl, p, par, tk
            m += 1
            top = p
    return m


def merge(const int64_t[::1] h, const int64_t[::1] lo, const double[::1] V,
          int64_t ph, int64_t pl, double pv, int64_t Jh, int64_t Jl):
    """One piece (weight ph * 2**LIMB + pl, value pv) merged into the front
    (h, lo, V) within the capacity Jh * 2**LIMB + Jl: the new front (h, lo,
    V) and, for each of its states, its parent in the old front and whether
    it took the piece (bool)."""
    cdef Py_ssize_t n = V.shape[0], m
    H_a = np.empty(2 * n, dtype=np.int64)
    L_a = np.empty(2 * n, dtype=np.int64)
    P_a = np.empty(2 * n)
    par_a = np.empty(2 * n, dtype=np.intp)
    took_a = np.empty(2 * n, dtype=np.uint8)
    cdef int64_t[::1] H = H_a, L = L_a
    cdef double[::1] P = P_a
    cdef Py_ssize_t[::1] par = par_a
    cdef uint8_t[::1] tk = took_a
    if n == 0:
        return H_a, L_a, P_a, par_a, took_a.view(bool)
    with nogil:
        m = _merge_into(&h[0], &lo[0], &V[0], n, ph, pl, pv, Jh, Jl, &H[0], &L[0], &P[0], &par[0], &tk[0])
    return H_a[:m], L_a[:m], P_a[:m], par_a[:m], took_a[:m].view(bool)


cdef void _lp_keep(const int64_t* h, const int64_t* lo, const double* V, Py_ssize_t n,
                   int64_t Jh, int64_t Jl, const double* cw, const double* cv, const double* eff,
                   Py_ssize_t m, double thr, uint8_t* keep) noexcept nogil:
    """keep[i]: state i's value plus Dantzig's bound of its residual reaches thr."""
    cdef Py_ssize_t i, a, b, k
    cdef double R, room
    for i in range(n):
        R = <double>(Jh - h[i]) * 2305843009213693952.0 + <double>(Jl - lo[i])  # 2**61
        a, b = 0, m + 1  # k = (the number of cw <= R) - 1, at most m
        while a < b:
            k = (a + b) >> 1
            if cw[k] <= R:
                a = k + 1
            else:
                b = k
        k = a - 1 if a - 1 < m else m
        room = R - cw[k]
        keep[i] = V[i] + cv[k] + (room if room > 0 else 0.0) * eff[k] >= thr


def lp_keep(const int64_t[::1] h, const int64_t[::1] lo, const double[::1] V, int64_t Jh, int64_t Jl,
            const double[::1] cw, const double[::1] cv, const double[::1] eff, double thr):
    """Which states of the front may still reach ``thr``: value plus
    Dantzig's bound of the copies not merged yet, for the residual J - W as
    float64 (``cw``, ``cv``: their weight and value prefix sums in efficiency
    order, from 0; ``eff``: their efficiencies, then 0). Bool mask; the same
    float64 operations as the numpy expression it replaces, so the same
    states are kept."""
    cdef Py_ssize_t n = V.shape[0]
    keep_a = np.empty(n, dtype=np.uint8)
    cdef uint8_t[::1] keep = keep_a
    if n:
        with nogil:
            _lp_keep(&h[0], &lo[0], &V[0], n, Jh, Jl, &cw[0], &cv[0], &eff[0], cw.shape[0] - 1, thr, &keep[0])
    return keep_a.view(bool)


def fill_one_limb(const int64_t[::1] lo, int64_t Jl, int64_t g, int64_t most):
    """min(most, (Jl - lo[i]) // g) for every state (weights and J below
    2**61, every lo[i] <= Jl, g > 0): how many copies of one type complete
    each state, exactly."""
    cdef Py_ssize_t n = lo.shape[0], i
    cdef int64_t q
    out_a = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] out = out_a
    with nogil:
        for i in range(n):
            q = (Jl - lo[i]) // g
            out[i] = q if q < most else most
    return out_a
