# cython: language_level=3
"""What a count run keeps of its items once the swap window of its count
(``_count_window.pxd``) has fixed the others: the free items (``Sub``) in the
run's order, the sums of those every set holds, the count multipliers
refitted to them (``_sub_card``, with the cheaper checks first) and the
avoided set of an avoid-mode run over them (``_sub_avoid``).

Inline, for ``_expand``'s windowed runs (``_windowed``, ``avoid_windowed``).
"""

from libc.math cimport fabs, INFINITY
from libc.stdint cimport uint8_t
from libc.stdlib cimport free, malloc

from ._count_bound cimport DI, _count_bound
from ._count_window cimport WINDOW_FIXES, WINDOW_NONE, Window, count_window, window_of_lightest
from ._pool cimport (ABS_SLACK, AVOID_FREE, GO_ON, INTERRUPTED, NOT_FOUND, REL_CARD, STATE_LIMIT, Card, Pool)
from ._radix cimport sort_ascending
from ._select cimport lightest_k


cdef struct Sub:
    # The items a count window leaves free (``_windowed``), by descending d.
    double* w
    double* v
    Py_ssize_t* item   # their positions among the run's items
    uint8_t* x
    Py_ssize_t m
    double w_in        # the weight and value of the items every k-set holds
    double v_in


cdef inline int _sub_gather(const double* w, const double* v, Py_ssize_t n, const Window* win,
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


cdef inline void _free_sub(Sub* sb) noexcept nogil:
    free(sb.w)
    free(sb.v)
    free(sb.item)
    free(sb.x)


cdef inline int _sub_order(Sub* sb, double lam, double mu) noexcept nogil:
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


cdef inline Py_ssize_t _refit(const Sub* sb, double c, double hint, Pool* pool, Card* sub) noexcept nogil:
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


cdef inline double _sub_lag(const Sub* sb, double c, Py_ssize_t k, double lam, double mu) noexcept nogil:
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


cdef inline Py_ssize_t _sub_card(const Sub* sb, double c, Py_ssize_t k, const Card* card, int decide,
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


cdef inline void _sub_set(const Sub* sb, const double* w, Py_ssize_t n, const Window* win,
                          uint8_t* x) noexcept nogil:
    """A run's set on the free items of ``sb`` (``sb.x``) over all n items
    into ``x``: the items the window fixes in (lighter than win.lo) with it,
    those it fixes out without."""
    cdef Py_ssize_t q
    for q in range(n):
        x[q] = w[q] < win.lo
    for q in range(sb.m):
        x[sb.item[q]] = sb.x[q]


cdef inline Py_ssize_t _window_of(const double* w, Py_ssize_t n, double c, Py_ssize_t k,
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


cdef inline int _avoid_check(const double* w, Py_ssize_t n, const Window* win, const uint8_t* avoid) noexcept nogil:
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


cdef inline int _sub_avoid(const Sub* sb, Py_ssize_t n, const uint8_t* avoid, const Py_ssize_t* twin,
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
