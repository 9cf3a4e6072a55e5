# cython: language_level=3
"""Compiled kernels of the sparse solver: DP over Pareto-optimal (weight, value) states.

Private. ``remat_knapsack.sparse`` validates, checks memory and calls these.
Weights are float64 here (integers below 2**53 are exact in float64, and
``scale=None`` weights are float64 anyway); values are float64 > 0.

Three pieces:

``_core``
    An expanding-core Pareto DP in the spirit of Pisinger's minknap: items in
    efficiency order, start from the break solution, alternately add the next
    item after the break and remove the next one before it; after each step
    the (weight, value) list is merged, dominated states dropped and states
    whose bound (Pisinger's: P + (c - W) e_t when W <= c, P - (W - c) e_s
    when W > c) cannot reach the goal pruned. Two modes: *optimise* (goal:
    beat the incumbent, which starts at greedy) and *decide* (goal: reach a
    given value; stops at the first state that does). Each state carries the
    decisions of the last ``VBITS`` core steps; if the best state needs older
    ones, those items are fixed and a *decide* run on the rest recovers them
    (Pisinger's own device), so memory stays O(states + n).

``solve``
    OPT from one *optimise* run, a reduction (Lagrangian bound with the break
    item's efficiency: items whose fixing to 0 or 1 cannot reach OPT are
    decided), then the canonical set among the free items: scanning from the
    highest index down, an item of the current optimal witness is left out iff
    the free items below it can still reach the target within the capacity
    left, which is one *decide* run (most are settled by O(1) bounds first).

``pareto``
    The unpruned Pareto frontier of all items up to a capacity (for
    ``frontier``).
"""

import numpy as np

from libc.math cimport fabs, floor, INFINITY
from libc.stdint cimport uint8_t, uint64_t
from libc.stdlib cimport free, malloc, realloc

cdef enum:
    VW = 2            # 64-bit words of decision history per state
    VBITS = 128       # = 64 * VW core steps remembered per state

cdef struct Pool:
    double* W
    double* P
    uint64_t* V
    double* W2
    double* P2
    uint64_t* V2
    Py_ssize_t cap
    Py_ssize_t max_states
    Py_ssize_t peak
    Py_ssize_t generated
    Py_ssize_t runs


cdef int _reserve(Pool* pool, Py_ssize_t need) noexcept nogil:
    """Make room for ``need`` states in both buffers; -1 if over ``max_states``."""
    cdef Py_ssize_t nc
    cdef void* p
    if need <= pool.cap:
        return 0
    if need > pool.max_states:
        return -1
    nc = 2 * pool.cap
    if nc < need:
        nc = need
    if nc < 256:
        nc = 256
    if nc > pool.max_states:
        nc = pool.max_states
    p = realloc(pool.W, nc * sizeof(double))
    if p == NULL: return -1
    pool.W = <double*>p
    p = realloc(pool.P, nc * sizeof(double))
    if p == NULL: return -1
    pool.P = <double*>p
    p = realloc(pool.V, nc * VW * sizeof(uint64_t))
    if p == NULL: return -1
    pool.V = <uint64_t*>p
    p = realloc(pool.W2, nc * sizeof(double))
    if p == NULL: return -1
    pool.W2 = <double*>p
    p = realloc(pool.P2, nc * sizeof(double))
    if p == NULL: return -1
    pool.P2 = <double*>p
    p = realloc(pool.V2, nc * VW * sizeof(uint64_t))
    if p == NULL: return -1
    pool.V2 = <uint64_t*>p
    pool.cap = nc
    if nc > pool.peak:
        pool.peak = nc
    return 0


cdef void _release(Pool* pool) noexcept nogil:
    free(pool.W); free(pool.P); free(pool.V)
    free(pool.W2); free(pool.P2); free(pool.V2)
    pool.W = NULL; pool.P = NULL; pool.V = NULL
    pool.W2 = NULL; pool.P2 = NULL; pool.V2 = NULL
    pool.cap = 0


cdef inline double _slack(double a, double b) noexcept nogil:
    """Rounding allowance of a bound a + b computed in float64."""
    return 1e-9 + 1e-15 * (fabs(a) + fabs(b))


