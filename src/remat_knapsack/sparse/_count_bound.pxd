# cython: language_level=3
"""The count bound: an upper bound on the value of every set of exactly k
items within the capacity (the cardinality bounds of Martello, Pisinger and
Toth), with the multipliers (lam, mu) that give it (``_count_bound``).

Inline, for ``_sparse`` (``Workspace.count_bound``, the count path's bounds)
and ``_expand`` (the multipliers refitted to what a count window leaves
free, ``_window_items.pxd``).
"""

from libc.math cimport fabs, INFINITY, NAN
from libc.stdint cimport uint64_t
from libc.string cimport memset

from ._pool cimport REL_SEARCH, Pool, _tick


cdef struct DI:
    double d
    Py_ssize_t i


cdef inline void _select(DI* a, Py_ssize_t m, Py_ssize_t k) noexcept nogil:
    """Reorder a[0..m) so that its k largest ``d`` come first (quickselect,
    pseudo-random pivots; 1 <= k <= m)."""
    cdef Py_ssize_t lo = 0, hi = m - 1, i, j
    cdef uint64_t seed = 0x9E3779B97F4A7C15
    cdef double p
    cdef DI tmp
    while lo < hi:
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL
        p = a[lo + <Py_ssize_t>((seed >> 33) % <uint64_t>(hi - lo + 1))].d
        i = lo
        j = hi
        while i <= j:
            while a[i].d > p:
                i += 1
            while a[j].d < p:
                j -= 1
            if i <= j:
                tmp = a[i]
                a[i] = a[j]
                a[j] = tmp
                i += 1
                j -= 1
        if k - 1 <= j:
            hi = j
        elif k - 1 >= i:
            lo = i
        else:
            return


cdef inline double _topk(const double* w, const double* v, DI* a, const Py_ssize_t* cand,
                         Py_ssize_t m, Py_ssize_t k, double lam, double* theta,
                         double* wtop) noexcept nogil:
    """Sum of the k largest v - lam w over the candidates; their weight into
    ``wtop`` and the k-th largest into ``theta``."""
    cdef Py_ssize_t q
    cdef double tot = 0, wt = 0
    for q in range(m):
        a[q].d = v[cand[q]] - lam * w[cand[q]]
        a[q].i = cand[q]
    _select(a, m, k)
    theta[0] = a[k - 1].d
    for q in range(k):
        tot += a[q].d
        wt += w[a[q].i]
    wtop[0] = wt
    return tot


cdef inline double _topk_at(const double* w, const double* v, Py_ssize_t n, Py_ssize_t k, double lam,
                            double th, double* theta) noexcept nogil:
    """``_topk`` over all n items in one pass when ``th`` is their k-th
    largest v - lam w (the search's last probe at lam): the sum of the k
    largest, ``th`` into ``theta``; NaN when ``th`` is not the k-th largest."""
    cdef Py_ssize_t q, above = 0, at = 0
    cdef double d, tot = 0
    for q in range(n):
        d = v[q] - lam * w[q]
        if d > th:
            above += 1
            tot += d
        elif d == th:
            at += 1
    if not (above < k <= above + at):
        return NAN
    theta[0] = th
    return tot + (k - above) * th


cdef struct Bracket:
    # The count bound's multiplier search: g(lam) = lam c + (sum of the k
    # largest v_j - lam w_j), its slope s = c - (their weight) and the k-th
    # largest reduced profit th, at both ends of [lo, hi] (lo < 0: no end
    # with a negative slope found yet; hi < 0: none with a positive one).
    double lo, glo, slo, thlo
    double hi, ghi, shi, thhi
    Py_ssize_t m                # candidates left (``cand[:m]``)
    Py_ssize_t kin              # items surely among the k largest, set aside
    double win, vin             # ... their weight and value


cdef inline void _probe(Bracket* br, double x, double gx, double slope, double th) noexcept nogil:
    """g at x becomes the lower end (negative slope) or the upper one."""
    if slope < 0:
        br.lo, br.glo, br.slo, br.thlo = x, gx, slope, th
    else:
        br.hi, br.ghi, br.shi, br.thhi = x, gx, slope, th


cdef inline bint _bracket(const double* w, const double* v, Py_ssize_t n, double c, Py_ssize_t k,
                          double hint, DI* a, Py_ssize_t* cand, Bracket* br, Pool* pool) noexcept nogil:
    """From ``hint``, steps growing geometrically until g's slope changes sign
    (or lam = 0 has a positive one: the k most valuable items fit). Returns
    False on an interrupt."""
    cdef double x = hint, step = hint / 64, th, wt, gx
    cdef Py_ssize_t _it
    br.lo = br.hi = -1
    for _it in range(4200):
        if pool != NULL and _tick(pool, n):
            return False
        gx = x * c + _topk(w, v, a, cand, n, k, x, &th, &wt)
        _probe(br, x, gx, c - wt, th)
        if (br.lo >= 0 and br.hi >= 0) or br.hi == 0:
            break
        x = (br.hi - step if br.hi - step > 0 else 0.0) if br.lo < 0 else br.lo + step
        step *= 2
    return True


