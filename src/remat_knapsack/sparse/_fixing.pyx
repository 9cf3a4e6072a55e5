# cython: language_level=3
"""Reduction: the items a Lagrangian bound fixes in or out, in two passes.

Private; ``_core.decided`` is its Python face. With multipliers lam >= 0
(weight) and mu (item count) and d_i = v_i - lam w_i - mu, every set X
within c (holding k items when mu != 0) is worth at most

    L = lam c + mu k + sum_i max(0, d_i),

so a set without item i is worth at most L - max(0, d_i), and one with it
at most L + min(0, d_i) (Martello and Toth's reduction; Martello, Pisinger
and Toth 1999 for the count term). Where that falls below a value known to
be reachable, i is in (out of) every optimal set.

Rounding: L and the allowance are summed in blocks of 64 items whose sums
join a compensated total (Neumaier), so their error stays within 65 units
in the last place of the magnitudes summed, whatever n (a plain running
sum drifts by up to n units, beyond the allowance's ``rel`` = 1e-13 at
10^5 items); each bound then carries ``rel`` times those magnitudes plus
an absolute slack, as numpy's pairwise sums did.

Complexity: O(n) time, two passes a bound, no temporaries (``reduce_items``: the
whole reduction of a solve, every bound, in one call). The GIL is released.

>>> import numpy as np
>>> w, v = np.array([1.0, 1.0, 1.0]), np.array([5.0, 2.0, 0.5])
>>> fix_in, fix_out = np.zeros(3, np.uint8), np.zeros(3, np.uint8)
>>> fix_by_bound(w, v, 2.0, 1.5, 0.0, 0.0, 1e-13, 6.5, fix_in, fix_out, None)  # d = 3.5, 0.5, -1
7.0
>>> fix_in.tolist(), fix_out.tolist()  # without the 5: 7 - 3.5 < 6.5; with the 0.5: 7 - 1 < 6.5
([1, 0, 0], [0, 0, 1])
"""

import numpy as np

from libc.math cimport fabs
from libc.stdint cimport uint8_t
from libc.string cimport memset

from ._pool cimport ABS_SLACK
from ._positive cimport positive_part


cdef struct Sum:
    # Neumaier's compensated sum: s + comp is the total to a few ulps
    double s, comp


cdef inline void _add(Sum* a, double x) noexcept nogil:
    cdef double t = a.s + x
    if fabs(a.s) >= fabs(x):
        a.comp += (a.s - t) + x
    else:
        a.comp += (x - t) + a.s
    a.s = t


cdef enum:
    BLOCK = 64  # items summed plainly before their block's sum joins the compensated total


cdef struct Bound:
    double L                    # the bound (module docs)
    double slack                # its rounding allowance
    double top                  # the largest |d_i|: no item is marked when it is within the gap


cdef inline void _item(const double* w, const double* v, Py_ssize_t i, double lam, double mu, double* d,
                       double* gain, double* mag, double* top) noexcept nogil:
    """Item i's d_i = v_i - lam w_i - mu (into ``d`` when not NULL) joins
    one part's sums of max(0, d_i) and |d_i| and its largest |d_i|."""
    cdef double di = v[i] - lam * w[i] - mu
    if d != NULL:
        d[i] = di
    gain[0] += positive_part(di)
    mag[0] += fabs(di)
    if fabs(di) > top[0]:
        top[0] = fabs(di)


cdef void _block_sums(const double* w, const double* v, Py_ssize_t lo, Py_ssize_t hi, double lam, double mu,
                      double* d, double* gain, double* mag, double* top) noexcept nogil:
    """Over items lo..hi-1: the sum of max(0, d_i) into ``gain``, of |d_i|
    into ``mag``, and max(top, largest |d_i|) into ``top`` (``_item``), in
    four parts (items i, i + 1, i + 2, i + 3 of each step): additions that
    overlap instead of waiting on each other; the parts are added at the end."""
    cdef double g0 = 0, g1 = 0, g2 = 0, g3 = 0, m0 = 0, m1 = 0, m2 = 0, m3 = 0
    cdef double t0 = top[0], t1 = top[0], t2 = top[0], t3 = top[0]
    cdef Py_ssize_t i = lo
    while i + 4 <= hi:
        _item(w, v, i, lam, mu, d, &g0, &m0, &t0)
        _item(w, v, i + 1, lam, mu, d, &g1, &m1, &t1)
        _item(w, v, i + 2, lam, mu, d, &g2, &m2, &t2)
        _item(w, v, i + 3, lam, mu, d, &g3, &m3, &t3)
        i += 4
    while i < hi:
        _item(w, v, i, lam, mu, d, &g0, &m0, &t0)
        i += 1
    gain[0] = (g0 + g1) + (g2 + g3)
    mag[0] = (m0 + m1) + (m2 + m3)
    top[0] = max(max(t0, t1), max(t2, t3))


