# cython: language_level=3
"""Compiled kernels of the sparse solver: DP over Pareto-optimal (weight, value) states.

Private. ``remat_knapsack.sparse._solver`` validates, checks memory and calls these.
Weights are float64 here (integers below 2**53 are exact in float64, and
``scale=None`` weights are float64 anyway); values are float64 > 0.

The pieces:

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
    (Pisinger's own device), so memory stays O(states + n). *Count mode*
    (``Card.kfix`` >= 0): only sets of exactly kfix items, items in order of
    reduced profit, the count bound of ``_count_bound`` per state.

``_count_bound``
    The LP bound of every set of exactly k items (the cardinality bounds of
    Martello, Pisinger and Toth), for the count path in ``_solver.py``.

``Workspace``
    One solve's pool and multipliers, and the runs the orchestration in
    ``_solver.py`` (``_kernel``) calls: ``optimum`` (OPT from one *optimise*
    run; it stops early at the class-count bound of ``_lines`` when the
    items lie on two lines), ``count_bound`` and ``count_run`` (the count
    path's bound and runs). The canonical set among the optimal ones is
    ``_canonical``'s, with decide runs of ``_core`` in the same workspace.

What both share (result codes, the pool, the card, the rounding
allowances, ``_core``'s signature) is declared in ``_sparse.pxd``.
"""

import numpy as np

from libc.math cimport fabs, floor, INFINITY, NAN
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memset

from .._common._interrupt cimport raise_pending
from ._pairs cimport Pair, Pairs, pair_pass, pairs_free, pairs_init
from ._positive cimport positive_part
from ._order import descending
from ._count_window cimport (WINDOW_EMPTY, WINDOW_FIXES, WINDOW_NONE, Window, count_window,
                             window_of_lightest)
from ._radix cimport sort_ascending
from ._select cimport lightest_count, lightest_k
from .._common._realloc cimport grow


cdef int _reserve(Pool* pool, Py_ssize_t need) noexcept nogil:
    """Make room for ``need`` states in both buffers; -1 if over ``max_states``."""
    cdef Py_ssize_t nc
    if need <= pool.cap:
        return 0
    if need > pool.max_states:
        return -1
    nc = pool.cap + pool.cap // 2  # grow by half: the peak stays close to the need
    if nc < need:
        nc = need
    if nc < 256:
        nc = 256
    if nc > pool.max_states:
        nc = pool.max_states
    if (grow(<void**>&pool.W, nc * sizeof(double)) < 0
            or grow(<void**>&pool.P, nc * sizeof(double)) < 0
            or grow(<void**>&pool.V, nc * VW * sizeof(uint64_t)) < 0
            or grow(<void**>&pool.K, nc * sizeof(int32_t)) < 0
            or grow(<void**>&pool.W2, nc * sizeof(double)) < 0
            or grow(<void**>&pool.P2, nc * sizeof(double)) < 0
            or grow(<void**>&pool.V2, nc * VW * sizeof(uint64_t)) < 0
            or grow(<void**>&pool.K2, nc * sizeof(int32_t)) < 0):
        return -1
    pool.cap = nc
    if nc > pool.peak:
        pool.peak = nc
    return 0


cdef void _release(Pool* pool) noexcept nogil:
    free(pool.W)
    free(pool.P)
    free(pool.V)
    free(pool.W2)
    free(pool.P2)
    free(pool.V2)
    free(pool.K)
    free(pool.K2)
    _clear(pool)


cdef void _clear(Pool* pool) noexcept nogil:
    """No buffers: what a new pool starts with and a released one returns to."""
    pool.K = NULL
    pool.K2 = NULL
    pool.W = NULL
    pool.P = NULL
    pool.V = NULL
    pool.W2 = NULL
    pool.P2 = NULL
    pool.V2 = NULL
    pool.cap = 0


cdef inline void _swap(Pool* pool) noexcept nogil:
    """The list just merged (``W2, P2, V2, K2``) becomes the current one."""
    cdef double* t
    cdef uint64_t* tv
    cdef int32_t* tk
    t = pool.W
    pool.W = pool.W2
    pool.W2 = t
    t = pool.P
    pool.P = pool.P2
    pool.P2 = t
    tv = pool.V
    pool.V = pool.V2
    pool.V2 = tv
    tk = pool.K
    pool.K = pool.K2
    pool.K2 = tk


cdef inline double _lp_state_bound(double W, double P, double c, double et, double es,
                                   bint can_remove) noexcept nogil:
    """Pisinger's bound of a state, with its rounding allowance: P + (c - W) e_t
    when it fits (e_t: the next item to add), P - (W - c) e_s when it must
    still shed weight (e_s: the next item to remove; -inf when there is none)."""
    cdef double term
    if W <= c:
        term = (c - W) * et
    elif can_remove:
        term = -(W - c) * es
    else:
        return -INFINITY
    return P + term + _slack(P, term)


cdef inline double _count_state_bound(const double* D, Py_ssize_t n, Py_ssize_t s, Py_ssize_t t,
                                      Py_ssize_t nd, double W, double P, double kc, double c,
                                      double lcmk, double lam, double mu) noexcept nogil:
    """Count mode: the bound of a state of kc items that must end with kfix =
    kc + nd. ``D``: prefix sums of the reduced profits d = v - lam w - mu in
    the run's order; the state still adds the nd best items after t, or sheds
    the -nd worst before s + 1, or (nd = 0) makes one swap or none. -inf when
    it cannot reach kfix. ``lcmk`` = lam c + mu kfix."""
    cdef double dj, ub
    if nd > 0:  # the nd best items still to add
        if t + nd > n:
            return -INFINITY
        dj = D[t + nd] - D[t]
    elif nd < 0:  # the -nd worst items still to remove
        if s + 1 + nd < 0:
            return -INFINITY
        dj = D[s + 1 + nd] - D[s + 1]
    elif t < n and s >= 0:  # one swap, or none
        dj = (D[t + 1] - D[t]) - (D[s + 1] - D[s])
    else:
        dj = -INFINITY
    ub = lcmk + (P - lam * W - mu * kc) + dj
    if nd == 0 and W <= c and P > ub:
        ub = P
    return ub


cdef Py_ssize_t _thin(Pool* pool, Py_ssize_t out) noexcept nogil:
    """A heuristic run's step: keep ``pool.beam`` of the ``out`` merged states,
    evenly spread by weight (the list stays sorted). Returns the new count."""
    cdef Py_ssize_t q, i, m
    for q in range(pool.beam):
        i = (q * out) // pool.beam
        pool.W2[q] = pool.W2[i]
        pool.P2[q] = pool.P2[i]
        pool.K2[q] = pool.K2[i]
        for m in range(VW):
            pool.V2[q * VW + m] = pool.V2[i * VW + m]
    return pool.beam


cdef inline double _slack(double a, double b) noexcept nogil:
    """Rounding allowance of a bound a + b computed in float64."""
    return ABS_SLACK + REL_SUM * (fabs(a) + fabs(b))


cdef int _cmp_desc(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*>a)[0], y = (<const double*>b)[0]
    return (x < y) - (x > y)


cdef int _local_counts(const double* w, const double* v, Py_ssize_t n, double c,
                       Card* out, double** topv) noexcept nogil:
    """kmax and the value prefix sums of this item set (for decide runs on
    subsets, whose counts are tighter than the whole instance's)."""
    cdef double* t = <double*>malloc((n + 1) * sizeof(double))
    cdef double* ww = <double*>malloc((n + 1) * sizeof(double))
    cdef Py_ssize_t i
    cdef double acc = 0
    if t == NULL or ww == NULL:
        free(t)
        free(ww)
        return -1
    for i in range(n):
        t[i + 1] = v[i]
        ww[i] = -w[i]
    qsort(&t[1], n, sizeof(double), _cmp_desc)
    qsort(ww, n, sizeof(double), _cmp_desc)  # -w descending = w ascending
    t[0] = 0
    for i in range(n):
        t[i + 1] += t[i]
    out.kmax = n
    for i in range(n):
        acc -= ww[i]
        if acc > c:
            out.kmax = i
            break
    free(ww)
    out.topv = t
    out.ntop = n
    topv[0] = t
    return 0


cdef double _kcount(const Card* card, double goal) noexcept nogil:
    """The k of the cardinality term: kmax, or when mu < 0 the fewest items
    whose values (largest first) can reach ``goal``."""
    cdef Py_ssize_t lo = 0, hi = card.ntop, mid
    if card.mu >= 0:
        return card.kmax
    if card.topv[hi] * (1 + REL_SEARCH) + ABS_SLACK < goal:
        return <double>(hi + 1)  # unreachable: any k > n makes the bound prune
    while lo < hi:
        mid = (lo + hi) // 2
        if card.topv[mid] * (1 + REL_SEARCH) + ABS_SLACK >= goal:
            hi = mid
        else:
            lo = mid + 1
    return <double>lo


cdef struct DI:
    double d
    Py_ssize_t i


cdef void _select(DI* a, Py_ssize_t m, Py_ssize_t k) noexcept nogil:
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


