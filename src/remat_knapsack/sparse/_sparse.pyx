# cython: language_level=3
"""The sparse solver's compiled face: one solve's ``Workspace`` and the
numeric helpers of the orchestration.

Private. ``remat_knapsack.sparse._solver`` validates, checks memory and calls these.
Weights are float64 here (integers below 2**53 are exact in float64, and
``scale=None`` weights are float64 anyway); values are float64 > 0.

``Workspace``
    One solve's pool and multipliers, and the runs the orchestration in
    ``_solver.py`` (``_kernel``) calls: ``optimum`` (OPT from one *optimise*
    run of ``_expand._core``, after a heuristic decide run at the count
    bound's target; it stops early at the class-count bound of ``_lines``
    when the items lie on two lines), ``count_bound`` (the LP bound of every
    set of exactly k items, ``_count_bound.pxd``) and ``count_run`` (the
    count path's runs). The canonical set among the optimal ones is
    ``_canonical``'s, with decide runs of ``_core`` in the same workspace.

``integers_below``, ``gcd_of``, ``break_count``, ``greedy_fill``, ``lightest_count_py``
    One-pass helpers of ``_solver.py``: the value grid, gcd division, the
    break item and the greedy set.

The runs themselves are ``_expand``'s; what every run shares (result codes,
the pool, the card, the rounding allowances) is declared in ``_pool.pxd``,
and ``_sparse.pxd`` declares ``Workspace`` and ``_raise`` for the canonical
pass. The ``_py`` functions are test faces of the kernels.
"""

import numpy as np

from libc.math cimport fabs, floor, INFINITY
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free
from libc.string cimport memset

from .._common._interrupt cimport raise_pending
from ._count_bound cimport DI, _count_bound
from ._count_window cimport Window, count_window, window_of_lightest
from ._expand cimport _core, _windowed
from ._order import descending
from ._pool cimport (ABS_SLACK, BEAM, FOUND, GO_ON, INTERRUPTED, LINE_TOL, OVER_BUDGET, REL_CARD, REL_LP,
                     SLOT_BYTES, STATE_LIMIT, Card, Pool, _kcount, _slack)
from ._positive cimport positive_part
from ._radix cimport sort_ascending
from ._select cimport lightest_count, lightest_k


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