cdef Py_ssize_t _core(const double* w, const double* v, Py_ssize_t n, double c,
                      int decide, double goal, int integral, double tol,
                      Pool* pool, uint8_t* x, double* zout,
                      Py_ssize_t* bout) noexcept nogil:
    """Expanding-core Pareto DP over items sorted by efficiency (descending).

    Optimise (decide == 0): ``x`` gets an optimal set, ``zout`` its value.
    Decide (decide == 1): ``x`` gets a set of value >= goal - tol within c,
    return 0 if there is none. Returns 1 on success, -1 when the states would
    exceed ``pool.max_states``, -2 on an internal inconsistency.
    """
    cdef Py_ssize_t i, b, s, t, k, cnt, ia, ib, out, best_k = -1, lo, m, r
    cdef double wsum = 0, psum = 0, gw, gp, eb, ub0, thr, z, et, es, Wx, Px
    cdef double maxP, ub, term, dw, dv, best_W = 0, best_P = 0
    cdef uint64_t best_V[VW]
    cdef uint64_t bit, *va, *vo
    cdef Py_ssize_t word, q
    cdef int take_a, found = 0
    cdef Py_ssize_t* seq
    cdef double* tmp
    cdef uint64_t* tmpv

    pool.runs += 1
    b = 0
    while b < n and wsum + w[b] <= c:
        wsum += w[b]
        psum += v[b]
        b += 1
    bout[0] = b
    for i in range(n):
        x[i] = i < b
    if b == n:
        zout[0] = psum
        if decide and psum < goal - tol:
            return 0
        return 1
    # Greedy: the break solution, then every later item that still fits.
    gw = wsum
    gp = psum
    for i in range(b, n):
        if gw + w[i] <= c:
            x[i] = 1
            gw += w[i]
            gp += v[i]
    zout[0] = gp
    eb = v[b] / w[b]
    term = (c - wsum) * eb
    ub0 = psum + term
    if decide:
        if gp >= goal - tol:
            return 1
        thr = goal - tol
    else:
        z = gp
        thr = z + 1.0 if integral else z + tol
    if ub0 + _slack(psum, term) < thr:
        return 0 if decide else 1

    seq = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    if seq == NULL or _reserve(pool, 2) < 0:
        free(seq)
        return -1
    pool.W[0] = wsum
    pool.P[0] = psum
    for q in range(VW):
        pool.V[q] = 0
        best_V[q] = 0
    cnt = 1
    s = b - 1
    t = b
    k = 0
    while cnt > 0 and (s >= 0 or t < n) and not found:
        # One step: item t joins (dw > 0) or item s leaves (dw < 0).
        if t < n and (k % 2 == 0 or s < 0):
            m = t
            dw = w[t]
            dv = v[t]
            t += 1
        else:
            m = s
            dw = -w[s]
            dv = -v[s]
            s -= 1
        seq[k] = m
        et = v[t] / w[t] if t < n else 0.0
        es = v[s] / w[s] if s >= 0 else 0.0
        if _reserve(pool, 2 * cnt) < 0:
            free(seq)
            return -1
        word = (k % VBITS) >> 6
        bit = (<uint64_t>1) << (k & 63)
        ia = 0
        ib = 0
        out = 0
        maxP = -INFINITY
        while ia < cnt or ib < cnt:
            if ib >= cnt:
                take_a = 1
            elif ia >= cnt:
                take_a = 0
            else:
                Wx = pool.W[ib] + dw
                take_a = pool.W[ia] < Wx or (pool.W[ia] == Wx and pool.P[ia] >= pool.P[ib] + dv)
            if take_a:
                Wx = pool.W[ia]
                Px = pool.P[ia]
                va = &pool.V[ia * VW]
                ia += 1
            else:
                Wx = pool.W[ib] + dw
                Px = pool.P[ib] + dv
                va = &pool.V[ib * VW]
                ib += 1
            if Px <= maxP:
                continue
            maxP = Px
            if Wx <= c:
                term = (c - Wx) * et
            elif s >= 0:
                term = -(Wx - c) * es
            else:
                continue
            ub = Px + term
            if ub + _slack(Px, term) < thr:
                continue
            vo = &pool.V2[out * VW]
            for q in range(VW):
                vo[q] = va[q]
            if take_a:
                vo[word] &= ~bit
            else:
                vo[word] |= bit
            pool.W2[out] = Wx
            pool.P2[out] = Px
            out += 1
            if Wx <= c and Px >= thr:
                best_W = Wx
                best_P = Px
                best_k = k
                for q in range(VW):
                    best_V[q] = vo[q]
                if decide:
                    found = 1
                    break
                thr = Px + 1.0 if integral else Px + tol
                if ub0 + _slack(psum, ub0 - psum) < thr:
                    found = 1  # the incumbent reached the global bound
                    break
        pool.generated += out
        tmp = pool.W; pool.W = pool.W2; pool.W2 = tmp
        tmp = pool.P; pool.P = pool.P2; pool.P2 = tmp
        tmpv = pool.V; pool.V = pool.V2; pool.V2 = tmpv
        cnt = out
        k += 1

    if best_k < 0:  # nothing beat greedy (optimise) or nothing reached the goal (decide)
        free(seq)
        return 0 if decide else 1
    zout[0] = best_P
    # The break solution, then the remembered core steps flipped.
    for i in range(n):
        x[i] = i < b
    lo = best_k - VBITS + 1
    if lo < 0:
        lo = 0
    for k in range(lo, best_k + 1):
        if (best_V[(k % VBITS) >> 6] >> (k & 63)) & 1:
            x[seq[k]] ^= 1
    if lo == 0:
        free(seq)
        return 1
    # Steps 0 .. lo-1 are forgotten: fix everything else, decide on those items.
    r = _recover(w, v, n, c, seq, lo, best_P, integral, tol, pool, x)
    free(seq)
    return r


