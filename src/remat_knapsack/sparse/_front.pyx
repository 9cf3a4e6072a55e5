# cython: language_level=3
"""The grouped solver's Pareto DP (``_types._Grouped._dp``), compiled, and
its grouping of identical items (``pair_groups``).

Private. ``pareto_dp`` merges binary pieces of the types one by one into a
front of states, prunes each front by Dantzig's bound, and completes every
state by one last type in closed form; ``_types`` chooses the pieces, the
last type and the thresholds, and documents the method.

A front is a list of states sorted by exact weight (``i128``: totals below
2**104, as ``_types`` needs for ``scale=None`` grids) with float64 values
rising strictly along it. A merge adds one piece (weight, value): the states
that take it (those still within the capacity J) are the old front shifted,
already sorted, so the two lists are merged in one linear pass with the
Pareto filter in the same pass, O(S) a step. Ties: at equal weight the state
without the piece comes first, and of the states of one weight the one kept
is the first (in that order) that reaches the largest value.

Each step records, per state, its parent in the previous front and whether
it took the piece (5 bytes a state); the witness is read back from them.
The loop runs without the GIL and checks for Ctrl-C every ``CHECK_EVERY``
merged states.
"""

import numpy as np

from libc.math cimport INFINITY
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport free, malloc

from .._common._interrupt cimport CHECK_EVERY, interrupted, raise_pending
from .._common._realloc cimport grow
from ._select cimport group_ids

cdef extern from *:
    """
    typedef __int128 i128;
    """
    ctypedef long long i128  # Cython's view; the C type is __int128

# pareto_dp's result codes
cdef enum:
    FOUND = 0        # a state reached the target (no target: the best state)
    NOT_FOUND = 1    # no state reaches the target, or every state was pruned
    TOO_MANY = 2     # a front or the steps' records outgrew the budget
    NO_MEMORY = 3
    INTERRUPTED = 4


class TooManyStates(Exception):
    """A probe's DP outgrew its state budget."""


cdef struct Front:
    i128* W          # exact weights, ascending
    double* V        # values, strictly ascending
    Py_ssize_t n, cap


cdef struct Steps:
    int32_t* parent  # step k's records are [start[k], start[k + 1])
    uint8_t* took
    Py_ssize_t* start
    Py_ssize_t used, cap


cdef struct Last:    # the type that completes each state in closed form
    i128 g           # its weight (units of the class root, with a near type)
    int64_t most     # copies (units) available
    double v
    int64_t k        # a near class (``_types._units``): k, delta, count; k = 0 none
    i128 delta
    int64_t count


cdef struct Lp:      # the copies not merged yet in efficiency order, for Dantzig's bound
    int64_t* left    # per efficiency rank
    const double* G
    const double* V
    const double* e
    Py_ssize_t T
    double* cw       # prefix sums from 0 of the ranks with copies left (m + 1 entries)
    double* cv
    double* ee       # their efficiencies, then 0
    Py_ssize_t m


cdef struct Best:    # a completed front's best state and first state reaching the target
    double top
    Py_ssize_t j_top, j_hit
    int64_t cnt_top, cnt_hit


cdef inline int64_t _fill(i128 R, const Last* c) noexcept nogil:
    """The most units of the last type within the residual R >= 0: with a
    near class the weight of u units is u g - min(count, u // k) delta, so u
    is R // g or one more (``_types._units``)."""
    cdef i128 q = R / c.g
    cdef int64_t u, m
    if q >= c.most:
        return c.most
    u = <int64_t>q
    if c.k:
        m = (u + 1) // c.k
        if m > c.count:
            m = c.count
        if <i128>(u + 1) * c.g - <i128>m * c.delta <= R:
            u += 1
    return u


cdef void _complete(const Front* f, i128 J, const Last* c, double hit, Best* b) noexcept nogil:
    """Each state completed by the last type: the best (first of the
    largest value) and the first reaching ``hit``."""
    cdef Py_ssize_t i
    cdef int64_t cnt
    cdef double d
    b.top, b.j_top, b.j_hit, b.cnt_top, b.cnt_hit = -INFINITY, -1, -1, 0, 0
    for i in range(f.n):
        cnt = _fill(J - f.W[i], c)
        d = f.V[i] + <double>cnt * c.v
        if d > b.top:
            b.top, b.j_top, b.cnt_top = d, i, cnt
        if b.j_hit < 0 and d >= hit:
            b.j_hit, b.cnt_hit = i, cnt