cdef void _bound(const double* w, const double* v, Py_ssize_t n, double c, double lam, double mu,
                 double k, double rel, double* d, Bound* out) noexcept nogil:
    """L (module docs), its rounding allowance and the largest |d_i| into
    ``out``; when ``d`` is not NULL, the reduced profits into it."""
    cdef Sum gain, mag
    cdef Py_ssize_t blk
    cdef double g, m, top = 0.0
    gain.s = gain.comp = mag.s = mag.comp = 0.0
    for blk in range((n + BLOCK - 1) // BLOCK):
        _block_sums(w, v, blk * BLOCK, min((blk + 1) * BLOCK, n), lam, mu, d, &g, &m, &top)
        _add(&gain, g)
        _add(&mag, m)
    out.L = lam * c + mu * k + (gain.s + gain.comp)
    out.slack = ABS_SLACK + rel * (fabs(out.L) + (mag.s + mag.comp) + fabs(mu) * n)
    out.top = top


cdef void _mark(const double* w, const double* v, Py_ssize_t n, double lam, double mu, const Bound* b,
                double thr, uint8_t* fix_in, uint8_t* fix_out) noexcept nogil:
    """Item i into ``fix_in`` when L - max(0, d_i) + sl < thr, into
    ``fix_out`` when L + min(0, d_i) + sl < thr (marks set, none cleared):
    with gap = L + sl - thr, when d_i > gap (< -gap), and every item both
    ways when gap < 0 (no set reaches thr). No pass when every |d_i| is
    within the gap (the same d_i: the same expression, evaluated alike)."""
    cdef Py_ssize_t i
    cdef double di, gap = b.L + b.slack - thr
    if gap < 0:
        memset(fix_in, 1, n)
        memset(fix_out, 1, n)
        return
    if b.top <= gap:
        return
    for i in range(n):  # branch-free: most comparisons go either way at random
        di = v[i] - lam * w[i] - mu
        fix_in[i] |= di > gap
        fix_out[i] |= di < -gap


def fix_by_bound(const double[::1] w, const double[::1] v, double c, double lam, double mu, double k,
                 double rel, double thr, uint8_t[::1] fix_in, uint8_t[::1] fix_out, double[::1] d):
    """Mark the items whose exclusion (``fix_in``) or inclusion
    (``fix_out``) bounds every set below ``thr`` (module docs), with the
    rounding allowance ``rel``; ``d`` (or None) gets v - lam w - mu.
    Returns L. Marks are only set, so several bounds can mark one array."""
    cdef Py_ssize_t n = w.shape[0]
    cdef Bound bd
    cdef double* dp = NULL
    if v.shape[0] != n or fix_in.shape[0] != n or fix_out.shape[0] != n or (d is not None and d.shape[0] != n):
        raise ValueError("fix_by_bound: the arrays must have one entry per item")
    if n == 0:
        return lam * c + mu * k
    if d is not None:
        dp = &d[0]
    with nogil:
        _bound(&w[0], &v[0], n, c, lam, mu, k, rel, dp, &bd)
        _mark(&w[0], &v[0], n, lam, mu, &bd, thr, &fix_in[0], &fix_out[0])
    return bd.L


cdef void _and_into(uint8_t* a, const uint8_t* b, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        a[i] &= b[i]


cdef struct Kept:
    Py_ssize_t free             # the positions fixed neither way
    double weight_in            # the weight of the items fixed in
    double value_free           # the witness's value on the free items


cdef double _masked_sum(const double* x, const uint8_t* mask, Py_ssize_t n) noexcept nogil:
    """The sum of x[i] where mask[i] (0/1 bytes), in index order within four
    parts (items i, i + 1, i + 2, i + 3 of each step) added at the end: the
    additions overlap instead of waiting on each other."""
    cdef double s0 = 0, s1 = 0, s2 = 0, s3 = 0
    cdef Py_ssize_t i = 0
    while i + 4 <= n:  # times 0 or 1, exact: no branch to mispredict on a random mask
        s0 += x[i] * mask[i]
        s1 += x[i + 1] * mask[i + 1]
        s2 += x[i + 2] * mask[i + 2]
        s3 += x[i + 3] * mask[i + 3]
        i += 4
    while i < n:
        s0 += x[i] * mask[i]
        i += 1
    return (s0 + s1) + (s2 + s3)


cdef double _gathered_masked_sum(const double* x, const uint8_t* mask, const Py_ssize_t* at,
                                 Py_ssize_t m) noexcept nogil:
    """The sum of x[at[q]] where mask[at[q]] (0/1 bytes), q < m, in four
    parts as ``_masked_sum``: one running sum waited on each addition, about
    half of ``reduce_items`` where every item is free (10^4 items)."""
    cdef double s0 = 0, s1 = 0, s2 = 0, s3 = 0
    cdef Py_ssize_t q = 0
    while q + 4 <= m:
        s0 += x[at[q]] * mask[at[q]]
        s1 += x[at[q + 1]] * mask[at[q + 1]]
        s2 += x[at[q + 2]] * mask[at[q + 2]]
        s3 += x[at[q + 3]] * mask[at[q + 3]]
        q += 4
    while q < m:
        s0 += x[at[q]] * mask[at[q]]
        q += 1
    return (s0 + s1) + (s2 + s3)


cdef void _free_positions(uint8_t* fix_in, const uint8_t* fix_out, const uint8_t* witness,
                          const double* w, const double* v, Py_ssize_t n, Py_ssize_t* free,
                          Kept* kept) noexcept nogil:
    """Keep the marks the witness agrees with (fixed in where it takes the
    item, out where it does not): ``fix_in`` is left with the first; the
    positions fixed neither way into ``free``, ascending, and their count,
    the fixed-in weight (``_masked_sum``) and the witness's value on the
    free items into ``kept``. (Plain pointers held in registers: a byte
    store through a typed view's data could alias the view itself, and the
    view would be read again on every item.)"""
    cdef Py_ssize_t i, nfree = 0
    cdef uint8_t into, out
    for i in range(n):
        into = fix_in[i] & witness[i]
        out = fix_out[i] & (witness[i] ^ 1)
        fix_in[i] = into
        free[nfree] = i
        nfree += (into | out) ^ 1
    # times 0 or 1, exact: no branch to mispredict (every item may be free)
    kept.free, kept.weight_in = nfree, _masked_sum(w, fix_in, n)
    kept.value_free = _gathered_masked_sum(v, witness, free, nfree)


def reduce_items(const double[::1] w, const double[::1] v, double c, double thr, const uint8_t[::1] witness,
                 double[::1] d, list each, list every):
    """The items no optimal set can change, in one call: those that some
    bound of ``each`` fixes, or that every bound of ``every`` fixes (the
    bounds of the counts an optimal set can have: an item is decided when
    each count's bound decides it), all against ``thr`` (``fix_by_bound``).
    Bounds are (lam, mu, k, rel) tuples; ``d`` gets the reduced profits of
    the first of ``each``. ``witness``: an optimal set (0/1 bytes), which
    every fixed item agrees with. Returns (the free positions, ascending;
    the fixed-in items as 0/1 bytes; their weight; the witness's value on
    the free items), the sums in index order."""
    cdef Py_ssize_t n = w.shape[0], i, t
    cdef Bound bd
    cdef Kept kept
    cdef double lam, mu, k, rel
    if v.shape[0] != n or witness.shape[0] != n or d.shape[0] != n:
        raise ValueError("reduce_items: the arrays must have one entry per item")
    fix_in_a, fix_out_a = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    free_a = np.empty(n, np.intp)
    cdef uint8_t[::1] fix_in = fix_in_a, fix_out = fix_out_a
    cdef Py_ssize_t[::1] free = free_a
    cdef uint8_t[::1] all_in, all_out, one_in, one_out
    if n == 0:
        return free_a, fix_in_a, 0.0, 0.0
    for t, (lam, mu, k, rel) in enumerate(each):
        with nogil:
            _bound(&w[0], &v[0], n, c, lam, mu, k, rel, &d[0] if t == 0 else NULL, &bd)
            _mark(&w[0], &v[0], n, lam, mu, &bd, thr, &fix_in[0], &fix_out[0])
    if every:
        all_in, all_out = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
        one_in, one_out = np.empty(n, np.uint8), np.empty(n, np.uint8)
        for t, (lam, mu, k, rel) in enumerate(every):
            with nogil:
                _bound(&w[0], &v[0], n, c, lam, mu, k, rel, NULL, &bd)
                if t == 0:
                    _mark(&w[0], &v[0], n, lam, mu, &bd, thr, &all_in[0], &all_out[0])
                else:
                    memset(&one_in[0], 0, n)
                    memset(&one_out[0], 0, n)
                    _mark(&w[0], &v[0], n, lam, mu, &bd, thr, &one_in[0], &one_out[0])
                    _and_into(&all_in[0], &one_in[0], n)
                    _and_into(&all_out[0], &one_out[0], n)
        with nogil:
            for i in range(n):
                fix_in[i] |= all_in[i]
                fix_out[i] |= all_out[i]
    with nogil:
        _free_positions(&fix_in[0], &fix_out[0], &witness[0], &w[0], &v[0], n, &free[0], &kept)
    return free_a[:kept.free], fix_in_a, kept.weight_in, kept.value_free


def _positive_part_py(double x):
    """For tests: ``_positive.positive_part`` of x."""
    return positive_part(x)