cdef double _topk(const double* w, const double* v, DI* a, const Py_ssize_t* cand,
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


cdef double _topk_at(const double* w, const double* v, Py_ssize_t n, Py_ssize_t k, double lam,
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


cdef bint _bracket(const double* w, const double* v, Py_ssize_t n, double c, Py_ssize_t k,
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


cdef void _set_aside(const double* w, const double* v, Py_ssize_t* cand, Bracket* br) noexcept nogil:
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


cdef bint _narrow(const double* w, const double* v, double c, Py_ssize_t k, DI* a,
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


cdef double _count_bound(const double* w, const double* v, Py_ssize_t n, double c,
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

cdef inline double _threshold(int decide, double goal, double gp, int integral,
                              double tol) noexcept nogil:
    """The value a state must reach: the goal (decide), or more than the
    best of ``goal`` (a value known reachable) and ``gp`` (optimise)."""
    if decide:
        return goal - tol
    if gp > goal:
        goal = gp
    return goal + 1.0 if integral else goal + tol


cdef Py_ssize_t _break_greedy(const double* w, const double* v, Py_ssize_t n, double c,
                              uint8_t* x, double* wsum, double* psum, double* gp) noexcept nogil:
    """Core set-up: the break item b (the first in efficiency order that no
    longer fits) and the break solution (items before b: weight ``wsum``,
    value ``psum``); ``x`` gets the greedy set (the break solution, then every
    later item that still fits), ``gp`` its value. Returns b."""
    cdef Py_ssize_t b = 0, i
    cdef double gw
    wsum[0] = 0
    psum[0] = 0
    while b < n and wsum[0] + w[b] <= c:
        wsum[0] += w[b]
        psum[0] += v[b]
        b += 1
    for i in range(n):
        x[i] = i < b
    gw = wsum[0]
    gp[0] = psum[0]
    for i in range(b, n):
        if gw + w[i] <= c:
            x[i] = 1
            gw += w[i]
            gp[0] += v[i]
    return b


cdef void _reduced_sums(const double* w, const double* v, Py_ssize_t n, double lam, double mu,
                        double* A, double* B) noexcept nogil:
    """Bound helper: with reduced profits d_j = v_j - lam w_j - mu, A[i] sums
    the positive d_j of items i.. (what adding can still gain) and B[i] the
    -d_j of negative ones before i (what removing can still gain)."""
    cdef Py_ssize_t i
    cdef double dj
    A[n] = 0
    for i in range(n - 1, -1, -1):
        dj = v[i] - lam * w[i] - mu
        A[i] = A[i + 1] + (dj if dj > 0 else 0)
    B[0] = 0
    for i in range(n):
        dj = v[i] - lam * w[i] - mu
        B[i + 1] = B[i] + (-dj if dj < 0 else 0)


cdef inline bint _pair_now(Py_ssize_t out, Py_ssize_t n, Py_ssize_t step, Py_ssize_t last,
                           Py_ssize_t beam) noexcept nogil:
    """When a step's ``out`` states are paired (``_pairs.pxd``): once they are
    a quarter of the items and again each time they double, so a pass costs
    no more than the steps before it; under a beam (capped states), once the
    beam is full, every n / (2 beam) steps (a pass, O(n + states), then
    costs about what those steps do), at least every ``PAIR_EVERY``."""
    if PAIR_MIN == 1:
        return True
    if beam > 0 and out >= beam:
        return step % max(1, min(PAIR_EVERY, n // (2 * beam))) == 0
    return out >= 2 * last and 4 * out >= n


cdef struct Run:
    # One ``_core`` run: the question, the core, the bounds and the incumbent.
    const double* w          # the items, in the run's order (efficiency, or reduced profit in count mode)
    const double* v
    Py_ssize_t n
    double c
    int decide               # 1: reach ``goal``; 0: beat the incumbent
    double goal
    int integral             # values are integers: a better set is worth 1 more
    double tol
    const Card* card         # the count bound's multipliers and counts, or NULL
    Py_ssize_t b             # the start state holds items 0 .. b-1 (the break solution, or kfix items)
    Py_ssize_t s             # the next item to remove (-1: none left)
    Py_ssize_t t             # the next item to add (n: none left)
    Py_ssize_t* seq          # seq[k]: the item core step k decided
    double wsum              # the start state's weight and value
    double psum
    double gp                # the value known reachable at the start (greedy), -inf if none
    double thr               # a state must reach this to become the incumbent (or to answer ``goal``)
    double ub0               # Dantzig's bound at the root (INFINITY in count mode)
    double ubc               # the count bound at the root (INFINITY without one)
    # The cardinality bound of every state (A != NULL):
    #   P + lam (c - W) + mu (kk - K) + A[t] + B[s + 1] (``_reduced_sums``)
    double lam
    double mu
    double kk
    double sl2               # rounding allowance of the count bounds
    double* A
    double* B
    Card lc                  # this run's own counts (decide runs on subsets: ``_local_counts``)
    double* ltop
    # Count mode (cm): sets of exactly kf items; D: prefix sums of d = v - lam w - mu.
    int cm
    double kf
    double lcmk              # lam c + mu kf
    double* D
    # The incumbent: value, core step, decision bits, the paired item (-1: none).
    double best_P
    Py_ssize_t best_k
    Py_ssize_t best_item
    uint64_t best_V[VW]
    bint found               # stop: the goal is reached, or the incumbent meets a global bound
    # Avoid mode (decide runs only): a set that differs from ``avoid`` on one
    # of its items in range must reach the goal (``AVOID_FREE``: out of range).
    # Some set that agrees with it in range must fit and reach the goal (the
    # canonical pass's witness does): every item where a set can differ from
    # it is then one a set reaching the goal flips, so the core reaches it.
    # A state's class bit (``CLASS_D`` in its count K) says whether it already
    # does; the others (A) may still: D states dominate both classes, A
    # states only A states, and only D states answer.
    const uint8_t* avoid
    # Identical copies (``Pool.twin``, avoid mode): the previous copy of each
    # item in the run's order (-1: none; the core steps follow adjacent
    # links only, ``_linked``), and the core step that decided each item
    # (-1: none yet).
    const Py_ssize_t* twin
    Py_ssize_t* step_of


cdef void _free_run(Run* r) noexcept nogil:
    """The scratch buffers a run allocates (any may be NULL)."""
    free(r.seq)
    free(r.A)
    free(r.B)
    free(r.ltop)
    free(r.D)
    free(r.step_of)
    r.step_of = NULL
    r.seq = r.A = NULL
    r.B = r.ltop = r.D = NULL


cdef inline Py_ssize_t _nothing_better(const Run* r) noexcept nogil:
    """The result when no state beats the start: decide runs found nothing;
    optimise runs keep the greedy set (FOUND if it reaches the goal given)."""
    if r.decide:
        return NOT_FOUND
    return FOUND if r.gp >= r.goal else NO_BETTER


cdef Py_ssize_t _count_start(Run* r, uint8_t* x) noexcept nogil:
    """Set-up of a count-mode run: the start state is the first ``kfix`` items
    (the count-constrained LP's set); ``r.gp`` its value when it fits (-inf
    otherwise); ``r.D`` the prefix sums of d_j = v_j - lam w_j - mu; the
    count bound at the root. Returns GO_ON, else the run's result."""
    cdef const Card* card = r.card
    cdef Py_ssize_t i, b
    cdef double sabs = 0
    if card.kfix > r.n:
        r.gp = -INFINITY
        return NOT_FOUND if r.decide else NO_BETTER
    b = r.b = <Py_ssize_t>card.kfix
    r.D = <double*>malloc((r.n + 1) * sizeof(double))
    if r.D == NULL:
        return STATE_LIMIT
    r.D[0] = 0
    for i in range(r.n):
        x[i] = i < b
        r.D[i + 1] = r.D[i] + (r.v[i] - card.lam * r.w[i] - card.mu)
        sabs += r.v[i] + card.lam * r.w[i]
        if i < b:
            r.wsum += r.w[i]
            r.psum += r.v[i]
    r.gp = r.psum if r.wsum <= r.c else -INFINITY
    if r.decide and r.wsum <= r.c and r.psum >= r.goal - r.tol:
        return FOUND
    r.sl2 = ABS_SLACK + REL_CARD * (sabs + fabs(card.mu) * (r.n + b) + card.lam * fabs(r.c) + fabs(r.goal))
    r.cm = 1
    r.lam = card.lam
    r.mu = card.mu
    r.kf = card.kfix
    r.lcmk = r.lam * r.c + r.mu * r.kf
    r.ub0 = INFINITY
    r.ubc = r.lcmk + (r.psum - r.lam * r.wsum - r.mu * r.kf)
    r.thr = _threshold(r.decide, r.goal, r.gp, r.integral, r.tol)
    if r.ubc + r.sl2 < r.thr:
        return _nothing_better(r)
    return GO_ON


cdef Py_ssize_t _plain_start(Run* r, uint8_t* x) noexcept nogil:
    """Set-up of an efficiency-order run: the break solution and the greedy
    set (into ``x``), Dantzig's bound at the root and, with cardinality
    multipliers, the count bound (its sums ``A``, ``B`` and counts). Returns
    GO_ON, else the run's result."""
    cdef double term
    r.b = _break_greedy(r.w, r.v, r.n, r.c, x, &r.wsum, &r.psum, &r.gp)
    if r.b == r.n:
        if r.avoid != NULL:
            return _all_fit_other(r, x)
        return NOT_FOUND if r.decide and r.psum < r.goal - r.tol else FOUND
    term = (r.c - r.wsum) * (r.v[r.b] / r.w[r.b])
    r.ub0 = r.psum + term
    if r.decide and r.gp >= r.goal - r.tol and not _same(x, r.avoid, r.n):
        return FOUND
    r.thr = _threshold(r.decide, r.goal, r.gp, r.integral, r.tol)
    if r.ub0 + _slack(r.psum, term) < r.thr:
        return _nothing_better(r)
    if r.card != NULL and r.card.topv == NULL and r.card.mu == 0:
        r.card = NULL  # no count term: the bound is the plain Lagrangian one
    if r.card == NULL:
        return GO_ON
    if r.card.topv == NULL:
        r.lc = r.card[0]
        if _local_counts(r.w, r.v, r.n, r.c, &r.lc, &r.ltop) < 0:
            return STATE_LIMIT
        r.card = &r.lc
    r.A = <double*>malloc((r.n + 1) * sizeof(double))
    r.B = <double*>malloc((r.n + 1) * sizeof(double))
    if r.A == NULL or r.B == NULL:
        return STATE_LIMIT
    r.lam = r.card.lam
    r.mu = r.card.mu
    _reduced_sums(r.w, r.v, r.n, r.lam, r.mu, r.A, r.B)
    r.sl2 = ABS_SLACK + REL_CARD * (r.A[0] + r.B[r.n] + r.lam * fabs(r.c)
                                    + fabs(r.mu) * (r.n + r.card.kmax) + r.gp + fabs(r.goal))
    r.kk = _kcount(r.card, r.thr)
    r.ubc = r.psum + r.lam * (r.c - r.wsum) + r.mu * (r.kk - r.b) + r.A[r.b] + r.B[r.b]
    if r.ubc + r.sl2 < r.thr:
        return _nothing_better(r)
    return GO_ON


cdef inline bint _same(const uint8_t* x, const uint8_t* avoid, Py_ssize_t n) noexcept nogil:
    """Whether the set ``x`` agrees with ``avoid`` on its items in range
    (False when there is none)."""
    cdef Py_ssize_t i
    if avoid == NULL:
        return False
    for i in range(n):
        if avoid[i] != AVOID_FREE and x[i] != avoid[i]:
            return False
    return True


cdef Py_ssize_t _all_fit_other(Run* r, uint8_t* x) noexcept nogil:
    """Avoid mode when every item fits (``x`` holds them all): the best set
    that differs in range is all of them when they do, else all but the
    least valuable item in range (with ``Run.twin``: all but an item in
    range and the copies after it, so the set holds each group's first
    copies). FOUND (``x``, r.gp: it), NOT_FOUND, or STATE_LIMIT when out of
    memory."""
    cdef Py_ssize_t i, low = -1
    cdef Py_ssize_t* nxt = NULL  # the next copy (-1: none) ...
    cdef double* loss = NULL  # ... and the value of an item with the copies after it
    if _same(x, r.avoid, r.n):
        nxt = <Py_ssize_t*>malloc(r.n * sizeof(Py_ssize_t))
        loss = <double*>malloc(r.n * sizeof(double))
        if nxt == NULL or loss == NULL:
            free(nxt)
            free(loss)
            return STATE_LIMIT
        for i in range(r.n):
            nxt[i] = -1
        if r.twin != NULL:
            for i in range(r.n):
                if r.twin[i] >= 0:
                    nxt[r.twin[i]] = i
        for i in range(r.n - 1, -1, -1):
            loss[i] = r.v[i] + (loss[nxt[i]] if nxt[i] >= 0 else 0.0)
            if r.avoid[i] != AVOID_FREE and (low < 0 or loss[i] <= loss[low]):
                low = i
        if low >= 0:
            r.gp = r.psum - loss[low]
            i = low
            while i >= 0:
                x[i] = 0
                i = nxt[i]
        free(nxt)
        free(loss)
        if low < 0:
            return NOT_FOUND
    return FOUND if r.gp >= r.goal - r.tol else NOT_FOUND


cdef inline void _improve(Run* r, const Pool* pool, double P, Py_ssize_t k, Py_ssize_t item,
                          const uint64_t* V) noexcept nogil:
    """A state (decision bits ``V`` at core step k, plus ``item`` flipped when
    >= 0) worth P becomes the incumbent. A decide run is done; an optimise run
    raises its threshold, and is done when that passes a global bound."""
    cdef Py_ssize_t q
    r.best_P = P
    r.best_k = k
    r.best_item = item
    for q in range(VW):
        r.best_V[q] = V[q]
    if r.decide:
        r.found = 1
        return
    r.thr = P + 1.0 if r.integral else P + r.tol
    if r.A != NULL:
        r.kk = _kcount(r.card, r.thr)
    if r.ub0 + _slack(r.psum, r.ub0 - r.psum) < r.thr or r.ubc + r.sl2 < r.thr or pool.opt_bound < r.thr:
        r.found = 1


cdef inline bint _dominated_in_count(Py_ssize_t nd, double Px, double* maxPK) noexcept nogil:
    """Count mode, states met by ascending weight: dominance only among
    states nd items short of kfix (a lighter, better state with another
    count may not complete to kfix). Records Px when it is not dominated."""
    if nd < -KWIN or nd > KWIN:
        return False
    if Px <= maxPK[nd + KWIN]:
        return True
    maxPK[nd + KWIN] = Px
    return False


cdef inline bint _dominated(int32_t kraw, double Px, double* maxP, double* maxPD) noexcept nogil:
    """States met by ascending weight: dominated by a lighter state of at
    least its value (``maxP``: of any class; ``maxPD``: of D states, the only
    ones that dominate a D state in avoid mode). Records Px when it is not."""
    if kraw & CLASS_D:
        if Px <= maxPD[0]:
            return True
        maxPD[0] = Px
        if Px > maxP[0]:
            maxP[0] = Px
        return False
    if Px <= maxP[0]:
        return True
    maxP[0] = Px
    return False


cdef inline bint _dominated_open(int32_t kraw, double Px, Py_ssize_t o, double* U, double* UD) noexcept nogil:
    """``_dominated`` with the open steps (``_open_steps``): bit 0 / 1 of
    ``o`` says whether the state lets the next item to add / to remove
    flip, and a dominating state must let it wherever this one does. U[o]
    (UD[o]: of D states) is the most valuable lighter state whose bits
    contain o's. Records Px at every o' within o."""
    cdef Py_ssize_t q
    cdef bint d = (kraw & CLASS_D) != 0
    if Px <= (UD[o] if d else U[o]):
        return True
    for q in range(4):
        if (q & o) == q:
            if Px > U[q]:
                U[q] = Px
            if d and Px > UD[q]:
                UD[q] = Px
    return False


cdef inline uint64_t* _push(Pool* pool, Py_ssize_t out, double W, double P, int32_t K, const uint64_t* hist,
                            Py_ssize_t word, uint64_t bit, bint shifted) noexcept nogil:
    """State ``out`` of the next list: weight, value, count (with its class
    bit) and its parent's history with this step's decision (``bit`` of
    ``word``: set for the shifted child). Returns its history."""
    cdef Py_ssize_t q
    cdef uint64_t* vo = &pool.V2[out * VW]
    for q in range(VW):
        vo[q] = hist[q]
    if shifted:
        vo[word] |= bit
    else:
        vo[word] &= ~bit
    pool.W2[out] = W
    pool.P2[out] = P
    pool.K2[out] = K
    return vo


cdef inline void _child_classes(const Run* r, Py_ssize_t m, int32_t* dev_a, int32_t* dev_b) noexcept nogil:
    """Avoid mode: the class bit each child of core step item m gains. The
    child that decides m unlike the avoided set becomes D: the unshifted one
    (m keeps its break-solution value) when that value differs from it, else
    the shifted one; neither when m is out of range."""
    dev_a[0] = dev_b[0] = 0
    if r.avoid[m] == AVOID_FREE:
        return
    if r.avoid[m] != (m < r.b):
        dev_a[0] = CLASS_D
    else:
        dev_b[0] = CLASS_D


cdef int _twin_setup(Run* r) noexcept nogil:
    """Avoid mode with identical copies: the steps that decide items
    (``Run.step_of``), none yet. -1 if out of memory."""
    cdef Py_ssize_t i
    r.step_of = <Py_ssize_t*>malloc(r.n * sizeof(Py_ssize_t))
    if r.step_of == NULL:
        return -1
    for i in range(r.n):
        r.step_of[i] = -1
    return 0


cdef inline bint _linked(const Run* r, Py_ssize_t i) noexcept nogil:
    """Whether item i is linked to item i - 1, its copy (``Run.twin``):
    adjacent copies only, so each rule reads its side's last step."""
    return 0 < i < r.n and r.twin[i] == i - 1


cdef bint _twin_rule(const Run* r, Py_ssize_t k, Py_ssize_t m, Py_ssize_t* word, uint64_t* bit,
                     uint64_t* need) noexcept nogil:
    """Core step k flips item m: may a state do so? Among identical copies
    (``Run.twin``) the sets with the lowest-indexed ones (their copies lie
    in index order) add the copies after the break in order, remove those
    before it from the highest down, and never do both. So m is added only
    when the copy before it was added (or, the first after the break, when
    the last before it was not removed), and removed only when the copy
    after it was removed (or, the last before the break, when the first
    after it was not added). True when the copy that rule reads was decided
    within the last VBITS steps: a state may flip m only if bit ``bit`` of
    word ``word`` of its history is ``need`` (``bit`` or 0). Every set that
    holds the lowest-indexed copies keeps to it. Only adjacent copies are
    linked, so a rule reads the last step on its side (or, across the
    break, the first on the other), which ``_open_steps`` tells the merge."""
    cdef Py_ssize_t p, kp
    cdef bint same_side
    if m >= r.b:  # m joins
        p = m - 1 if _linked(r, m) else -1
        same_side = p >= r.b
    else:  # m leaves
        p = m + 1 if _linked(r, m + 1) else -1
        same_side = 0 <= p < r.b
    if p < 0:
        return False
    kp = r.step_of[p]
    if kp < 0 or k - kp >= VBITS:
        return False
    word[0] = (kp % VBITS) >> 6
    bit[0] = (<uint64_t>1) << (kp & 63)
    need[0] = bit[0] if same_side else 0
    return True


cdef void _open_steps(const Run* r, Py_ssize_t k, Py_ssize_t* ka, Py_ssize_t* kr, int* pa,
                      int* pr) noexcept nogil:
    """After core step k: the steps whose decisions the next item to add
    and the next to remove will read (``_twin_rule``), or -1, and the
    decision there that lets the item flip (``pa``, ``pr``: 1 when the rule
    reads a copy on the same side, 0 across the break). A state that lets it
    flip where another does not can complete as that one can, not the other
    way round; so the merge lets a state dominate only states it is at
    least as free as on both (``_dominated_open``)."""
    cdef Py_ssize_t kp
    ka[0] = kr[0] = -1
    if _linked(r, r.t):
        kp = r.step_of[r.t - 1]
        if kp >= 0 and k + 1 - kp < VBITS:
            ka[0] = kp
            pa[0] = r.t - 1 >= r.b
    if r.s >= 0 and _linked(r, r.s + 1):
        kp = r.step_of[r.s + 1]
        if kp >= 0 and k + 1 - kp < VBITS:
            kr[0] = kp
            pr[0] = r.s + 1 < r.b


cdef inline int _bit_at(const uint64_t* hist, Py_ssize_t kp, Py_ssize_t k, bint shifted) noexcept nogil:
    """A child's decision at step kp <= k (its parent's history ``hist``, and
    ``shifted`` at step k itself)."""
    if kp == k:
        return shifted
    return (hist[(kp % VBITS) >> 6] >> (kp & 63)) & 1


cdef Py_ssize_t _merge(Run* r, Pool* pool, Py_ssize_t cnt, Py_ssize_t k, Py_ssize_t m, double dw, double dv,
                       int32_t kx, Py_ssize_t* work) noexcept nogil:
    """One core step: merge the list (W, P, V, K; ``cnt`` states) with its
    copy shifted by the step's item m (dw, dv, kx = +-1 item) into W2.. in
    weight order, dropping dominated states and those whose bounds cannot
    reach ``r.thr``; the step's decision is bit k of each state's history.
    A kept state that reaches the threshold within c becomes the incumbent
    (in avoid mode a D state only: ``Run.avoid``).
    Returns the states kept; ``work`` gets the states read."""
    cdef Py_ssize_t ia = 0, ib = 0, out = 0, q, nd
    cdef int32_t dev_a = 0, dev_b = 0, answers = 0, kraw  # class bits: CLASS_D or 0
    cdef Py_ssize_t s = r.s, t = r.t, n = r.n, word = (k % VBITS) >> 6
    cdef uint64_t bit = (<uint64_t>1) << (k & 63)
    cdef double c = r.c, lam = r.lam, mu = r.mu, sl2 = r.sl2, kf = r.kf, lcmk = r.lcmk
    cdef double thr = r.thr, kk = r.kk  # change only with the incumbent (``_improve``)
    cdef const double* A = r.A
    cdef const double* B = r.B
    cdef const double* D = r.D
    cdef int cm = r.cm
    cdef double et = r.v[t] / r.w[t] if t < n else 0.0
    cdef double es = r.v[s] / r.w[s] if s >= 0 else 0.0
    cdef double Wx, Px, kc, ub
    cdef double maxP[4]  # by what the open steps let flip (``_dominated_open``): of any class ...
    cdef double maxPD[4]  # ... of D states
    cdef Py_ssize_t ka = -1, kr = -1, o = 3
    cdef int pa = 0, pr = 0
    cdef double maxPK[2 * KWIN + 1]
    cdef uint64_t* va
    cdef uint64_t* vo
    cdef int take_a
    cdef Py_ssize_t tword = 0
    cdef uint64_t tbit = 0, tneed = 0
    cdef bint twin = r.twin != NULL and _twin_rule(r, k, m, &tword, &tbit, &tneed)
    for q in range(4):
        maxP[q] = maxPD[q] = -INFINITY
    if r.twin != NULL:
        _open_steps(r, k, &ka, &kr, &pa, &pr)
    if cm:
        for q in range(2 * KWIN + 1):
            maxPK[q] = -INFINITY
    if r.avoid != NULL:
        answers = CLASS_D
        _child_classes(r, m, &dev_a, &dev_b)
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
            kraw = pool.K[ia] | dev_a
            ia += 1
        else:
            va = &pool.V[ib * VW]
            if twin and (va[tword] & tbit) != tneed:  # not the lowest-indexed copies (``_twin_rule``)
                ib += 1
                continue
            Wx = pool.W[ib] + dw
            Px = pool.P[ib] + dv
            kraw = (pool.K[ib] | dev_b) + kx
            ib += 1
        kc = kraw & COUNT_MASK
        if cm:
            nd = <Py_ssize_t>kf - <Py_ssize_t>kc
            if _dominated_in_count(nd, Px, maxPK):
                continue
            ub = _count_state_bound(D, n, s, t, nd, Wx, Px, kc, c, lcmk, lam, mu)
            if ub == -INFINITY or ub + sl2 < thr:
                continue
        else:
            if ka >= 0 or kr >= 0:
                o = ((1 if ka < 0 or _bit_at(va, ka, k, not take_a) == pa else 0)
                     | (2 if kr < 0 or _bit_at(va, kr, k, not take_a) == pr else 0))
                if _dominated_open(kraw, Px, o, maxP, maxPD):
                    continue
            elif _dominated(kraw, Px, &maxP[3], &maxPD[3]):
                continue
            ub = _lp_state_bound(Wx, Px, c, et, es, s >= 0)
            if ub == -INFINITY or ub < thr:
                continue
        if A != NULL:
            ub = Px + lam * (c - Wx) + mu * (kk - kc) + A[t] + B[s + 1]
            if ub + sl2 < thr:
                continue
        vo = _push(pool, out, Wx, Px, kraw, va, word, bit, not take_a)
        out += 1
        if Wx <= c and Px >= thr and (not cm or kc == kf) and (kraw & answers) == answers:
            _improve(r, pool, Px, k, -1, vo)
            if r.found:
                break
            thr = r.thr
            kk = r.kk
    work[0] = ia + ib + 1
    return out


cdef int _pair(Run* r, Pool* pool, Pairs* pr, Py_ssize_t out, Py_ssize_t k,
               const Py_ssize_t* by_weight) noexcept nogil:
    """Pair the merged states with one item outside the core (``_pairs.pxd``);
    a pair reaching the threshold becomes the incumbent. -1 on allocation failure."""
    cdef Pair pb
    # in avoid mode only D states answer (``Run.avoid``)
    if pair_pass(r.w, r.v, r.n, r.c, r.s, r.t, pool.W2, pool.P2, pool.K2, CLASS_D if r.avoid != NULL else 0,
                 out, pr, &pb, by_weight) < 0:
        return -1
    if pb.item >= 0 and pb.value >= r.thr:
        _improve(r, pool, pb.value, k, pb.item, &pool.V2[pb.state * VW])
    return 0


cdef inline void _skip_fixed(Run* r) noexcept nogil:
    """Reduce items as the core reaches them (Pisinger's minknap): the next
    item to add, t, joins only if some set containing it can still reach
    ``r.thr``, and the next to remove, s, leaves only if some set without it
    can; the others keep their break-solution value and cost no step. The
    test is Dembo and Hammer's bound around the break item b, P_b +- v_j +
    (c - W_b -+ w_j) e_b, an upper bound of every set with item j flipped
    (items before b are at least as efficient as b, those after at most).
    ``r.thr`` only rises, so an item skipped stays skippable."""
    cdef double eb = r.v[r.b] / r.w[r.b], room = r.c - r.wsum, base, term
    while r.t < r.n:
        base = r.psum + r.v[r.t]
        term = (room - r.w[r.t]) * eb
        if base + term + _slack(base, term) >= r.thr:
            break
        r.t += 1
    while r.s >= 0:
        base = r.psum - r.v[r.s]
        term = (room + r.w[r.s]) * eb
        if base + term + _slack(base, term) >= r.thr:
            break
        r.s -= 1


cdef inline void _skip_fixed_count(Run* r) noexcept nogil:
    """``_skip_fixed`` in count mode (sets of exactly kf items, items in
    descending order of d = v - lam w - mu, the start state the first kf):
    with item j flipped, the best kf items sum at most D[kf - 1] + d_t (t
    joins, the worst of the first kf leaves) or D[kf] - d_s + d_kf (s leaves,
    the best item after them joins), and every such set is worth at most
    lam c + mu kf plus that."""
    cdef Py_ssize_t kf = <Py_ssize_t>r.kf
    cdef const double* D = r.D
    if kf == 0:
        r.t = r.n  # no item joins a set of no items
    while r.t < r.n and r.lcmk + D[kf - 1] + (D[r.t + 1] - D[r.t]) + r.sl2 < r.thr:
        r.t += 1
    if kf >= r.n:
        r.s = -1  # every item is in every set of kf items
    while r.s >= 0 and r.lcmk + D[kf] - (D[r.s + 1] - D[r.s]) + (D[kf + 1] - D[kf]) + r.sl2 < r.thr:
        r.s -= 1


#: Count runs on integral items first fix what the swap window of their
#: count fixes (``_windowed``); tests turn it off to compare.
cdef bint COUNT_WINDOW = True


def _configure_count_window(bint on):
    """For tests: whether count runs use the swap window. Returns the previous setting."""
    global COUNT_WINDOW
    old = COUNT_WINDOW
    COUNT_WINDOW = on
    return old


cdef struct Sub:
    # The items a count window leaves free (``_windowed``), by descending d.
    double* w
    double* v
    Py_ssize_t* item   # their positions among the run's items
    uint8_t* x
    Py_ssize_t m
    double w_in        # the weight and value of the items every k-set holds
    double v_in


cdef int _sub_gather(const double* w, const double* v, Py_ssize_t n, const Window* win,
                     Sub* sb) noexcept nogil:
    """The items the window leaves free into ``sb`` (by position), the sums of
    those it puts in. 0, or -1 when out of memory."""
    cdef Py_ssize_t i
    sb.w = <double*>malloc(n * sizeof(double))
    sb.v = <double*>malloc(n * sizeof(double))
    sb.item = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    sb.x = <uint8_t*>malloc(n)
    if sb.w == NULL or sb.v == NULL or sb.item == NULL or sb.x == NULL:
        return -1
    sb.m = 0
    sb.w_in = sb.v_in = 0.0
    for i in range(n):
        if w[i] < win.lo:
            sb.w_in += w[i]
            sb.v_in += v[i]
        elif w[i] <= win.hi:
            sb.w[sb.m] = w[i]
            sb.v[sb.m] = v[i]
            sb.item[sb.m] = i
            sb.m += 1
    return 0


cdef void _free_sub(Sub* sb) noexcept nogil:
    free(sb.w)
    free(sb.v)
    free(sb.item)
    free(sb.x)


cdef int _sub_order(Sub* sb, double lam, double mu) noexcept nogil:
    """Reorder ``sb`` by descending d = v - lam w - mu (ties by position), the
    order of a count run. 0, or -1 when out of memory."""
    cdef Py_ssize_t q, m = sb.m
    cdef double dmax = -INFINITY
    cdef double* key = <double*>malloc(m * 3 * sizeof(double))
    cdef Py_ssize_t* o = <Py_ssize_t*>malloc(m * 2 * sizeof(Py_ssize_t))
    if key == NULL or o == NULL:
        free(key)
        free(o)
        return -1
    for q in range(m):
        key[q] = sb.v[q] - lam * sb.w[q] - mu
        dmax = max(dmax, key[q])
    for q in range(m):
        key[q] = dmax - key[q]  # >= 0, ascending as d descends
    if sort_ascending(key, m, o) < 0:
        free(key)
        free(o)
        return -1
    for q in range(m):  # gather through scratch: key[m..3m) and o[m..2m)
        key[m + q] = sb.w[o[q]]
        key[2 * m + q] = sb.v[o[q]]
        o[m + q] = sb.item[o[q]]
    for q in range(m):
        sb.w[q] = key[m + q]
        sb.v[q] = key[2 * m + q]
        sb.item[q] = o[m + q]
    free(key)
    free(o)
    return 0


cdef enum:
    # How an avoided set meets its count's window (``_avoid_check``)
    AVOID_FIXED = 0   # it agrees with the window, which fixes every item in range
    AVOID_OPEN = 1    # it agrees, and some item in range is free
    AVOID_OFF = 2     # it disagrees: it is no k-set within c


cdef enum:
    # ``_refit``'s results (besides negative result codes)
    REFIT_NONE = 0    # no bound: the free items hold no set of the count
    REFIT_DONE = 1    # sub.lam, sub.mu refitted


cdef Py_ssize_t _refit(const Sub* sb, double c, double hint, Pool* pool, Card* sub) noexcept nogil:
    """The count multipliers of sets of sub.kfix free items of ``sb`` within
    c less what every set holds, into ``sub`` and, for the next window,
    ``pool`` (``_count_bound``; ``hint``: a nearby lam). REFIT_DONE,
    REFIT_NONE, STATE_LIMIT (out of memory) or INTERRUPTED."""
    cdef DI* a = <DI*>malloc((sb.m + 1) * sizeof(DI))  # sb.m >= 2 (``_window_of``)
    cdef Py_ssize_t* cand = <Py_ssize_t*>malloc((sb.m + 1) * sizeof(Py_ssize_t))
    cdef bint room = a != NULL and cand != NULL
    cdef double L = INFINITY
    if room:
        L = _count_bound(sb.w, sb.v, sb.m, c - sb.w_in, <Py_ssize_t>sub.kfix, hint, a, cand,
                         &sub.lam, &sub.mu, pool)
        pool.win_lam = sub.lam
        pool.win_mu = sub.mu
    free(a)
    free(cand)
    if not room:
        return STATE_LIMIT
    if pool.stop:
        return INTERRUPTED
    return REFIT_NONE if L == INFINITY else REFIT_DONE


cdef double _sub_lag(const Sub* sb, double c, Py_ssize_t k, double lam, double mu) noexcept nogil:
    """The count bound with (lam, mu) of every k-set of the free items in
    ``sb`` within c less the weight of those every set holds, plus their
    value and its allowance for rounding (an upper bound on the run's sets)."""
    cdef Py_ssize_t q
    cdef double d, tot = 0.0, mag = 0.0
    for q in range(sb.m):
        d = sb.v[q] - lam * sb.w[q] - mu
        if d > 0:
            tot += d
        mag += sb.v[q] + lam * sb.w[q]
    tot += lam * (c - sb.w_in) + mu * k + sb.v_in
    return tot + ABS_SLACK + REL_CARD * (mag + fabs(mu) * (sb.m + k) + lam * fabs(c) + fabs(tot))


cdef Py_ssize_t _sub_card(const Sub* sb, double c, Py_ssize_t k, const Card* card, int decide,
                          double goal, double tol, Pool* pool, Card* sub) noexcept nogil:
    """The count multipliers of the k-sets of the free items of ``sb`` into
    ``sub`` (``_refit``), after the cheaper checks: a decide run whose goal
    the count bound with the run's own multipliers, or the last window's,
    cannot reach is NOT_FOUND (so is one the refitted bound cannot reach).
    REFIT_DONE, NOT_FOUND, GO_ON (no bound: run on all items) or a negative
    result code."""
    cdef Py_ssize_t r
    if decide and (_sub_lag(sb, c, k, card.lam, card.mu) < goal - tol
                   or _sub_lag(sb, c, k, pool.win_lam, pool.win_mu) < goal - tol):
        return NOT_FOUND
    sub.kfix = sub.kmax = k
    r = _refit(sb, c, card.lam, pool, sub)
    if r != REFIT_DONE:
        return GO_ON if r == REFIT_NONE else r
    if decide and _sub_lag(sb, c, k, sub.lam, sub.mu) < goal - tol:
        return NOT_FOUND
    return REFIT_DONE


cdef void _sub_set(const Sub* sb, const double* w, Py_ssize_t n, const Window* win,
                   uint8_t* x) noexcept nogil:
    """A run's set on the free items of ``sb`` (``sb.x``) over all n items
    into ``x``: the items the window fixes in (lighter than win.lo) with it,
    those it fixes out without."""
    cdef Py_ssize_t q
    for q in range(n):
        x[q] = w[q] < win.lo
    for q in range(sb.m):
        x[sb.item[q]] = sb.x[q]


cdef Py_ssize_t _window_of(const double* w, Py_ssize_t n, double c, Py_ssize_t k,
                           const Py_ssize_t* by_weight, Window* win) noexcept nogil:
    """``count_window``, on ``by_weight`` (the items by ascending weight, or
    NULL: the k lightest selected, ``lightest_k``): WINDOW_FIXES when it fixes
    items and leaves a count of at least one and below the free items,
    WINDOW_EMPTY when no k-set fits, WINDOW_NONE otherwise, -1 when out of
    memory."""
    cdef int r
    cdef double light, wk, wk1
    if by_weight != NULL:
        r = count_window(w, n, c, k, by_weight, win)
    elif lightest_k(w, n, k, &light, &wk, &wk1) < 0:
        return -1
    else:
        r = window_of_lightest(w, n, c, light, wk, wk1, win)
    if r == WINDOW_FIXES and not (1 <= k - win.n_in < n - win.n_in - win.n_out):
        r = WINDOW_NONE
    return r


cdef Py_ssize_t _windowed(const double* w, const double* v, Py_ssize_t n, double c,
                          int decide, double goal, int integral, double tol,
                          Pool* pool, const Card* card, const Py_ssize_t* by_weight, uint8_t* x,
                          double* zout) noexcept nogil:
    """A count run (integral items) on the items the swap window of its count
    leaves free (``_count_window.pxd``), with the count multipliers refitted
    to them: the window fixes the items far from the k-th weight, and the
    count bound of the rest is nearly exact where the bound over all items is
    not. The fixed items go into ``x``; values and the goal shift by those
    every k-set holds. A decide run where no k-set fits is NOT_FOUND. GO_ON
    when the window fixes nothing (the caller then runs on all items).
    ``by_weight``: the items by ascending weight, or NULL."""
    cdef Py_ssize_t k = <Py_ssize_t>card.kfix, r, bb
    cdef Window win
    cdef Sub sb
    cdef Card sub
    cdef double z = 0.0
    if not (COUNT_WINDOW and integral) or k < 1 or k >= n or pool.avoid != NULL:
        return GO_ON
    r = _window_of(w, n, c, k, by_weight, &win)
    if r == WINDOW_EMPTY and decide:
        zout[0] = -INFINITY
        return NOT_FOUND
    if r != WINDOW_FIXES:
        return STATE_LIMIT if r < 0 else GO_ON
    memset(&sb, 0, sizeof(Sub))
    memset(&sub, 0, sizeof(Card))
    r = STATE_LIMIT if _sub_gather(w, v, n, &win, &sb) < 0 else \
        _sub_card(&sb, c, k - win.n_in, card, decide, goal, tol, pool, &sub)
    if r == REFIT_DONE:
        if _sub_order(&sb, sub.lam, sub.mu) < 0:
            r = STATE_LIMIT
        else:
            pool.windowed = 1
            r = _core(sb.w, sb.v, sb.m, c - sb.w_in, decide, goal - sb.v_in, integral, tol, pool, &sub,
                      sb.x, &z, &bb)
            _sub_set(&sb, w, n, &win, x)
            zout[0] = z + sb.v_in if z > -INFINITY else z
    if r == NOT_FOUND:
        zout[0] = -INFINITY
    _free_sub(&sb)
    return r


cdef int _avoid_check(const double* w, Py_ssize_t n, const Window* win, const uint8_t* avoid) noexcept nogil:
    """How ``avoid`` meets the window of its count: AVOID_FIXED when it
    agrees with every item the window fixes and every item in range is
    fixed (every k-set agrees with it there), AVOID_OPEN when it agrees and
    some item in range is free, AVOID_OFF when it disagrees (it is no k-set
    that fits)."""
    cdef Py_ssize_t i
    cdef bint open_ = False
    for i in range(n):
        if avoid[i] == AVOID_FREE:
            continue
        if w[i] < win.lo:
            if not avoid[i]:
                return AVOID_OFF
        elif w[i] > win.hi:
            if avoid[i]:
                return AVOID_OFF
        else:
            open_ = True
    return AVOID_OPEN if open_ else AVOID_FIXED


cdef int _sub_avoid(const Sub* sb, Py_ssize_t n, const uint8_t* avoid, const Py_ssize_t* twin,
                    uint8_t* av, Py_ssize_t* tw) noexcept nogil:
    """``avoid`` and ``twin`` (or NULL) over the free items of ``sb`` (kept
    in the run's order) into ``av`` and ``tw``. Identical copies share a
    weight, so a free item's copies are free too. 0, or -1 when out of
    memory."""
    cdef Py_ssize_t q, p
    cdef Py_ssize_t* at = NULL
    for q in range(sb.m):
        av[q] = avoid[sb.item[q]]
        tw[q] = -1
    if twin == NULL:
        return 0
    at = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    if at == NULL:
        return -1
    for q in range(sb.m):
        at[sb.item[q]] = q
    for q in range(sb.m):
        p = twin[sb.item[q]]
        tw[q] = at[p] if p >= 0 else -1
    free(at)
    return 0


cdef Py_ssize_t avoid_windowed(const double* w, const double* v, Py_ssize_t n, double c, double goal,
                               double tol, Pool* pool, const Card* card, const Py_ssize_t* by_weight,
                               const uint8_t* avoid, const Py_ssize_t* twin, uint8_t* x) noexcept nogil:
    """An avoid-mode decide run (``Pool.avoid``, ``Pool.twin``: ``avoid``,
    ``twin``) on integral items in efficiency order when every set it seeks
    holds exactly card.kfix items: on the items the swap window of that
    count leaves free (``_count_window.pxd``), a plain run with the count
    multipliers refitted to them and at most the count left. NOT_FOUND at
    once when no k-set fits or every item in range is fixed; FOUND with the
    set in ``x``; GO_ON when the window does not apply (the caller runs on
    all items); or a negative result code."""
    cdef Py_ssize_t k = <Py_ssize_t>card.kfix, r, bb
    cdef Window win
    cdef Sub sb
    cdef Card sub
    cdef double z = 0.0
    cdef uint8_t* av = NULL
    cdef Py_ssize_t* tw = NULL
    if not COUNT_WINDOW or k < 1 or k >= n:
        return GO_ON
    r = _window_of(w, n, c, k, by_weight, &win)
    if r == WINDOW_EMPTY:
        return NOT_FOUND
    if r != WINDOW_FIXES:
        return STATE_LIMIT if r < 0 else GO_ON
    r = _avoid_check(w, n, &win, avoid)
    if r != AVOID_OPEN:
        return NOT_FOUND if r == AVOID_FIXED else GO_ON
    memset(&sb, 0, sizeof(Sub))
    memset(&sub, 0, sizeof(Card))
    r = STATE_LIMIT if _sub_gather(w, v, n, &win, &sb) < 0 else \
        _sub_card(&sb, c, k - win.n_in, card, 1, goal, tol, pool, &sub)
    if r == REFIT_DONE:
        av = <uint8_t*>malloc(sb.m)
        tw = <Py_ssize_t*>malloc(sb.m * sizeof(Py_ssize_t))
        if av == NULL or tw == NULL or _sub_avoid(&sb, n, avoid, twin, av, tw) < 0:
            r = STATE_LIMIT
        else:
            sub.kfix = -1  # a plain run: avoid mode is for those
            pool.avoid = av
            pool.twin = tw if twin != NULL else NULL
            r = _core(sb.w, sb.v, sb.m, c - sb.w_in, 1, goal - sb.v_in, 1, tol, pool, &sub, sb.x, &z, &bb)
            _sub_set(&sb, w, n, &win, x)
    free(av)
    free(tw)
    _free_sub(&sb)
    return r


cdef Py_ssize_t _core(const double* w, const double* v, Py_ssize_t n, double c,
                      int decide, double goal, int integral, double tol,
                      Pool* pool, const Card* card, uint8_t* x, double* zout,
                      Py_ssize_t* bout) noexcept nogil:
    """Expanding-core Pareto DP over items sorted by efficiency (descending).

    Optimise (decide == 0): ``x`` gets an optimal set, ``zout`` its value;
    ``goal`` is a value known to be reachable (0 if none): when nothing beats
    it, return NO_BETTER (``x`` then holds only the greedy set).
    Decide (decide == 1): ``x`` gets a set of value >= goal - tol within c,
    NOT_FOUND if there is none. Returns FOUND on success, else one of the
    negative result codes (STATE_LIMIT, OVER_BUDGET, INTERRUPTED, ...).
    Count mode (``card.kfix`` >= 0): only sets of exactly kfix items.
    """
    cdef Run r
    cdef Pairs pr
    cdef Py_ssize_t cnt = 1, k = 0, m, out, work, res
    cdef double dw, dv
    cdef int32_t kx
    cdef const Py_ssize_t* by_weight = pool.by_weight
    cdef bint windowed = pool.windowed
    pool.by_weight = NULL  # this run's alone, not its recovery runs
    pool.windowed = 0
    if card != NULL and card.kfix >= 0 and not windowed:  # count mode: first what the swap window fixes
        res = _windowed(w, v, n, c, decide, goal, integral, tol, pool, card, by_weight, x, zout)
        if res != GO_ON:
            bout[0] = <Py_ssize_t>card.kfix
            return res
    memset(&r, 0, sizeof(Run))
    r.w = w
    r.v = v
    r.n = n
    r.c = c
    r.decide = decide
    r.goal = goal
    r.integral = integral
    r.tol = tol
    r.card = card
    r.ubc = INFINITY
    r.best_k = r.best_item = -1
    r.avoid = pool.avoid
    r.twin = pool.twin if r.avoid != NULL else NULL
    pool.runs += 1
    pool.avoid = NULL  # this run's alone, not its recovery runs
    pool.twin = NULL
    if r.avoid != NULL and (not decide or (card != NULL and card.kfix >= 0)):
        return INCONSISTENT  # avoid mode is for plain decide runs
    res = _count_start(&r, x) if card != NULL and card.kfix >= 0 else _plain_start(&r, x)
    bout[0] = r.b
    zout[0] = r.gp
    if res != GO_ON:
        _free_run(&r)
        return res
    pairs_init(&pr)
    res = _start_state(&r, pool)
    if res == GO_ON and r.twin != NULL and _twin_setup(&r) < 0:
        res = STATE_LIMIT
    while res == GO_ON and cnt > 0 and not r.found:
        if r.cm:
            _skip_fixed_count(&r)
        else:
            _skip_fixed(&r)
        if r.s < 0 and r.t >= n:
            break
        m = _next_item(&r, k, &dw, &dv, &kx)
        if _reserve(pool, 2 * cnt) < 0:
            res = STATE_LIMIT
            break
        out = _merge(&r, pool, cnt, k, m, dw, dv, kx, &work)
        if pool.beam > 0 and out > pool.beam and not r.found:
            out = _thin(pool, out)
        if not r.found and not r.cm and out >= PAIR_MIN and _pair_now(out, n, k, pr.last, pool.beam):
            if _pair(&r, pool, &pr, out, k, by_weight) < 0:
                res = STATE_LIMIT
                break
        pool.generated += out
        if pool.limit > 0 and pool.generated > pool.limit:
            res = OVER_BUDGET
        elif _tick(pool, work):
            res = INTERRUPTED
        _swap(pool)
        cnt = out
        k += 1
    pairs_free(&pr)
    if res != GO_ON:
        _free_run(&r)
        return res
    return _finish(&r, pool, k, x, zout)


cdef Py_ssize_t _start_state(Run* r, Pool* pool) noexcept nogil:
    """The core's one state before its first step: the break solution
    (items 0 .. b-1), an empty history, the core empty between s = b - 1
    and t = b. GO_ON, or STATE_LIMIT when out of memory."""
    cdef Py_ssize_t q
    r.seq = <Py_ssize_t*>malloc(r.n * sizeof(Py_ssize_t))
    if r.seq == NULL or _reserve(pool, 2) < 0:
        return STATE_LIMIT
    pool.W[0] = r.wsum
    pool.P[0] = r.psum
    pool.K[0] = <int32_t>r.b
    for q in range(VW):
        pool.V[q] = 0
    r.s = r.b - 1
    r.t = r.b
    return GO_ON


cdef inline Py_ssize_t _next_item(Run* r, Py_ssize_t k, double* dw, double* dv, int32_t* kx) noexcept nogil:
    """Core step k's item, alternating sides: t joins (dw > 0, one item
    more) or s leaves (dw < 0, one less); recorded in r.seq."""
    cdef Py_ssize_t m
    if r.t < r.n and (k % 2 == 0 or r.s < 0):
        m = r.t
        dw[0], dv[0], kx[0] = r.w[m], r.v[m], 1
        r.t += 1
    else:
        m = r.s
        dw[0], dv[0], kx[0] = -r.w[m], -r.v[m], -1
        r.s -= 1
    r.seq[k] = m
    if r.step_of != NULL:
        r.step_of[m] = k
    return m


cdef Py_ssize_t _finish(Run* r, Pool* pool, Py_ssize_t steps, uint8_t* x, double* zout) noexcept nogil:
    """After the last core step: the incumbent's set into ``x`` (or the
    start's result when nothing beat it), and the run's buffers freed."""
    cdef Py_ssize_t res
    cdef Card lc
    cdef const Card* card = r.card
    if pool.runs == 1:
        pool.first_steps = steps
        pool.first_best = r.best_k
    if r.best_k < 0:  # nothing beat greedy / goal (optimise) or reached the goal (decide)
        _free_run(r)
        return _nothing_better(r)
    if card != NULL:  # a recovery run on a subset computes its own counts
        lc = card[0]
        lc.topv = NULL
        card = &lc
    zout[0] = r.best_P
    res = _rebuild(r.w, r.v, r.n, r.c, r.b, r.seq, r.best_k, r.best_V, r.best_item, r.best_P,
                   r.integral, r.tol, pool, card, r.avoid, x)
    _free_run(r)
    return res


cdef Py_ssize_t _rebuild(const double* w, const double* v, Py_ssize_t n, double c, Py_ssize_t b,
                         const Py_ssize_t* seq, Py_ssize_t best_k, const uint64_t* best_V,
                         Py_ssize_t best_item, double best_P, int integral, double tol,
                         Pool* pool, const Card* card, const uint8_t* avoid, uint8_t* x) noexcept nogil:
    """The best state's set into ``x``: the break solution, the remembered
    core steps (``seq[k]`` for k <= best_k, bits of ``best_V``) flipped, and
    the paired item. Steps older than ``VBITS`` are forgotten: with everything
    else fixed, a decide run on those items recovers them (``_recover``),
    under the beam first when the run had one; if that misses, exactly (the
    state being rebuilt exists, so the exact run finds it). ``avoid``: the
    run's avoided set, or NULL."""
    cdef Py_ssize_t i, k, lo, r, beam
    for i in range(n):
        x[i] = i < b
    lo = best_k - VBITS + 1
    if lo < 0:
        lo = 0
    for k in range(lo, best_k + 1):
        if (best_V[(k % VBITS) >> 6] >> (k & 63)) & 1:
            x[seq[k]] ^= 1
    if best_item >= 0:
        x[best_item] ^= 1
    if lo == 0:
        return FOUND
    beam = pool.beam
    r = _recover(w, v, n, c, seq, lo, best_P, integral, tol, pool, card, avoid, x) if beam > 0 else INCONSISTENT
    if r == INCONSISTENT:
        pool.beam = 0
        r = _recover(w, v, n, c, seq, lo, best_P, integral, tol, pool, card, avoid, x)
        pool.beam = beam
    return r


cdef Py_ssize_t _recover(const double* w, const double* v, Py_ssize_t n, double c,
                         const Py_ssize_t* seq, Py_ssize_t lo, double value,
                         int integral, double tol, Pool* pool, const Card* card,
                         const uint8_t* avoid, uint8_t* x) noexcept nogil:
    """``x`` is right except on the items of core steps 0..lo-1: fix the others
    and find those by a *decide* run that must reach ``value`` in total. In
    avoid mode, when the others agree with the avoided set, that run avoids
    its part on those items (the set rebuilt differs from it there)."""
    cdef uint8_t* mark = <uint8_t*>malloc(n)
    cdef uint8_t* subx = <uint8_t*>malloc(lo)
    cdef uint8_t* subav = <uint8_t*>malloc(lo)
    cdef double* sw = <double*>malloc(lo * sizeof(double))
    cdef double* sv = <double*>malloc(lo * sizeof(double))
    cdef Py_ssize_t i, m = 0, r = STATE_LIMIT, bsub, kdet = 0
    cdef double wdet = 0, pdet = 0, zsub
    cdef bint agrees = avoid != NULL
    cdef Card sub
    if mark != NULL and subx != NULL and subav != NULL and sw != NULL and sv != NULL:
        for i in range(n):
            mark[i] = 0
        for i in range(lo):
            mark[seq[i]] = 1
        for i in range(n):
            if mark[i]:
                sw[m] = w[i]
                sv[m] = v[i]
                if avoid != NULL:
                    subav[m] = avoid[i]
                m += 1
            else:
                if avoid != NULL and avoid[i] != AVOID_FREE and x[i] != avoid[i]:
                    agrees = False
                if x[i]:
                    wdet += w[i]
                    pdet += v[i]
                    kdet += 1
        r = NOT_FOUND
        if card != NULL and card.kfix >= 0:  # count mode: the rest of the count
            sub = card[0]
            sub.kfix = card.kfix - kdet
            card = &sub
            if sub.kfix < 0:
                r = INCONSISTENT
        if r == NOT_FOUND:
            pool.avoid = subav if agrees else NULL
            r = _core(sw, sv, m, c - wdet, 1, value - pdet, integral, tol, pool, card, subx, &zsub, &bsub)
        if r == FOUND:
            m = 0
            for i in range(n):
                if mark[i]:
                    x[i] = subx[m]
                    m += 1
        elif r == NOT_FOUND:
            r = INCONSISTENT
    free(mark)
    free(subx)
    free(subav)
    free(sw)
    free(sv)
    return r


class StateLimit(Exception):
    """The states outgrew ``max_states`` (the caller turns this into SolverMemoryError)."""


cdef Pool _new_pool(Py_ssize_t max_states):
    cdef Pool pool
    _clear(&pool)
    pool.max_states = max_states
    pool.peak = 0
    pool.generated = 0
    pool.runs = 0
    pool.first_steps = 0
    pool.beam = 0
    pool.first_best = -1
    pool.limit = 0
    pool.ticks = 0
    pool.stop = 0
    pool.by_weight = NULL
    pool.avoid = NULL
    pool.twin = NULL
    pool.windowed = 0
    pool.win_lam = pool.win_mu = 0.0
    pool.opt_bound = INFINITY
    return pool


# Pair states with items outside the core (``_pairs.pxd``) once a step keeps
# this many states (and a quarter of the items), and again each time that
# doubles; under a beam at least every PAIR_EVERY steps (``_pair_now``).
cdef Py_ssize_t PAIR_MIN = 64
cdef Py_ssize_t PAIR_EVERY = 16


def _configure_pairing(Py_ssize_t min_states):
    """For tests: pair from ``min_states`` states (1: every step of every run).
    Returns the previous value."""
    global PAIR_MIN
    old = PAIR_MIN
    PAIR_MIN = min_states
    return old


def _positive_part_sum_py(const double[::1] ws, const double[::1] vs, double lam, double mu):
    """For tests: ``_positive_part_sum`` of items (ws, vs)."""
    if vs.shape[0] != ws.shape[0]:
        raise ValueError(f"{ws.shape[0]} weights but {vs.shape[0]} values")
    if ws.shape[0] == 0:
        return 0.0
    return _positive_part_sum(&ws[0], &vs[0], ws.shape[0], lam, mu)


def _count_bound_py(const double[::1] w, const double[::1] v, double c, Py_ssize_t k):
    """For tests: ``_count_bound`` on items (w, v); returns (bound, lam, mu)."""
    cdef Py_ssize_t n = w.shape[0]
    cdef double lam = 0, mu = 0, L
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, {n}], got {k}")
    a_ = np.empty(n * sizeof(DI), dtype=np.uint8)
    cand_ = np.empty(n, dtype=np.intp)
    cdef uint8_t[::1] a = a_
    cdef Py_ssize_t[::1] cand = cand_
    L = _count_bound(&w[0], &v[0], n, c, k, 0.0, <DI*>&a[0], &cand[0], &lam, &mu, NULL)
    return L, lam, mu


def _other_py(const double[::1] w, const double[::1] v, double c, double goal, const uint8_t[::1] avoid,
              twin=None):
    """For tests: a decide run in avoid mode on items (w, v) in efficiency
    order (integers): a set within c worth at least ``goal`` that differs
    from ``avoid`` (0, 1, or 2 = out of range) on an item in range, as a
    uint8 array, or None when there is none. As in ``_core``'s avoid mode,
    some set that agrees with ``avoid`` in range must fit and reach the goal.
    ``twin``: each item's previous identical copy in that order, or -1
    (``Pool.twin``), or None."""
    cdef Py_ssize_t n = w.shape[0], r, bb
    cdef double zz
    cdef Pool pool = _new_pool(1 << 40)
    cdef const Py_ssize_t[::1] tw
    out = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] x = out
    if avoid.shape[0] != n:
        raise ValueError(f"avoid has {avoid.shape[0]} items, w has {n}")
    if n == 0:  # the empty set is the only one
        return None
    pool.avoid = &avoid[0]
    if twin is not None:
        tw = np.ascontiguousarray(twin, dtype=np.intp)
        if tw.shape[0] != n:
            raise ValueError(f"twin has {tw.shape[0]} items, w has {n}")
        for r in range(n):
            if not -1 <= tw[r] < r or (tw[r] >= 0 and (w[tw[r]] != w[r] or v[tw[r]] != v[r])):
                raise ValueError(f"twin[{r}] = {tw[r]} is not an earlier identical item or -1")
        pool.twin = &tw[0]
    with nogil:
        r = _core(&w[0], &v[0], n, c, 1, goal, 1, 0.0, &pool, NULL, &x[0], &zz, &bb)
    _release(&pool)
    if r < 0:
        _raise(r, pool)
    return out if r == FOUND else None


def _sort_ascending_py(const double[::1] x):
    """For tests and ``_count_window_py``: ``_radix.sort_ascending`` on ``x``
    (all >= 0): positions by ascending value, ties by position."""
    out = np.empty(x.shape[0], dtype=np.intp)
    cdef Py_ssize_t[::1] o = out
    if x.shape[0] and sort_ascending(&x[0], x.shape[0], &o[0]) < 0:
        raise MemoryError("sparse: sorting by weight")
    return out


def _count_window_py(const double[::1] w, double c, Py_ssize_t k, bint select=False):
    """For tests: ``count_window`` of count k (1 <= k < n) within c, as
    (status, lo, hi): status 1 when it fixes some item (those lighter than
    lo are in every k-set, those heavier than hi in none), 0 when it fixes
    none, 2 when no k-set fits. ``select``: from ``lightest_k`` instead of
    the weight order."""
    cdef Window win
    cdef int r
    cdef double light, wk, wk1
    if not 1 <= k < w.shape[0]:
        raise ValueError(f"k must be in [1, {w.shape[0] - 1}], got {k}")
    cdef Py_ssize_t[::1] by_w = _sort_ascending_py(w)
    memset(&win, 0, sizeof(Window))
    if not select:
        r = count_window(&w[0], w.shape[0], c, k, &by_w[0], &win)
    elif lightest_k(&w[0], w.shape[0], k, &light, &wk, &wk1) < 0:
        raise MemoryError("sparse: selecting the lightest items")
    else:
        r = window_of_lightest(&w[0], w.shape[0], c, light, wk, wk1, &win)
    return r, win.lo, win.hi


def lightest_count_py(const double[::1] w, double c):
    """``_select.lightest_count``: how many of the lightest items of ``w``
    (integers > 0 totalling below 2**53) fit within ``c``."""
    cdef Py_ssize_t k = 0
    if w.shape[0]:
        k = lightest_count(&w[0], w.shape[0], c)
    if k < 0:
        raise MemoryError("sparse: counting the lightest items")
    return k


#: Bytes per state slot (two buffers of weight, value, decision history, item count).
STATE_BYTES = SLOT_BYTES


#: Results of ``Workspace.optimum``, for the orchestration in ``_solver.py``.
RUN_FOUND = FOUND
RUN_OVER_BUDGET = OVER_BUDGET
#: The rounding allowances, for the bounds computed in ``_solver.py``.
TOLERANCES = {"abs_slack": ABS_SLACK, "rel_lp": REL_LP, "rel_card": REL_CARD, "line": LINE_TOL}


cdef class Workspace:
    """One solve's state pool (``Pool``) and count multipliers (``Card``).

    The orchestration in ``_solver.py`` makes one per solve and runs the
    kernels through its methods; ``close`` frees its buffers (so does
    garbage collection). ``lam``, ``mu``: the cardinality multipliers (0, 0:
    none); ``kmax``: the most items that fit; ``topv``: prefix sums of every
    value, largest first (n + 1 of them; kept alive here)."""

    def __cinit__(self, Py_ssize_t max_states, double lam, double mu, double kmax, topv):
        cdef const double[::1] t = topv
        self.pool = _new_pool(max_states)
        self.topv_a = topv
        self.card.lam = lam
        self.card.mu = mu
        self.card.kmax = kmax
        self.card.kfix = -1
        self.card.topv = &t[0]
        self.card.ntop = t.shape[0] - 1

    def __dealloc__(self):
        _release(&self.pool)

    def close(self):
        _release(&self.pool)

    @property
    def generated(self):
        """States generated so far, by every run."""
        return self.pool.generated

    @property
    def opt_bound(self):
        return self.pool.opt_bound

    @opt_bound.setter
    def opt_bound(self, double bound):
        """An upper bound on OPT known beforehand: optimise runs stop at it."""
        self.pool.opt_bound = bound

    def kcount(self, double goal):
        """The count term's k for a set worth ``goal`` (``_kcount``)."""
        return _kcount(&self.card, goal)

    def stats(self, dict stats):
        """``stats`` with the pool's counters added."""
        return _stats(stats, self.pool)

    def optimum(self, const double[::1] ws, const double[::1] vs, double c, bint integral,
                double tol, uint8_t[::1] xs, Py_ssize_t limit):
        """``_optimum`` within ``limit`` states (0: no limit): (RUN_FOUND or
        RUN_OVER_BUDGET, OPT, the break count); the optimal set into ``xs``."""
        cdef double z = 0
        cdef Py_ssize_t b = 0, r
        self.pool.limit = limit
        try:
            r = _optimum(ws, vs, ws.shape[0], c, integral, tol, &self.pool, &self.card, xs, &z, &b)
        finally:
            self.pool.limit = 0
        return r, z, b

    @property
    def limit(self):
        return self.pool.limit

    @limit.setter
    def limit(self, Py_ssize_t states):
        """Runs stop (RUN_OVER_BUDGET) once this many states were generated in
        all (0: no limit)."""
        self.pool.limit = states

    def count_bound(self, const double[::1] ws, const double[::1] vs, double c, Py_ssize_t k, double hint):
        """``_count_bound``: (the bound on every set of exactly k items within
        c, its lam, its mu); ``hint``: a nearby lam, or <= 0."""
        cdef Py_ssize_t n = ws.shape[0]
        cdef double lam = 0, mu = 0, L
        a_ = np.empty(n * sizeof(DI), dtype=np.uint8)
        cand_ = np.empty(n, dtype=np.intp)
        cdef uint8_t[::1] a = a_
        cdef Py_ssize_t[::1] cand = cand_
        with nogil:
            L = _count_bound(&ws[0], &vs[0], n, c, k, hint, <DI*>&a[0], &cand[0], &lam, &mu, &self.pool)
        if self.pool.stop:
            _raise(INTERRUPTED, self.pool)
        return L, lam, mu

    def count_run(self, const double[::1] w, const double[::1] v, double c, double goal, bint integral,
                  double tol, double lam, double mu, Py_ssize_t k, double kmax, uint8_t[::1] x):
        """A count-mode optimise run (sets of exactly k items) that accepts
        sets worth ``goal``: (RUN_FOUND or another result code, the best
        value), the set into ``x``. The items may come in any order: the run
        first takes what the swap window of k leaves free (``_windowed``,
        which orders those items itself); only when the window fixes nothing
        are all of them put in descending d = v - lam w - mu here (near the
        most items that fit the window leaves a fifth of them or fewer, and
        the full sort cost about half of such a run at n = 10^4)."""
        cdef Card card
        cdef Py_ssize_t r, bb, n = w.shape[0]
        cdef double z = 0
        cdef const double[::1] wo, vo
        cdef uint8_t[::1] xo
        if n == 0 or v.shape[0] != n or x.shape[0] != n:
            raise ValueError(f"count_run: needs items, one weight, value and x byte each, got "
                             f"{n}, {v.shape[0]} and {x.shape[0]}")
        card.lam, card.mu, card.kfix, card.kmax, card.topv, card.ntop = lam, mu, k, kmax, NULL, 0
        with nogil:
            r = _windowed(&w[0], &v[0], n, c, 0, goal, integral, tol, &self.pool, &card, NULL, &x[0], &z)
        if r == GO_ON:
            order = descending(np.asarray(v) - lam * np.asarray(w) - mu)
            wo = np.ascontiguousarray(np.asarray(w)[order])
            vo = np.ascontiguousarray(np.asarray(v)[order])
            xo = np.zeros(n, dtype=np.uint8)
            self.pool.windowed = 1  # the window was asked: ``_core`` goes straight to its run
            with nogil:
                r = _core(&wo[0], &vo[0], n, c, 0, goal, integral, tol, &self.pool, &card, &xo[0], &z, &bb)
            np.asarray(x)[order] = xo
        if r < 0 and r != OVER_BUDGET:
            _raise(r, self.pool)
        return r, z


cdef inline int64_t _mod(int64_t b, int64_t a, double inv) noexcept nogil:
    """b mod a (0 <= b < 2**53, a > 0, inv = 1 / a) by a multiplication:
    the quotient's rounding error is a unit or two, corrected here."""
    cdef int64_t r = b - <int64_t>(<double>b * inv) * a
    while r < 0:
        r += a
    while r >= a:
        r -= a
    return r


#: ``integers_below`` leaves more values than this to numpy.
INTEGERS_C_UP_TO = 2048


def integers_below(const double[::1] x, double limit):
    """Whether every x is an integer with |x| below ``limit`` (at most
    2**63): up to INTEGERS_C_UP_TO values, one pass that stops at the first
    that is not (``np.floor`` and a comparison cost more in calls than in
    work there); more, numpy's vectorised test.

    >>> integers_below(np.array([3.0, 0.0, 7.0]), 8.0), integers_below(np.array([3.0, 0.5]), 8.0)
    (True, False)
    """
    cdef Py_ssize_t i
    cdef bint ok = True
    if not limit <= 2.0**63:
        raise ValueError(f"integers_below: limit must be at most 2**63, got {limit!r}")
    if x.shape[0] > INTEGERS_C_UP_TO:  # numpy's SIMD floor is faster there
        a = np.asarray(x)
        return bool(np.abs(a).max() < limit and np.array_equal(a, np.floor(a)))
    with nogil:
        for i in range(x.shape[0]):
            # below 2**63 the cast is defined and exact for integers (libm's floor is a call)
            if not (fabs(x[i]) < limit and x[i] == <double><int64_t>x[i]):
                ok = False
                break
    return ok


def gcd_of(const double[::1] g):
    """The greatest common divisor of integers below 2**53 (as float64; 0
    when there are none or all are 0), stopping as soon as it reaches 1:
    on most instances after a few items, where ``np.gcd.reduce`` reads all.

    >>> gcd_of(np.array([6.0, 9.0, 15.0])), gcd_of(np.array([4.0, 7.0]))
    (3, 1)
    """
    cdef int64_t a = 0, b, t
    cdef double inv = 0.0
    cdef Py_ssize_t i
    with nogil:
        for i in range(g.shape[0]):
            b = <int64_t>fabs(g[i])
            if a > 0:
                b = _mod(b, a, inv)  # gcd(a, b) = gcd(a, b mod a): mostly 0, the gcd kept
                if b == 0:
                    continue
            while b:
                t = a % b
                a = b
                b = t
            if a == 1:
                break
            inv = 1.0 / a
    return a


def break_count(const double[::1] ws, double c):
    """How many items, from the first (efficiency order), fit ``c`` together:
    the break count, ``np.searchsorted(np.cumsum(ws), c, side="right")``
    without the temporary. Integer weights: the running sum is exact."""
    cdef Py_ssize_t b = 0, n = ws.shape[0]
    cdef double used = 0.0
    with nogil:
        while b < n and used + ws[b] <= c:
            used += ws[b]
            b += 1
    return b


def greedy_fill(const double[::1] ws, const double[::1] vs, Py_ssize_t b, double room, uint8_t[::1] x):
    """The items from b on (efficiency order) that still fit ``room``, in
    order, into ``x``: the greedy completion of the break solution. Returns
    their value (summed in order: within n 2**-53 of its magnitude)."""
    cdef Py_ssize_t q
    cdef double added = 0.0
    for q in range(b, ws.shape[0]):
        if ws[q] <= room:
            x[q] = 1
            room -= ws[q]
            added += vs[q]
    return added


cdef double _card_target(const Card* card, double base, double U) noexcept nogil:
    """The largest integer T <= U with floor(base + mu * k(T)) >= T.

    A set worth T holds at least k(T) items (``_kcount``), so its value is at
    most U_card(T) = base + mu * k(T): OPT is at most the largest T with
    U_card(T) >= T. U_card is non-increasing in T (k(T) grows with T, and
    mu < 0 whenever k depends on T), so the T that pass form an interval
    [0, T*], found by bisection on integers (at most 62 steps). Iterating T -> U_card(T)
    instead can jump over T*, when U_card drops past a T whose own bound is
    higher; the decide run at that target then "proves" a set below OPT.
    """
    cdef int64_t lo = 0, hi, mid
    cdef double count_term
    if not (U > 0):
        return U
    hi = <int64_t>U if U < 4e18 else <int64_t>4e18  # integer steps: exact at any size
    while lo < hi:
        mid = lo + (hi - lo + 1) // 2
        count_term = card.mu * _kcount(card, <double>mid)
        if floor(base + count_term + ABS_SLACK + REL_CARD * (fabs(base) + fabs(count_term))) >= <double>mid:
            lo = mid
        else:
            hi = mid - 1
    return <double>lo


cdef enum:
    SUM_BLOCK = 64  # items summed plainly before their block's sum joins a compensated total


cdef double _positive_part_sum(const double* ws, const double* vs, Py_ssize_t n, double lam,
                               double mu) noexcept nogil:
    """The sum of max(0, v_j - lam w_j - mu): plain within blocks of
    SUM_BLOCK items, the blocks' sums compensated (Neumaier), so within
    about SUM_BLOCK units in the last place of the total, as numpy's pairwise
    sum is, in one pass and no temporary."""
    cdef Py_ssize_t i, lo, blk
    cdef double d, part, total = 0.0, comp = 0.0, t
    for blk in range((n + SUM_BLOCK - 1) // SUM_BLOCK):
        lo = blk * SUM_BLOCK
        part = 0.0
        for i in range(lo, min(lo + SUM_BLOCK, n)):
            d = vs[i] - lam * ws[i] - mu
            part += positive_part(d)
        t = total + part  # both >= 0: the larger is total unless part outgrows it
        comp += (total - t) + part if total >= part else (part - t) + total
        total = t
    return total + comp


cdef Py_ssize_t _optimum(const double[::1] ws, const double[::1] vs, Py_ssize_t n,
                         double c, int integral, double tol, Pool* pool,
                         const Card* card, uint8_t[::1] xs, double* z,
                         Py_ssize_t* b) except -9:
    """OPT and an optimal set (efficiency order) into ``xs``.

    With integer values and an active cardinality bound (mu != 0), first a
    heuristic *decide* run at the target U = that bound (the largest U with
    U_card(U) >= U), keeping at most ``BEAM`` states per step, spread evenly
    over the weights. If it reaches U the set is optimal, with nothing left to
    prove; this is what makes inverse strongly correlated items cheap, where
    every state's cardinality bound equals U and a full run must enumerate all
    of them. Otherwise (or then to confirm nothing), one exact *optimise* run.
    """
    cdef Py_ssize_t r, bb = 0
    cdef double U, base, psum = 0.0, wsum = 0.0, room, term
    if integral and n > 0 and (card.mu != 0 or pool.opt_bound < INFINITY):
        with nogil:
            base = card.lam * c + _positive_part_sum(&ws[0], &vs[0], n, card.lam, card.mu)
            while bb < n and wsum + ws[bb] <= c:  # the break item; exact sums: integers below 2**53
                wsum += ws[bb]
                psum += vs[bb]
                bb += 1
        if bb < n:
            room = c - wsum
            term = room * vs[bb] / ws[bb]
            U = floor(psum + term + _slack(psum, term))  # Dantzig's bound, rounded up first
            if card.mu != 0:
                U = _card_target(card, base, U)
            if pool.opt_bound < U:
                U = pool.opt_bound
            pool.beam = BEAM
            with nogil:
                r = _core(&ws[0], &vs[0], n, c, 1, U, integral, tol, pool, card, &xs[0], z, b)
            pool.beam = 0
            if r == OVER_BUDGET:
                return OVER_BUDGET
            if r < 0:
                _raise(r, pool[0])
            if r == 1:
                return 1  # reached an upper bound: optimal
    with nogil:
        r = _core(&ws[0], &vs[0], n, c, 0, 0.0, integral, tol, pool, card, &xs[0], z, b)
    if r == OVER_BUDGET:
        return OVER_BUDGET  # over ``pool.limit``
    if r < 0:
        _raise(r, pool[0])
    return 1


cdef _raise(Py_ssize_t r, Pool pool):
    if r == INTERRUPTED:
        raise_pending()  # the KeyboardInterrupt the handler set
        raise KeyboardInterrupt
    if r == STATE_LIMIT:
        raise StateLimit(pool.max_states)
    raise RuntimeError(f"sparse kernel: internal inconsistency (code {r})")


cdef dict _stats(dict stats, Pool pool):
    stats["peak_states"] = pool.peak
    stats["states"] = pool.generated
    stats["runs"] = pool.runs
    stats["opt_steps"] = pool.first_steps
    stats["opt_found_at"] = pool.first_best
    return stats