cdef Py_ssize_t _merge(const Front* a, i128 pw, double pv, i128 J, Front* b,
                       int32_t* parent, uint8_t* took) noexcept nogil:
    """Front ``a`` with the piece (pw, pv) merged into ``b`` (room for 2 a.n);
    each new state's parent and whether it took the piece. Its size."""
    cdef Py_ssize_t i = 0, j = 0, nb = 0, m = 0, par
    cdef i128 w
    cdef double p, top = -INFINITY
    cdef uint8_t tk
    while nb < a.n and a.W[nb] + pw <= J:  # the shifted states within J: a prefix
        nb += 1
    while i < a.n or j < nb:
        if j >= nb or (i < a.n and a.W[i] <= a.W[j] + pw):  # the old state first on ties
            w, p, par, tk = a.W[i], a.V[i], i, 0
            i += 1
        else:
            w, p, par, tk = a.W[j] + pw, a.V[j] + pv, j, 1
            j += 1
        if p > top:  # not dominated by a lighter (or equal, earlier) state
            if m > 0 and b.W[m - 1] == w:
                m -= 1  # same weight, less value: this one replaces it
            b.W[m], b.V[m], parent[m], took[m] = w, p, <int32_t>par, tk
            m += 1
            top = p
    b.n = m
    return m


cdef void _lp_sums(Lp* lp) noexcept nogil:
    """Prefix sums of the copies left, in efficiency order (as numpy's
    sequential cumsum: the same float64 sums)."""
    cdef Py_ssize_t r, m = 0
    cdef double cnt
    lp.cw[0] = lp.cv[0] = 0.0
    for r in range(lp.T):
        if lp.left[r] > 0:
            cnt = <double>lp.left[r]
            lp.cw[m + 1] = lp.cw[m] + cnt * lp.G[r]
            lp.cv[m + 1] = lp.cv[m] + cnt * lp.V[r]
            lp.ee[m] = lp.e[r]
            m += 1
    lp.ee[m] = 0.0
    lp.m = m


cdef inline double _lp_bound(i128 W, double V, i128 J, const Lp* lp) noexcept nogil:
    """The state's value plus Dantzig's bound of its residual (float64)."""
    cdef double R = <double>(J - W), room
    cdef Py_ssize_t a = 0, b = lp.m + 1, k
    while a < b:  # k = (the number of cw <= R) - 1, at most m
        k = (a + b) >> 1
        if lp.cw[k] <= R:
            a = k + 1
        else:
            b = k
    k = a - 1 if a - 1 < lp.m else lp.m
    room = R - lp.cw[k]
    return V + lp.cv[k] + (room if room > 0 else 0.0) * lp.ee[k]


cdef void _prune(Front* f, Steps* s, i128 J, const Lp* lp, double thr) noexcept nogil:
    """Drop the states whose bound is below ``thr``, and their records in
    the last step."""
    cdef Py_ssize_t i, m = 0, at = s.used - f.n
    for i in range(f.n):
        if _lp_bound(f.W[i], f.V[i], J, lp) >= thr:
            f.W[m], f.V[m] = f.W[i], f.V[i]
            s.parent[at + m], s.took[at + m] = s.parent[at + i], s.took[at + i]
            m += 1
    f.n = m
    s.used = at + m


cdef int _room(Front* f, Steps* s, Py_ssize_t need) noexcept nogil:
    """Room for a front of ``need`` states and ``need`` more records."""
    cdef Py_ssize_t cap
    if need > f.cap:
        cap = max(need, 2 * f.cap)
        if grow(<void**>&f.W, cap * sizeof(i128)) or grow(<void**>&f.V, cap * sizeof(double)):
            return NO_MEMORY
        f.cap = cap
    if s.used + need > s.cap:
        cap = max(s.used + need, 2 * s.cap)
        if grow(<void**>&s.parent, cap * sizeof(int32_t)) or grow(<void**>&s.took, cap):
            return NO_MEMORY
        s.cap = cap
    return FOUND


cdef struct Pieces:  # the pieces in merge order
    const int64_t* t     # type
    const int64_t* rank  # its efficiency rank
    const int64_t* q     # copies
    const i128* w        # weight
    const double* v      # value
    Py_ssize_t n


cdef struct Run:     # one DP's thresholds, budget and outcome
    i128 J
    bint has_target
    double target, lower, tol, slack
    Py_ssize_t max_states, peak, held, merged
    Py_ssize_t steps     # pieces merged when it ended
    Py_ssize_t j         # the state found in the last front
    int64_t cnt          # and its units of the last type