cdef Py_ssize_t _recover(const double* w, const double* v, Py_ssize_t n, double c,
                         const Py_ssize_t* seq, Py_ssize_t lo, double value,
                         int integral, double tol, Pool* pool,
                         uint8_t* x) noexcept nogil:
    """``x`` is right except on the items of core steps 0..lo-1: fix the others
    and find those by a *decide* run that must reach ``value`` in total."""
    cdef uint8_t* mark = <uint8_t*>malloc(n)
    cdef uint8_t* subx = <uint8_t*>malloc(lo)
    cdef double* sw = <double*>malloc(lo * sizeof(double))
    cdef double* sv = <double*>malloc(lo * sizeof(double))
    cdef Py_ssize_t i, m = 0, r = -1, bsub
    cdef double wdet = 0, pdet = 0, zsub
    if mark != NULL and subx != NULL and sw != NULL and sv != NULL:
        for i in range(n):
            mark[i] = 0
        for i in range(lo):
            mark[seq[i]] = 1
        for i in range(n):
            if mark[i]:
                sw[m] = w[i]
                sv[m] = v[i]
                m += 1
            elif x[i]:
                wdet += w[i]
                pdet += v[i]
        r = _core(sw, sv, m, c - wdet, 1, value - pdet, integral, tol, pool, subx, &zsub, &bsub)
        if r == 1:
            m = 0
            for i in range(n):
                if mark[i]:
                    x[i] = subx[m]
                    m += 1
        elif r == 0:
            r = -2
    free(mark); free(subx); free(sw); free(sv)
    return r


class StateLimit(Exception):
    """The states outgrew ``max_states`` (the caller turns this into SolverMemoryError)."""


cdef Pool _new_pool(Py_ssize_t max_states):
    cdef Pool pool
    pool.W = NULL; pool.P = NULL; pool.V = NULL
    pool.W2 = NULL; pool.P2 = NULL; pool.V2 = NULL
    pool.cap = 0
    pool.max_states = max_states
    pool.peak = 0
    pool.generated = 0
    pool.runs = 0
    return pool


#: Bytes per state slot (two buffers of weight, value and decision history).
STATE_BYTES = 2 * (16 + 8 * VW)


