# cython: language_level=3
"""Bounds of the canonical pass on the free items below a witness item k
(a prefix of them, in index order), each in O(sqrt n) or one pass, before any
decide run: the value sum, the Lagrangian and count bounds of a decide run's
root (``_root_bound``, from the count block sums, ``_blocks.pxd``), Dantzig's
bound at their own break item (``_lp_keep``), and the shortest prefix whose
bounds reach the target (``_shortest_prefix``).

Private; ``_canonical``, ``_fills`` and ``_decide`` call these through
``_prefix_bounds.pxd`` (no GIL).
"""

from libc.math cimport fabs, INFINITY

from ._blocks cimport blk_below, blk_break, blk_within
from ._pool cimport ABS_SLACK, REL_CARD, REL_LP, REL_SEARCH
from ._scan_state cimport Scan, _below_target


cdef void _sums_below(Scan* s, Py_ssize_t k) noexcept nogil:
    """Bring the count sums down to the free items below k: O(1) an item
    dropped since the last read (the pass drops many between two)."""
    blk_below(&s.by_w, k)
    if s.qcard.mu < 0:  # the value sums are read for kmin only
        blk_below(&s.by_val, k)


cdef double _root_bound(Scan* s, Py_ssize_t k) noexcept nogil:
    """An upper bound on the free items below k within s.j, in
    O(sqrt n) (plus O(1) per item dropped since the last read, ``_sums_below``):
    their value sum, the Lagrangian bound of multiplier s.lam, with the count
    path exactly s.kneed of them, and with the count structures the count
    bound of a decide run's root (-inf when that is below the target; its
    count goes to s.kmax)."""
    cdef double ub = s.pre_v[k], lag, slack
    cdef double sl = ABS_SLACK + REL_LP * (fabs(s.tgt) + s.pre_v[k])
    lag = s.lam * s.j + s.pre_d[k]
    if lag < ub:
        ub = lag
    if s.cm:  # exactly kneed of the k items below
        lag = s.kcard.lam * s.j + s.kcard.mu * s.kneed + s.pre_k[k] if s.kneed <= k else -INFINITY
        if lag < ub:
            ub = lag
        s.kcard.kfix = s.kneed
    if s.counts and ub + sl >= s.tgt - s.tol:
        slack = ABS_SLACK + REL_CARD * (s.pre_ca[k] + s.qcard.lam * fabs(s.j)
                                        + fabs(s.qcard.mu) * s.nu + fabs(s.tgt))
        # kmax (most of the lightest items within j) only falls as the pass
        # goes down (fewer items, less room), so the last one still bounds:
        # tried before the sums' walk, which it mostly saves.
        if s.qcard.mu >= 0 and _count_lag(s, k, s.kmax) + slack < s.tgt - s.tol:
            return -INFINITY
        _sums_below(s, k)
        if _count_lag(s, k, _sums_count(s, k)) + slack < s.tgt - s.tol:
            ub = -INFINITY
    return ub


cdef double _sums_count(Scan* s, Py_ssize_t k) noexcept nogil:
    """The count of a decide run's root from the count sums (holding the
    free items below k): kmax, the most of the lightest items within s.j
    (kept: ``s.kmax``), or (mu < 0) kmin, the fewest of the most valuable
    that reach the target."""
    cdef double kk, goal, key
    kk = s.kmax = blk_within(&s.by_w, s.j, False, &key)
    if s.qcard.mu >= 0:
        return kk
    goal = (s.tgt - s.tol - ABS_SLACK) / (1 + REL_SEARCH)
    kk = blk_within(&s.by_val, goal, True, &key)
    if s.pre_v[k] < goal:  # not even all of them
        return INFINITY
    return kk + 1


cdef inline double _count_lag(const Scan* s, Py_ssize_t k, double kk) noexcept nogil:
    """The count bound of the free items below k within s.j, with kk items."""
    return s.qcard.lam * s.j + s.qcard.mu * kk + s.pre_c[k]


cdef double _dantzig_streamed(const Scan* s, Py_ssize_t k) noexcept nogil:
    """Dantzig's bound of the free items below k within s.j: one pass over
    the efficiency order, up to their break item."""
    cdef Py_ssize_t q
    cdef double room = s.j, val = 0.0
    for q in range(s.nu):
        if s.eff_rank[q] < k:
            if s.eff_w[q] > room:
                return val + room * (s.eff_v[q] / s.eff_w[q])
            room -= s.eff_w[q]
            val += s.eff_v[q]
    return val  # every item below k fits


cdef bint LP_KEEP = True


def _configure_lp(bint on):
    """Test knob: whether the pass asks ``_lp_keep``. Returns the old setting."""
    global LP_KEEP
    old = LP_KEEP
    LP_KEEP = on
    return old


cdef bint _lp_keep(Scan* s, Py_ssize_t k) noexcept nogil:
    """Whether Dantzig's bound of the free items below k within s.j (at
    their own break item, where ``_root_bound`` has a fixed multiplier) is
    below the target. From the efficiency blocks (``s.by_eff``, O(sqrt nu))
    while k is the pass's own position, else streamed (O(nu), a question
    below it: ``_least_prefix``); a decide run would gather every free item
    to find the same at its root (profit ceiling items: most proofs)."""
    cdef double ub, wsum, vsum
    cdef Py_ssize_t r
    if not LP_KEEP:
        return False
    s.lp_tries += 1
    if k <= s.by_eff.below and k >= s.scan_k:
        blk_below(&s.by_eff, k)
        r = blk_break(&s.by_eff, s.j, &wsum, &vsum)
        ub = vsum if r < 0 else vsum + (s.j - wsum) * (s.eff_v[r] / s.eff_w[r])
        s.lp_k, s.lp_r, s.lp_w, s.lp_v, s.lp_j = k, r, wsum, vsum, s.j  # for ``_greedy_below``
    else:
        ub = _dantzig_streamed(s, k)
        s.lp_k = -1
    if _below_target(s, k, ub):
        s.lp_kept += 1
        return True
    return False


cdef Py_ssize_t _shortest_prefix(const Scan* s, Py_ssize_t k) noexcept nogil:
    """The least p <= k such that the value sum and the Lagrangian bound
    (multiplier s.lam) of the free items 0..p-1 both reach the target: no
    shorter prefix holds a set that does. Both grow with p: bisection."""
    cdef Py_ssize_t lo = 0, hi = k, mid
    cdef double goal
    while lo < hi:
        mid = (lo + hi) // 2
        goal = s.tgt - s.tol - (ABS_SLACK + REL_LP * (fabs(s.tgt) + s.pre_v[mid]))
        if s.pre_v[mid] >= goal and s.lam * s.j + s.pre_d[mid] >= goal:
            hi = mid
        else:
            lo = mid + 1
    return lo