cdef int _step(Front** f, Front** g, Steps* s, const Pieces* p, Lp* lp, Run* r, Py_ssize_t i) noexcept nogil:
    """Merge piece i into the front (``f`` then points at the new one)."""
    cdef Front* x
    if _room(g[0], s, 2 * f[0].n):
        return NO_MEMORY
    s.start[i] = s.used
    _merge(f[0], p.w[i], p.v[i], r.J, g[0], s.parent + s.used, s.took + s.used)
    s.used += g[0].n
    x = f[0]
    f[0], g[0] = g[0], x
    lp.left[p.rank[i]] -= p.q[i]
    r.steps = i + 1
    r.merged += f[0].n
    if r.merged >= CHECK_EVERY:
        r.merged = 0
        if interrupted():
            return INTERRUPTED
    return FOUND


cdef int _run(Front* f, Front* g, Steps* s, const Pieces* p, const Last* c, Lp* lp, Run* r) noexcept nogil:
    """The DP over the pieces: ``_types._Grouped._dp``'s loop."""
    cdef Best b
    cdef Py_ssize_t i
    cdef int code
    f.W[0], f.V[0], f.n = 0, 0.0, 1
    for i in range(p.n + 1):
        if i:
            code = _step(&f, &g, s, p, lp, r, i - 1)
            if code != FOUND:
                return code
        _complete(f, r.J, c, r.target - r.tol, &b)
        if r.has_target and b.j_hit >= 0:
            r.j, r.cnt = b.j_hit, b.cnt_hit
            return FOUND
        r.lower = max(r.lower, b.top)
        r.j, r.cnt = b.j_top, b.cnt_top
        if i == p.n:
            break
        if i:
            _lp_sums(lp)
            _prune(f, s, r.J, lp, (r.target if r.has_target else r.lower) - r.slack)
        r.held += f.n
        r.peak = max(r.peak, f.n, r.held // 4)
        if f.n > r.max_states or r.held > 4 * r.max_states:
            return TOO_MANY
        if f.n == 0:
            return NOT_FOUND
    return NOT_FOUND if r.has_target else FOUND


cdef void _witness(const Steps* s, const Pieces* p, const Run* r, int64_t* y) noexcept nogil:
    """The counts of the state found, read back along its parents."""
    cdef Py_ssize_t k, rec, j = r.j
    for k in range(r.steps - 1, -1, -1):
        rec = s.start[k] + j
        if s.took[rec]:
            y[p.t[k]] += p.q[k]
        j = s.parent[rec]


cdef i128 _i128(x) except? -1:
    """A Python int below 2**104 as i128 (by two 61-bit halves)."""
    return (<i128>(<int64_t>(x >> 61)) << 61) | <i128>(<int64_t>(x & ((1 << 61) - 1)))


def pareto_dp(const int64_t[::1] piece_t, const int64_t[::1] piece_q, list piece_w,
              const double[::1] piece_v, J, tuple last, near, const int64_t[::1] left,
              const int64_t[::1] eff_types, const double[::1] eff_G, const double[::1] eff_V,
              const double[::1] eff_e, target, double lower, double tol, double slack,
              Py_ssize_t max_states):
    """The Pareto DP of ``_types._Grouped._dp``: pieces (type, copies, exact
    weight, value) merged in order within the capacity J, each front pruned
    by Dantzig's bound of the copies not merged yet (``left``: each type's
    copies before the first piece; the types in efficiency order ``eff_types`` with their
    weights, values and efficiencies) against ``target`` (or, when it is
    None, the best value so far, at least ``lower``) less ``slack``, and
    every state completed by ``last`` = (type, weight, copies, value), a
    near class (k, delta, count) when ``near`` is not None.

    Returns (counts, peak): the first state reaching ``target - tol`` (no
    target: the best state), or None; peak is the largest of the fronts and
    a quarter of all records kept. Raises TooManyStates past ``max_states``.
    """
    cdef Py_ssize_t T = eff_types.shape[0], n = piece_t.shape[0], i
    cdef Front f, g
    cdef Steps s
    cdef Last c
    cdef Lp lp
    cdef Pieces p
    cdef Run r
    cdef int code
    rank_a = np.empty(T, dtype=np.int64)
    rank_a[np.asarray(eff_types)] = np.arange(T)
    piece_r_a = rank_a[np.asarray(piece_t)] if n else np.zeros(1, dtype=np.int64)
    cdef int64_t[::1] piece_r = piece_r_a
    left_r_a = np.asarray(left)[np.asarray(eff_types)]  # per efficiency rank, a copy
    cdef int64_t[::1] left_r = left_r_a
    y_a = np.zeros(T, dtype=np.int64)
    cdef int64_t[::1] y = y_a
    c.g, c.most, c.v = _i128(last[1]), last[2], last[3]
    c.k, c.delta, c.count = 0, 0, 0
    if near is not None:
        c.k, c.delta, c.count = near[0], _i128(near[1]), near[2]
    r.J, r.has_target = _i128(J), target is not None
    r.target = target if target is not None else INFINITY
    r.lower, r.tol, r.slack, r.max_states = lower, tol, slack, max_states
    r.peak = r.held = r.merged = r.steps = 0
    r.j, r.cnt = -1, 0
    f.W, f.V, f.n, f.cap = <i128*>malloc(16 * sizeof(i128)), <double*>malloc(16 * sizeof(double)), 0, 16
    g.W, g.V, g.n, g.cap = <i128*>malloc(16 * sizeof(i128)), <double*>malloc(16 * sizeof(double)), 0, 16
    s.parent, s.took, s.used, s.cap = NULL, NULL, 0, 0
    s.start = <Py_ssize_t*>malloc((n + 1) * sizeof(Py_ssize_t))
    pw = <i128*>malloc((n + 1) * sizeof(i128))
    lp.cw = <double*>malloc((T + 1) * sizeof(double))
    lp.cv = <double*>malloc((T + 1) * sizeof(double))
    lp.ee = <double*>malloc((T + 1) * sizeof(double))
    try:
        if not (f.W and f.V and g.W and g.V and s.start and pw and lp.cw and lp.cv and lp.ee):
            raise MemoryError
        for i in range(n):
            pw[i] = _i128(piece_w[i])
        p.t = &piece_t[0] if n else NULL
        p.q = &piece_q[0] if n else NULL
        p.v = &piece_v[0] if n else NULL
        p.rank, p.w, p.n = &piece_r[0], pw, n
        lp.left, lp.G, lp.V, lp.e, lp.T = &left_r[0], &eff_G[0], &eff_V[0], &eff_e[0], T
        with nogil:
            code = _run(&f, &g, &s, &p, &c, &lp, &r)
            if code == FOUND:
                _witness(&s, &p, &r, &y[0])
        if code == INTERRUPTED:
            raise_pending()
            raise KeyboardInterrupt
        if code == NO_MEMORY:
            raise MemoryError
        if code == TOO_MANY:
            raise TooManyStates
        if code == NOT_FOUND:
            return None, r.peak
        y[<Py_ssize_t>last[0]] += r.cnt
        return y_a, r.peak
    finally:
        free(f.W)
        free(f.V)
        free(g.W)
        free(g.V)
        free(s.parent)
        free(s.took)
        free(s.start)
        free(pw)
        free(lp.cw)
        free(lp.cv)
        free(lp.ee)


def more_pairs_than(const double[::1] w, const double[::1] v, Py_ssize_t most):
    """Whether the items (w, v) hold more than ``most`` distinct (weight,
    value) pairs: a scan that keeps the pairs seen so far (at most
    ``most``, each compared in turn) and stops at the first one too many.
    O(n most); on items of many pairs it stops after about ``most`` items.

    >>> more_pairs_than(np.array([1.0, 1.0, 2.0]), np.array([3.0, 3.0, 3.0]), 1)
    True
    """
    cdef Py_ssize_t n = w.shape[0], i, t, seen = 0
    cdef bint more = False
    if v.shape[0] != n:
        raise ValueError(f"more_pairs_than: {n} weights but {v.shape[0]} values")
    if most < 0:
        raise ValueError(f"more_pairs_than: most must be >= 0, got {most}")
    seen_a = np.empty(2 * most + 2)
    cdef double[::1] pair = seen_a
    with nogil:
        for i in range(n):
            t = 0
            while t < seen and not (pair[2 * t] == w[i] and pair[2 * t + 1] == v[i]):
                t += 1
            if t == seen:
                if seen == most:
                    more = True
                    break
                pair[2 * seen] = w[i]
                pair[2 * seen + 1] = v[i]
                seen += 1
    return more


def pair_groups(const double[::1] w, const double[::1] v, Py_ssize_t most):
    """Items grouped by equal (weight, value) (no NaN, no -0.0), by hashing
    (``_select.group_ids``, expected O(n)): (each item's group, numbered in
    order of first appearance; each group's first item), or None when
    there are more than ``most`` groups."""
    cdef Py_ssize_t n = w.shape[0], i, groups
    ids_a = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] ids = ids_a
    if n == 0:
        return ids_a, np.zeros(0, dtype=np.intp)
    with nogil:
        groups = group_ids(&w[0], &v[0], n, &ids[0])
    if groups < 0:
        raise MemoryError
    if groups > most:
        return None
    first_a = np.empty(groups, dtype=np.intp)
    cdef Py_ssize_t[::1] first = first_a
    cdef Py_ssize_t seen = 0
    for i in range(n):
        if ids[i] == seen:  # first appearances come in order: 0, 1, 2, ...
            first[seen] = i
            seen += 1
            if seen == groups:
                break
    return ids_a, first_a
