# cython: language_level=3
"""One run of the expanding core (``_expand._core``): its record (``Run``:
the question, the core, the bounds and the incumbent) and its set-up, the
start state and the bounds at the root, in efficiency order
(``_plain_start``: the break solution and the greedy set) or in count mode
(``_count_start``: the first kfix items in order of reduced profit).

Inline, for ``_expand`` and the core step (``_step.pxd``).
"""

from libc.math cimport fabs, INFINITY
from libc.stdint cimport uint8_t, uint64_t
from libc.stdlib cimport free, malloc, qsort

from ._pool cimport (ABS_SLACK, AVOID_FREE, FOUND, GO_ON, NO_BETTER, NOT_FOUND, REL_CARD, STATE_LIMIT, VW, Card,
                     _kcount, _slack)


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


cdef inline int _cmp_desc(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*>a)[0], y = (<const double*>b)[0]
    return (x < y) - (x > y)


cdef inline int _local_counts(const double* w, const double* v, Py_ssize_t n, double c,
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


cdef inline double _threshold(int decide, double goal, double gp, int integral,
                              double tol) noexcept nogil:
    """The value a state must reach: the goal (decide), or more than the
    best of ``goal`` (a value known reachable) and ``gp`` (optimise)."""
    if decide:
        return goal - tol
    if gp > goal:
        goal = gp
    return goal + 1.0 if integral else goal + tol


cdef inline Py_ssize_t _break_greedy(const double* w, const double* v, Py_ssize_t n, double c,
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


cdef inline void _reduced_sums(const double* w, const double* v, Py_ssize_t n, double lam, double mu,
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


cdef inline void _free_run(Run* r) noexcept nogil:
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


cdef inline Py_ssize_t _count_start(Run* r, uint8_t* x) noexcept nogil:
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


cdef inline Py_ssize_t _plain_start(Run* r, uint8_t* x) noexcept nogil:
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


cdef inline Py_ssize_t _all_fit_other(Run* r, uint8_t* x) noexcept nogil:
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