def solve(const double[::1] w, const double[::1] v, double c, bint integral,
          double tol, Py_ssize_t max_states, uint8_t[::1] sel):
    """The canonical optimal set of items (w, v) within capacity c, into ``sel``.

    ``sel`` (n bytes, zeroed) gets 1 for the chosen items, in the caller's
    (ascending original index) order. Returns a dict of counters; raises
    :class:`StateLimit` when the states would exceed ``max_states``.
    """
    cdef Py_ssize_t n = w.shape[0], b, r, i, k, nu, m, nsub
    cdef double z = 0, lam, L, thr, sl, j, tgt, ub, lag
    if n == 0:
        return {"states": 0, "runs": 0, "free": 0, "queries": 0, "peak_states": 0}
    wa = np.asarray(w)
    va_ = np.asarray(v)
    order = np.lexsort((np.arange(n), -(va_ / wa)))
    ws_a = np.ascontiguousarray(wa[order])
    vs_a = np.ascontiguousarray(va_[order])
    xs_a = np.zeros(n, dtype=np.uint8)
    cdef const double[::1] ws = ws_a, vs = vs_a
    cdef uint8_t[::1] xs = xs_a
    cdef Pool pool = _new_pool(max_states)
    try:
        with nogil:
            r = _core(&ws[0], &vs[0], n, c, 0, 0.0, integral, tol, &pool, &xs[0], &z, &b)
        if r < 0:
            _raise(r, pool)
        S_a = np.zeros(n, dtype=np.uint8)
        S_a[order[xs_a.astype(bool)]] = 1
        stats = {"opt_states": pool.generated, "free": 0, "queries": 0}
        if b == n:
            np.asarray(sel)[:] = S_a
            return _stats(stats, pool)
        # Reduction against OPT with the Lagrangian bound of multiplier lam.
        lam = vs[b] / ws[b]
        d = va_ - lam * wa
        L = lam * c + float(np.maximum(d, 0).sum())
        sl = 1e-9 + 1e-13 * (abs(L) + float(np.abs(d).sum()))
        thr = z - tol
        Sb = S_a.astype(bool)
        fix1 = (L - np.maximum(d, 0) + sl < thr) & Sb
        fix0 = (L + np.minimum(d, 0) + sl < thr) & ~Sb
        free_idx = np.flatnonzero(~(fix1 | fix0))
        nu = free_idx.shape[0]
        stats["free"] = nu
        np.asarray(sel)[:] = fix1
        if nu == 0:
            return _stats(stats, pool)
        r = _canonical(wa, va_, order, free_idx, S_a, c - float(wa[fix1].sum()),
                       float(va_[free_idx][Sb[free_idx]].sum()), lam, d,
                       integral, tol, &pool, stats)
        sel_np = np.asarray(sel)
        sel_np[free_idx] = S_a[free_idx]
        return _stats(stats, pool)
    finally:
        _release(&pool)


cdef _raise(Py_ssize_t r, Pool pool):
    if r == -1:
        raise StateLimit(pool.max_states)
    raise RuntimeError(f"sparse kernel: internal inconsistency (code {r})")


cdef dict _stats(dict stats, Pool pool):
    stats["peak_states"] = pool.peak
    stats["states"] = pool.generated
    stats["runs"] = pool.runs
    return stats