cdef inline void _set_aside(const double* w, const double* v, Py_ssize_t* cand, Bracket* br) noexcept nogil:
    """theta(lam) is non-increasing: keep only the items that can cross it on
    [lo, hi]; those above it on the whole bracket are among the k largest."""
    cdef double eps = REL_SEARCH * (fabs(br.thlo) + fabs(br.thhi) + 1)
    cdef Py_ssize_t q, j = 0
    for q in range(br.m):
        if v[cand[q]] - br.hi * w[cand[q]] > br.thlo + eps:
            br.kin += 1
            br.win += w[cand[q]]
            br.vin += v[cand[q]]
        elif v[cand[q]] - br.lo * w[cand[q]] >= br.thhi - eps:
            cand[j] = cand[q]
            j += 1
    br.m = j


cdef inline bint _narrow(const double* w, const double* v, double c, Py_ssize_t k, DI* a,
                         Py_ssize_t* cand, Bracket* br, Pool* pool) noexcept nogil:
    """Intersect the tangents at the bracket's ends (bisection every fourth
    step, or when that stalls) until the tangents meet on g: then ``br.hi``
    minimises it. Returns False on an interrupt."""
    cdef Py_ssize_t it, kk
    cdef double x, tan, gx, th, wt
    _set_aside(w, v, cand, br)
    for it in range(100):
        if pool != NULL and _tick(pool, br.m):
            return False
        kk = k - br.kin
        if br.shi == 0 or kk <= 0 or kk >= br.m:
            break
        x = (br.ghi - br.glo + br.slo * br.lo - br.shi * br.hi) / (br.slo - br.shi)
        tan = br.glo + br.slo * (x - br.lo)  # g >= both tangents; equal at the minimum
        if not (br.lo < x < br.hi) or it % 4 == 3:
            x = 0.5 * (br.lo + br.hi)
            tan = -INFINITY
            if not (br.lo < x < br.hi):
                break
        gx = x * c + br.vin - x * br.win + _topk(w, v, a, cand, br.m, kk, x, &th, &wt)
        if gx <= tan + REL_SEARCH * fabs(gx):
            br.hi, br.thhi = x, th
            break
        _probe(br, x, gx, c - br.win - wt, th)
        _set_aside(w, v, cand, br)
    return True


cdef inline double _count_bound(const double* w, const double* v, Py_ssize_t n, double c,
                                Py_ssize_t k, double hint, DI* a, Py_ssize_t* cand,
                                double* lam_out, double* mu_out, Pool* pool) noexcept nogil:
    """An upper bound on the value of every set of exactly k items within c.

    For lam >= 0 and any mu, v(X) <= lam c + mu k + sum_j max(0, v_j - lam w_j - mu)
    when |X| = k and w(X) <= c; with mu the k-th largest v_j - lam w_j this is
    g(lam) = lam c + (sum of the k largest v_j - lam w_j), convex and piecewise
    linear in lam, whose minimum is the LP relaxation with the count
    constraint added (the cardinality bounds of Martello, Pisinger and Toth,
    Management Science 45, 1999). Its slope is c - (weight of those k items).
    The minimum is bracketed (``hint``: a nearby lam, or <= 0) and found by
    intersecting the tangents at the bracket's ends (bisection when that
    stalls); items surely in (or out of) the k largest on the whole bracket
    are set aside. The bound returned is recomputed from all items with the
    final lam, so it is valid whatever the precision of the search. Needs
    1 <= k <= n, and k items that fit (the k lightest). On an interrupt
    (``pool.stop``, ``pool`` may be NULL) the result is meaningless.
    """
    cdef Bracket br
    cdef Py_ssize_t q
    cdef double lam, tot, mu, wt
    memset(&br, 0, sizeof(Bracket))
    br.m = n
    for q in range(n):
        cand[q] = q
    if not _bracket(w, v, n, c, k, hint if hint > 0 else 1.0, a, cand, &br, pool):
        return INFINITY
    lam = br.hi if br.hi > 0 else 0.0
    if br.lo >= 0 and br.hi > 0:
        if not _narrow(w, v, c, k, a, cand, &br, pool):
            return INFINITY
        lam = br.hi
    tot = _topk_at(w, v, n, k, lam, br.thhi if lam == br.hi else INFINITY, &mu)
    if tot != tot:  # not the k-th largest there: select it
        for q in range(n):
            cand[q] = q
        tot = _topk(w, v, a, cand, n, k, lam, &mu, &wt)
    lam_out[0] = lam
    mu_out[0] = mu
    return lam * c + tot
