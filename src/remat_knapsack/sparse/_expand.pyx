# cython: language_level=3
"""The expanding-core run of the sparse solver: one Pareto DP run over
(weight, value) states (``_core``), and the count runs on what the swap
window of a count leaves free (``_windowed``, ``avoid_windowed``).

Private. ``_sparse`` (``Workspace``: OPT and the count path's runs) and the
canonical pass (``_canonical`` and the modules it drives) call these through
``_expand.pxd``; every run releases the GIL.

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

``_windowed``, ``avoid_windowed``
    A count run (or an avoid-mode decide run whose sets all hold one count)
    on integral items: on the items the swap window of its count leaves free
    (``_count_window.pxd``), with the count multipliers refitted to them
    (``_window_items.pxd``).

A run's record and set-up are in ``_run.pxd``, one core step (merge,
dominance, pairing, item reduction) in ``_step.pxd``; the pool, the card and
the result codes in ``_pool.pxd``.
"""

from libc.math cimport INFINITY
from libc.stdint cimport int32_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from .._common._realloc cimport grow
from ._count_window cimport WINDOW_EMPTY, WINDOW_FIXES, Window
from ._pairs cimport Pairs, pairs_free, pairs_init
from ._pool cimport (AVOID_FREE, FOUND, GO_ON, INCONSISTENT, INTERRUPTED, NOT_FOUND, OVER_BUDGET, STATE_LIMIT,
                     VBITS, VW, Card, Pool, _tick)
from ._run cimport Run, _count_start, _free_run, _nothing_better, _plain_start
from ._step cimport _merge, _pair, _skip_fixed, _skip_fixed_count, _twin_setup
from ._window_items cimport (AVOID_FIXED, AVOID_OPEN, REFIT_DONE, Sub, _avoid_check, _free_sub, _sub_avoid,
                             _sub_card, _sub_gather, _sub_order, _sub_set, _window_of)


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


#: Count runs on integral items first fix what the swap window of their
#: count fixes (``_windowed``); tests turn it off to compare.
cdef bint COUNT_WINDOW = True


def _configure_count_window(bint on):
    """For tests: whether count runs use the swap window. Returns the previous setting."""
    global COUNT_WINDOW
    old = COUNT_WINDOW
    COUNT_WINDOW = on
    return old


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