cdef Py_ssize_t _canonical(wa, va_, order, free_idx, S_a, double j, double tgt,
                           double lam, d, int integral, double tol, Pool* pool,
                           dict stats) except -3:
    """Top-down over the free items: keep the canonical (dp_knapsack) choice.

    ``S_a`` holds an optimal set; on return it holds the canonical one on the
    free items. ``j``/``tgt`` are the capacity and value the free items must
    provide.
    """
    cdef Py_ssize_t nu = free_idx.shape[0], k, i, m, nsub, r, queries = 0, q
    cdef double ub, lag, zz, sl
    cdef Py_ssize_t bb
    fw_a = np.ascontiguousarray(wa[free_idx])
    fv_a = np.ascontiguousarray(va_[free_idx])
    cdef const double[::1] fw = fw_a, fv = fv_a
    pre_v_a = np.zeros(nu + 1)
    pre_w_a = np.zeros(nu + 1)
    pre_d_a = np.zeros(nu + 1)
    np.cumsum(fv_a, out=pre_v_a[1:])
    np.cumsum(fw_a, out=pre_w_a[1:])
    np.cumsum(np.maximum(d[free_idx], 0), out=pre_d_a[1:])
    cdef const double[::1] pre_v = pre_v_a, pre_w = pre_w_a, pre_d = pre_d_a
    # rank of each free item (position in free_idx), in efficiency order
    rank_a = np.full(wa.shape[0], -1, dtype=np.intp)
    rank_a[free_idx] = np.arange(nu)
    eff_rank_a = np.ascontiguousarray(rank_a[order][rank_a[order] >= 0])
    cdef const Py_ssize_t[::1] eff_rank = eff_rank_a
    Sf_a = np.ascontiguousarray(S_a[free_idx])
    cdef uint8_t[::1] Sf = Sf_a
    sw_a = np.empty(nu)
    sv_a = np.empty(nu)
    sx_a = np.empty(nu, dtype=np.uint8)
    sr_a = np.empty(nu, dtype=np.intp)
    cdef double[::1] sw = sw_a, sv = sv_a
    cdef uint8_t[::1] sx = sx_a
    cdef Py_ssize_t[::1] sr = sr_a
    r = 0
    with nogil:
        for k in range(nu - 1, -1, -1):
            if not Sf[k]:
                continue
            sl = 1e-9 + 1e-13 * (fabs(tgt) + pre_v[k])
            if pre_w[k] <= j:  # everything below fits: the best is all of it
                if pre_v[k] >= tgt - tol:
                    for m in range(k):
                        Sf[m] = 1
                    Sf[k] = 0
                    continue
            else:
                ub = pre_v[k]
                lag = lam * j + pre_d[k]
                if lag < ub:
                    ub = lag
                if ub + sl >= tgt - tol:
                    # Bounds cannot tell: decide on the free items below k.
                    queries += 1
                    nsub = 0
                    for q in range(nu):
                        m = eff_rank[q]
                        if m < k:
                            sw[nsub] = fw[m]
                            sv[nsub] = fv[m]
                            sr[nsub] = m
                            nsub += 1
                    r = _core(&sw[0], &sv[0], nsub, j, 1, tgt, integral, tol, pool, &sx[0], &zz, &bb)
                    if r < 0:
                        break
                    if r == 1:
                        for q in range(nsub):
                            Sf[sr[q]] = sx[q]
                        Sf[k] = 0
                        continue
                    r = 0
            # Item k is in every optimal set that agrees with the choices above it.
            j -= fw[k]
            tgt -= fv[k]
    if r < 0:
        _raise(r, pool[0])
    stats["queries"] = queries
    S_a[free_idx] = Sf_a
    return 0


def pareto(const double[::1] w, const double[::1] v, double c, Py_ssize_t max_states):
    """All Pareto-optimal (weight, value) pairs of subsets of the items with
    weight <= c, weight ascending and value strictly ascending (the empty set
    included). Raises :class:`StateLimit` beyond ``max_states``."""
    cdef Py_ssize_t n = w.shape[0], i, cnt = 1, ia, ib, out, cap = 0
    cdef Pool pool = _new_pool(max_states)
    cdef double dw, dv, Wx, Px, maxP
    cdef double* tmp
    cdef int take_a, err = 0
    try:
        with nogil:
            if _reserve(&pool, 2) < 0:
                err = 1
            else:
                pool.W[0] = 0
                pool.P[0] = 0
                for i in range(n):
                    dw = w[i]
                    dv = v[i]
                    if _reserve(&pool, 2 * cnt) < 0:
                        err = 1
                        break
                    ia = 0
                    ib = 0
                    out = 0
                    maxP = -INFINITY
                    while ia < cnt:
                        if ib >= cnt or pool.W[ib] + dw > c:
                            take_a = 1
                        else:
                            Wx = pool.W[ib] + dw
                            take_a = pool.W[ia] < Wx or (pool.W[ia] == Wx and pool.P[ia] >= pool.P[ib] + dv)
                        if take_a:
                            Wx = pool.W[ia]
                            Px = pool.P[ia]
                            ia += 1
                        else:
                            Wx = pool.W[ib] + dw
                            Px = pool.P[ib] + dv
                            ib += 1
                        if Px > maxP:
                            maxP = Px
                            pool.W2[out] = Wx
                            pool.P2[out] = Px
                            out += 1
                    while ib < cnt and pool.W[ib] + dw <= c:
                        Wx = pool.W[ib] + dw
                        Px = pool.P[ib] + dv
                        ib += 1
                        if Px > maxP:
                            maxP = Px
                            pool.W2[out] = Wx
                            pool.P2[out] = Px
                            out += 1
                    tmp = pool.W; pool.W = pool.W2; pool.W2 = tmp
                    tmp = pool.P; pool.P = pool.P2; pool.P2 = tmp
                    cnt = out
        if err:
            raise StateLimit(max_states)
        Wr = np.array(<double[:cnt]>pool.W, copy=True)
        Pr = np.array(<double[:cnt]>pool.P, copy=True)
        return Wr, Pr, pool.peak
    finally:
        _release(&pool)
