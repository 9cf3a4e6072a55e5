# cython: language_level=3
"""The canonical pass of the sparse solver: among the optimal sets, the one
PyTorch's ``dp_knapsack`` backtrack returns.

Private. ``remat_knapsack.sparse._solver`` (``_kernel``) calls ``canonical`` once OPT
is known and the reduction has fixed what it can; the runs it asks for are
``_expand._core``'s, in the same ``Workspace`` (pool and multipliers).

Top-down over the free items (``_scan``): an item not in the current optimal
witness is left out at no cost; an item in it (``_settle``, cheapest test
first) is kept when a group-mate above was needed or the bounds of the items
below it cannot reach the target (``_prefix_bounds``: ``_root_bound``, value
sum, Lagrangian bound, count bound from block sums, ``_blocks``; then
``_lp_keep``: Dantzig's bound at their own break item); it is left out when
everything below fits, when the greedy set below reaches the target
(``_decide._greedy_below``), when a decide run on the shortest prefix the
bounds allow finds a set (``_decide._prefix_probe``), or when a decide run on
the items below it does (``_decide._query``); a decide run that exhausts its
search proves it needed. On subset-sum items (value = weight) the question
goes to the complement in the prefix when that is smaller
(``_fills._complement``: only the light items can be left out of a tight
prefix), and a yes is followed down to the least prefix that holds a set
(``_fills._least_prefix``, bisection). When those proofs grow expensive,
uniqueness runs (``_unique``) settle whole blocks of items on which every set
left agrees with the witness.

``canonical`` sets up the ``Scan``'s arrays (``_scan_state.pxd``): the free
items' orders and prefix sums, and the groups of identical items, whose
copies the canonical set takes lowest-indexed first.
"""

from time import perf_counter

import numpy as np

from libc.math cimport fabs
from libc.stdint cimport uint8_t
from libc.string cimport memset

from ._blocks cimport Blocks, blk_below, blk_break, blk_init, blk_nodes, blk_shift, blk_within
from ._class_counts cimport ClassCounts, cc_bound
from ._decide cimport _greedy_below, _greedy_due, _prefix_probe, _query
from ._fills cimport fills_setup
from ._pool cimport INTERRUPTED, LINE_TOL, Card, Pool, _tick
from ._positive cimport positive_part
from ._prefix_bounds cimport _lp_keep, _root_bound
from ._scan_state cimport BLOCK, CHAIN_KEEP, KEEP, LEAVE_OUT, SCAN_DONE, Scan, _below_target
from ._select cimport group_ids
from ._sparse cimport Workspace, _raise
from ._unique cimport _try_unique, unique_setup

from ._lines import Below
from ._order import ascending, descending

# The count-fill knobs, where tests/oracles.py and benchmarks/bench_core.py
# reach them (they live in ``_fills``, with the questions they tune).
from ._fills import _configure_fill_bits, _configure_fill_greedy  # no-cython-lint


cdef tuple _count_structures(fw_a, fv_a, w_rank_a, v_by_w, const Card* card, bint counts):
    """The free items by descending value, their values in that order, and
    ``_count_sums``'s positions and prefix sums (one-element placeholders
    when not ``counts``). ``v_by_w``: their values in weight order (``w_rank_a``)."""
    if not counts:
        one = np.zeros(1, dtype=np.intp)
        return one, np.zeros(1), one, one, np.zeros(1), np.zeros(1)
    # descending values, ties in any order: only sums and counts are read.
    # Where the values follow the weights (strongly correlated, subset sum,
    # profit ceiling) the weight order read backwards is one, with no sort.
    cdef Py_ssize_t nf = v_by_w.shape[0]
    if nf and bool(np.all(v_by_w[1:] >= v_by_w[:nf - 1])):
        by_v_a = np.ascontiguousarray(w_rank_a[::-1])
        by_v_v_a = np.ascontiguousarray(v_by_w[::-1])
    else:
        by_v_a = np.ascontiguousarray(ascending(fv_a)[::-1])
        by_v_v_a = fv_a[by_v_a]
    return (by_v_a, by_v_v_a) + _count_sums(fw_a, fv_a, w_rank_a, by_v_a, card.lam, card.mu)


cdef tuple _count_sums(fw_a, fv_a, by_w_a, by_v_a, double lam, double mu):
    """For the canonical pass, given the free items by weight (ascending,
    ``by_w_a``) and by value (descending, ``by_v_a``): each item's position
    in both orders, and prefix sums of max(0, d) and |d| for
    d = v - lam w - mu (index order)."""
    cdef Py_ssize_t nu = fw_a.shape[0], q
    w_pos_a = np.empty(nu, dtype=np.intp)
    v_pos_a = np.empty(nu, dtype=np.intp)
    cdef const Py_ssize_t[::1] bw = by_w_a, bv = by_v_a
    cdef Py_ssize_t[::1] wp = w_pos_a, vp = v_pos_a
    with nogil:
        for q in range(nu):
            wp[bw[q]] = q
            vp[bv[q]] = q
    return (w_pos_a, v_pos_a) + _prefix_reduced(fw_a, fv_a, lam, mu)


cdef Py_ssize_t GROUP_FROM = 64


cdef _identical_groups(const double[::1] fw, const double[::1] fv, const Py_ssize_t[::1] by_w,
                       const double[::1] w_by_w, const double[::1] v_by_w):
    """Group ids of the items: equal exactly when weight and value are.
    ``by_w``: the items by ascending weight, ``w_by_w`` and ``v_by_w`` their
    weights and values in that order (read in sequence: no cache miss an
    item). Where the value follows the weight (the usual case: every class
    whose value is a function of the weight, and real graphs) each run of
    equal weights is one group, found in one pass; when a run mixes values,
    by hashing (``_select.group_ids``, O(n) expected, but a cache miss an
    item)."""
    cdef Py_ssize_t n = fw.shape[0], q, gid = 0
    cdef bint mixed = False, same
    g = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] out = g
    if n == 0:
        return g
    with nogil:
        out[by_w[0]] = 0
        for q in range(1, n):  # no branch on the weights' runs, whose lengths vary at random
            same = w_by_w[q] == w_by_w[q - 1]
            mixed |= same & (v_by_w[q] != v_by_w[q - 1])
            gid += not same
            out[by_w[q]] = gid
    if mixed and group_ids(&fw[0], &fv[0], n, &out[0]) < 0:
        raise MemoryError("sparse: grouping identical items")
    return g


cdef _lowest_copies(x_a, grp_a):
    """The same witness with each group of identical items' copies moved to
    its lowest positions (same weight and value): the canonical set's. O(n)."""
    cdef Py_ssize_t q, n = x_a.shape[0]
    held_a = np.zeros(n + 1, dtype=np.intp)  # group ids are below n
    cdef Py_ssize_t[::1] held = held_a
    cdef const Py_ssize_t[::1] grp = grp_a
    cdef uint8_t[::1] x = x_a
    with nogil:
        for q in range(n):  # the witness's copies in each group
            held[grp[q]] += x[q]
        for q in range(n):  # ascending positions: each group's first copies keep that count
            x[q] = held[grp[q]] > 0
            held[grp[q]] -= x[q]
    return x_a


cdef tuple _free_orders(const Py_ssize_t[::1] order, const Py_ssize_t[::1] free_idx, Py_ssize_t n,
                        const double[::1] fw, const double[::1] fv):
    """The free items (positions in ``free_idx``) in efficiency order,
    filtered from ``order`` (every item's, sorted once), with their weights
    and values in that order; then the same three by ascending weight (ties
    in any order: groups of equal weight stay together). On the items of a
    line (strongly correlated: v / w falls as w grows; inverse strongly: it
    rises) that is the efficiency order, or that order read backwards:
    checked in the same pass, no sort. When every item is free (``free_idx``
    is 0..n-1) ``order`` is the first order as it is. O(n) but for that sort."""
    cdef Py_ssize_t nu = free_idx.shape[0], q, i, r, m = 0
    cdef bint up = True, down = True, every = nu == n
    rank_a = None if every else np.full(n, -1, dtype=np.intp)
    eff_a, ew_a, ev_a = np.empty(nu, dtype=np.intp), np.empty(nu), np.empty(nu)
    cdef Py_ssize_t[::1] rank = rank_a, eff = eff_a
    cdef double[::1] ew = ew_a, ev = ev_a
    with nogil:
        if not every:
            for q in range(nu):
                rank[free_idx[q]] = q
        for i in range(n):
            r = order[i] if every else rank[order[i]]
            if r >= 0:
                eff[m] = r
                ew[m] = fw[r]
                ev[m] = fv[r]
                if m > 0:
                    up = up and ew[m] >= ew[m - 1]
                    down = down and ew[m] <= ew[m - 1]
                m += 1
    if up or nu < 2:
        return eff_a, ew_a, ev_a, eff_a, ew_a, ev_a
    if down:
        return eff_a, ew_a, ev_a, eff_a[::-1].copy(), ew_a[::-1].copy(), ev_a[::-1].copy()
    by_w_a = ascending(fw)
    ww_a, wv_a = np.empty(nu), np.empty(nu)
    cdef const Py_ssize_t[::1] by_w = by_w_a
    cdef double[::1] ww = ww_a, wv = wv_a
    with nogil:  # both gathers in one pass
        for q in range(nu):
            ww[q] = fw[by_w[q]]
            wv[q] = fv[by_w[q]]
    return eff_a, ew_a, ev_a, by_w_a, ww_a, wv_a


cdef _positive_prefix(x_a):
    """Prefix sums of max(0, x) after a leading 0 (n + 1 of them). One pass,
    summed in order (as ``np.cumsum``)."""
    cdef const double[::1] x = np.ascontiguousarray(x_a, dtype=np.float64)
    cdef Py_ssize_t n = x.shape[0], q
    cdef double acc = 0.0
    out_a = np.empty(n + 1)
    cdef double[::1] out = out_a
    with nogil:
        out[0] = 0.0
        for q in range(n):
            acc += positive_part(x[q])
            out[q + 1] = acc
    return out_a


cdef tuple _item_prefixes(const double[::1] fw, const double[::1] fv, const double[::1] d, idx_a):
    """Prefix sums (after a leading 0) of the values, of the weights and of max(0, d[idx]) (of
    max(0, d) when ``idx_a`` is None), in one pass: three independent sums
    that the processor overlaps, where three passes would each wait on
    their additions one by one."""
    cdef const Py_ssize_t[::1] idx = idx_a
    cdef Py_ssize_t n = fw.shape[0], q
    cdef double t, sv = 0.0, sw = 0.0, sd = 0.0
    pv_a, pw_a, pd_a = np.empty(n + 1), np.empty(n + 1), np.empty(n + 1)
    cdef double[::1] pv = pv_a, pw = pw_a, pd = pd_a
    with nogil:
        pv[0] = pw[0] = pd[0] = 0.0
        for q in range(n):
            t = d[q] if idx_a is None else d[idx[q]]
            sv += fv[q]
            sw += fw[q]
            sd += positive_part(t)
            pv[q + 1] = sv
            pw[q + 1] = sw
            pd[q + 1] = sd
    return pv_a, pw_a, pd_a


cdef tuple _prefix_reduced(const double[::1] w, const double[::1] v, double lam, double mu):
    """Prefix sums (after a leading 0) of max(0, d) and of |d|, d = v - lam w - mu."""
    cdef Py_ssize_t n = w.shape[0], q
    cdef double d, pos = 0.0, mag = 0.0
    pos_a, mag_a = np.empty(n + 1), np.empty(n + 1)
    cdef double[::1] p = pos_a, m = mag_a
    with nogil:
        p[0] = m[0] = 0.0
        for q in range(n):
            d = v[q] - lam * w[q] - mu
            pos += positive_part(d)
            mag += fabs(d)
            p[q + 1] = pos
            m[q + 1] = mag
    return pos_a, mag_a


cdef Py_ssize_t _settle(Scan* s, Pool* pool, Py_ssize_t k) noexcept nogil:
    """Item k of the witness: LEAVE_OUT, KEEP, BLOCK, SCAN_DONE or a negative code.
    Cheapest first: an identical item above was needed; everything below
    fits; the bounds of ``_root_bound``; the two-line bound (``s.lines``,
    O(nu)); then the uniqueness runs or a decide run."""
    cdef Py_ssize_t m, r
    cdef double ub
    if s.needed[s.grp[k]]:
        return KEEP
    if s.pre_w[k] <= s.j:  # everything below fits: the best is all of it
        if s.pre_v[k] < s.tgt - s.tol:
            return KEEP
        for m in range(k):
            s.Sf[m] = 1
        s.Sf[k] = 0
        return LEAVE_OUT
    ub = _root_bound(s, k)
    if _below_target(s, k, ub):
        return KEEP
    if s.lines_on and cc_bound(&s.lines, k, s.j) < s.tgt - s.tol:
        return KEEP
    if _lp_keep(s, k):  # O(sqrt nu), before the greedy set's O(nu) pass
        return KEEP
    # (subset sums whose complement question applies: that answers at a
    # tight prefix in microseconds, where the greedy set costs O(nu))
    if not (s.sums and s.pre_v[k] - s.tgt < s.tgt) and _greedy_due(s) and _greedy_below(s, k) == LEAVE_OUT:
        return LEAVE_OUT
    r = _prefix_probe(s, pool, k)
    if r != 0:
        return r
    r = _try_unique(s, pool, k)
    if r != 0:
        return r
    return _query(s, pool, k)


cdef void _keep(Scan* s, Py_ssize_t k) noexcept nogil:
    """Witness item k is needed (in every optimal set that agrees with the
    choices above it): the items below must do with what it leaves."""
    s.probe_off = 0
    s.j -= s.fw[k]
    s.tgt -= s.fv[k]
    s.kneed -= 1
    s.needed[s.grp[k]] = 1


cdef Py_ssize_t _scan(Scan* s, Pool* pool) noexcept nogil:
    """Top-down over the free items: leave out each witness item a set below
    it can replace, keep the others. Returns 0 or a negative result code."""
    cdef Py_ssize_t k = s.nu - 1, r, q
    while k >= 0:
        if _tick(pool, 32):
            return INTERRUPTED
        if s.Sf[k]:
            s.wdone += 1
            s.scan_k = k
            r = _settle(s, pool, k)
            if r < 0:
                return r
            if r == SCAN_DONE:
                return 0
            if r == KEEP or r == BLOCK:
                _keep(s, k)
            if r == BLOCK:  # every set left agrees with the witness from k down to s.block
                for q in range(k - 1, s.block - 1, -1):
                    if s.Sf[q]:
                        _keep(s, q)
                k = s.block
        k -= 1
    return 0


cdef list _class_counts(ClassCounts* cc, lines, below):
    """Point ``cc`` at ``below``'s classes (``_lines.Below``: weights
    ascending, positions) with scratch for the prefix sums. Returns the
    arrays, which must outlive its use."""
    cdef Py_ssize_t t
    cdef const double[::1] w
    cdef const Py_ssize_t[::1] pos
    cdef double[::1] pre
    keep = []
    if below is None:
        return keep
    cc.classes = len(below.sorted_w)
    cc.p, cc.q = lines.p, lines.q
    for t in range(cc.classes):
        w_a = np.ascontiguousarray(below.sorted_w[t], dtype=np.float64)
        pos_a = np.ascontiguousarray(below.sorted_pos[t], dtype=np.intp)
        pre_a = np.empty(w_a.shape[0] + 1)
        keep += [w_a, pos_a, pre_a]
        w, pos, pre = w_a, pos_a, pre_a
        cc.n[t] = w.shape[0]
        cc.w[t] = &w[0] if cc.n[t] > 0 else NULL
        cc.pos[t] = &pos[0] if cc.n[t] > 0 else NULL
        cc.pre[t] = &pre[0]
        cc.e[t] = max(0.0, float(lines.levels[t]))
    return keep


def _class_bound_py(lines, const double[::1] w, const double[::1] v, Py_ssize_t k, double j):
    """For tests: the compiled class-count bound (``_class_counts.pxd``) of
    the items below k within j, as ``_lines.Below(lines, w, v)(k, j)``."""
    cdef ClassCounts cc
    memset(&cc, 0, sizeof(ClassCounts))
    _arrays = _class_counts(&cc, lines, Below(lines, np.asarray(w), np.asarray(v)))
    return int(cc_bound(&cc, k, j))


cdef struct _Carve:
    char* p  # the next free byte of a scratch buffer (8-byte aligned)


cdef inline void* _take(_Carve* cut, Py_ssize_t nbytes) noexcept nogil:
    """The next ``nbytes`` of the buffer, rounded up to 8 (the next piece stays aligned)."""
    cdef void* at = cut.p
    cut.p += (nbytes + 7) // 8 * 8
    return at


cdef Py_ssize_t _canonical(wa, va_, order, free_idx, S_a, double j, double tgt,
                           double lam, d, int integral, double tol, Pool* pool,
                           const Card* card, count, Py_ssize_t count_states, Py_ssize_t count_per_item,
                           lines, dict stats) except -3:
    """Top-down over the free items: keep the canonical (dp_knapsack) choice.

    ``S_a`` holds an optimal set; on return it holds the canonical one on the
    free items. ``j``/``tgt`` are the capacity and value the free items must
    provide. ``order``: every item in efficiency order. ``count``: None, or
    (k, lam_k, mu_k) when every optimal set is
    known to have the same number of free items k (the count path): then the
    decide runs are count-mode runs (items in descending d = v - lam_k w -
    mu_k) and a count bound joins the O(1) tests; each gets 1/COUNT_SHARE of the
    count path's budget (``count_states`` plus ``count_per_item`` per item),
    and the first one over it ends them for the pass. ``lines``: None, or the
    two parallel lines all items lie on (``_lines``): their class-count bound
    on the items below k is the last test before a decide run.

    This sets up a ``Scan``'s arrays; ``_scan`` walks it.
    """
    cdef Scan s
    cdef Py_ssize_t nu = free_idx.shape[0], r
    memset(&s, 0, sizeof(Scan))
    s.nu, s.lam, s.integral, s.tol, s.j, s.tgt = nu, lam, integral, tol, j, tgt
    s.count_states, s.count_per_item = count_states, count_per_item
    s.qcard = card[0]
    s.qcard.topv = NULL  # decide runs on subsets count their own items
    # Every item free (nothing fixed; ``free_idx`` is 0..n-1): no gathers,
    # and the witness is made canonical in place.
    cdef bint every = nu == wa.shape[0]
    fw_a = np.ascontiguousarray(wa if every else wa[free_idx], dtype=np.float64)
    fv_a = np.ascontiguousarray(va_ if every else va_[free_idx], dtype=np.float64)
    s.cm = s.count_runs = count is not None
    s.proved_at = s.two_asked = s.by_weight_k = s.lp_k = -1
    dk = None
    if s.cm:
        s.kneed, lamk, muk = count
        s.kcard = s.qcard
        s.kcard.lam = lamk
        s.kcard.mu = muk
        dk = fv_a - lamk * fw_a - muk
    unique_setup(&s, pool)  # when the uniqueness runs are asked (``_unique``)
    # the free items (positions in free_idx) in efficiency order (filtered
    # from the instance's), in descending d for count-mode runs, and by
    # ascending weight (the decide runs' pairing order)
    eff_rank_a, eff_w_a, eff_v_a, w_rank_a, w_w_a, w_v_a = _free_orders(order, free_idx, wa.shape[0], fw_a, fv_a)
    # Identical items (same weight and value): once one is needed, every
    # identical one below it that the witness holds is needed too. (Were
    # such an item k' not needed, a set below k' reaching its target, with
    # k' and the items kept between k' and k, would reach k's target below
    # k without k.) So a group of identical items costs one query, not one
    # per copy; the copies kept are the lowest-indexed ones.
    # (not worth its set-up below GROUP_FROM free items: each is its own group)
    grp_a = _identical_groups(fw_a, fv_a, w_rank_a, w_w_a, w_v_a) if nu >= GROUP_FROM else np.arange(nu, dtype=np.intp)
    Sf_a = S_a if every else np.ascontiguousarray(S_a[free_idx])
    if nu >= GROUP_FROM:
        _lowest_copies(Sf_a, grp_a)
    # Count structures, used with the cardinality multipliers only: the
    # decide runs' counts (kmax, values largest first) from two orders sorted
    # once, and block sums (``_blocks``) for the count bound of a run's root.
    # (not worth their set-up for a few hundred items: then each run sorts)
    s.counts = s.qcard.mu != 0 and nu >= 256
    by_v_a, by_v_v_a, w_pos_a, v_pos_a, pre_c_a, pre_ca_a = _count_structures(fw_a, fv_a, w_rank_a, w_v_a,
                                                                              &s.qcard, s.counts)
    dk_rank_a = descending(dk) if s.cm else eff_rank_a
    # The Scan's arrays: these typed views keep them alive until the return.
    pre_v_a, pre_w_a, pre_d_a = _item_prefixes(fw_a, fv_a, d, None if every else free_idx)
    cdef const double[::1] fw = fw_a, fv = fv_a, pre_v = pre_v_a, pre_w = pre_w_a, pre_d = pre_d_a
    cdef const double[::1] pre_k = _positive_prefix(dk) if s.cm else np.zeros(1)
    cdef const double[::1] pre_c = pre_c_a, pre_ca = pre_ca_a
    cdef const Py_ssize_t[::1] eff_rank = eff_rank_a, d_rank = dk_rank_a, w_rank = w_rank_a
    cdef const double[::1] eff_w = eff_w_a, eff_v = eff_v_a
    cdef const double[::1] w_w = w_w_a, w_v = w_v_a
    cdef const double[::1] d_w = fw_a[dk_rank_a] if s.cm else eff_w, d_v = fv_a[dk_rank_a] if s.cm else eff_v
    cdef const Py_ssize_t[::1] by_v = by_v_a, w_pos = w_pos_a, v_pos = v_pos_a, grp = grp_a
    cdef const double[::1] by_v_v = by_v_v_a
    cdef uint8_t[::1] Sf = Sf_a
    # the line the items lie on, the bit sets' and the two-list search's workspaces (``_fills``)
    cdef list _workspaces = fills_setup(&s, pool, &fw[0], &fv[0])  # alive until the return
    cdef Py_ssize_t n_sums = nu if s.counts else 0
    cdef Py_ssize_t n_vals = n_sums if s.qcard.mu < 0 else 0  # the value sums are read for kmin only
    # The pass's scratch, carved from one buffer (``_Carve``): a numpy array
    # and a typed view each cost more than the O(nu) passes at a few free items.
    cdef Py_ssize_t i_b = sizeof(Py_ssize_t), d_b = sizeof(double)
    cdef Py_ssize_t w_nodes = blk_nodes(n_sums, blk_shift(n_sums)), v_nodes = blk_nodes(n_vals, blk_shift(n_vals))
    cdef Py_ssize_t e_nodes = blk_nodes(nu, blk_shift(nu)), nst = nu + 1 if s.counts else 1
    cdef Py_ssize_t sizes[21]
    sizes[:] = [nu + 1, nu, nu, CHAIN_KEEP * nu,  # needed, sx, av, kept (bytes)
                i_b * nu, i_b * (nu + 1), i_b * (nu + 1), i_b * (nu + 1), i_b * nu, i_b * CHAIN_KEEP,  # twin .. kept_k
                d_b * nu, d_b * nu, d_b * nst, i_b * nu, i_b * nu, i_b * nu,  # sw, sv, st, sr, pos, hint
                d_b * w_nodes, d_b * v_nodes, d_b * e_nodes, i_b * nu, i_b * nu]  # the blocks' sums, eff_pos, taken
    cdef Py_ssize_t q, total = 0
    for q in range(21):
        total += (sizes[q] + 7) // 8 * 8
    cdef uint8_t[::1] arena = np.empty(total + 8, dtype=np.uint8)
    cdef _Carve cut
    cut.p = <char*>&arena[0]
    s.needed, s.sx, s.av, s.kept = <uint8_t*>_take(&cut, sizes[0]), <uint8_t*>_take(&cut, sizes[1]), \
        <uint8_t*>_take(&cut, sizes[2]), <uint8_t*>_take(&cut, sizes[3])
    s.twin, s.copies, s.held = <Py_ssize_t*>_take(&cut, sizes[4]), <Py_ssize_t*>_take(&cut, sizes[5]), \
        <Py_ssize_t*>_take(&cut, sizes[6])
    s.below, s.eff_twin, s.kept_k = <Py_ssize_t*>_take(&cut, sizes[7]), <Py_ssize_t*>_take(&cut, sizes[8]), \
        <Py_ssize_t*>_take(&cut, sizes[9])
    s.sw, s.sv, s.st = <double*>_take(&cut, sizes[10]), <double*>_take(&cut, sizes[11]), <double*>_take(&cut, sizes[12])
    s.sr, s.pos, s.hint = <Py_ssize_t*>_take(&cut, sizes[13]), <Py_ssize_t*>_take(&cut, sizes[14]), \
        <Py_ssize_t*>_take(&cut, sizes[15])
    cdef double* w_sums = <double*>_take(&cut, sizes[16])  # by weight
    cdef double* v_sums = <double*>_take(&cut, sizes[17])  # by value
    cdef double* eff_sums = <double*>_take(&cut, sizes[18])  # in efficiency order
    cdef Py_ssize_t* eff_pos = <Py_ssize_t*>_take(&cut, sizes[19])
    s.taken = <Py_ssize_t*>_take(&cut, sizes[20])
    memset(s.needed, 0, nu + 1)
    memset(s.st, 0, d_b * nst)
    for r in range(CHAIN_KEEP):
        s.kept_k[r] = -1
    for r in range(nu):
        eff_pos[eff_rank[r]] = r
    s.fw, s.fv, s.pre_v, s.pre_w, s.pre_d = &fw[0], &fv[0], &pre_v[0], &pre_w[0], &pre_d[0]
    s.pre_k, s.pre_c, s.pre_ca = &pre_k[0], &pre_c[0], &pre_ca[0]
    s.eff_rank, s.d_rank, s.w_rank, s.by_v, s.by_v_v = &eff_rank[0], &d_rank[0], &w_rank[0], &by_v[0], &by_v_v[0]
    s.eff_w, s.eff_v, s.d_w, s.d_v, s.w_w, s.w_v = &eff_w[0], &eff_v[0], &d_w[0], &d_v[0], &w_w[0], &w_v[0]
    s.w_pos, s.v_pos, s.grp, s.Sf = &w_pos[0], &v_pos[0], &grp[0], &Sf[0]
    s.on_line = s.counts and pre_ca[nu] <= LINE_TOL * pre_v[nu]
    s.kmax = nu  # before the first count: every item
    blk_init(&s.by_w, w_sums, &w_rank[0], &w_w[0], NULL, &w_pos[0], n_sums)  # every free item
    blk_init(&s.by_val, v_sums, &by_v[0], &by_v_v[0], NULL, &v_pos[0], n_vals)
    blk_init(&s.by_eff, eff_sums, &eff_rank[0], &eff_w[0], &eff_v[0], eff_pos, nu)
    classes = Below(lines, fw_a, fv_a) if lines is not None else None
    cdef list _arrays = _class_counts(&s.lines, lines, classes)  # alive until the return
    s.lines_on = classes is not None
    t0 = perf_counter()
    with nogil:
        r = _scan(&s, pool)
    if r < 0:
        _raise(r, pool[0])
    stats["t_scan"] = perf_counter() - t0
    _report(&s, stats)
    if not every:
        S_a[free_idx] = Sf_a
    return 0


cdef void _report(const Scan* s, dict stats):
    """The pass's counters into ``stats`` (``solve``'s ``Solution.stats``)."""
    stats.update(queries=s.queries, complements=s.complements, witness_items=s.wdone,
                 greedy_tries=s.greedy_tries, greedy_found=s.greedy_found,
                 greedy_from_break=s.greedy_from_break, probes=s.probes,
                 probes_found=s.probes_found, queries_no=s.no_runs, queries_no_states=s.no_states,
                 unique_tries=s.uniq_tries, unique_states=s.uniq_states, unique=int(s.uniq_done),
                 unique_blocks=s.uniq_blocks, unique_runs=s.uniq_runs, unique_windowed=s.uniq_windowed,
                 windows=s.windows, windows_found=s.windows_found,
                 two_lists=s.two_tries, two_lists_found=s.two_found, sums_bits=s.bit_runs,
                 fill_bits=s.fill_runs, fill_greedy=s.greedy_fills, lp_tries=s.lp_tries, lp_kept=s.lp_kept)


def canonical(Workspace work, wa, va_, order, free_idx, S_a, double j, double tgt,
              double lam, d, bint integral, double tol, count, Py_ssize_t count_states,
              Py_ssize_t count_per_item, lines, dict stats):
    """The canonical set on the free items ``free_idx``, into ``S_a`` (which
    holds an optimal set on entry), with ``work``'s pool and multipliers;
    the arguments are ``_canonical``'s."""
    _canonical(wa, va_, order, free_idx, S_a, j, tgt, lam, d, integral, tol,
               &work.pool, &work.card, count, count_states, count_per_item, lines, stats)


def _group_ids_py(const double[::1] w, const double[::1] v):
    """For tests: the canonical pass's groups of identical items."""
    by_w = ascending(w)
    return _identical_groups(w, v, by_w, np.asarray(w)[by_w], np.asarray(v)[by_w])


cdef list _test_blocks(Blocks* b, const Py_ssize_t[::1] idx, const double[::1] key, val, Py_ssize_t below):
    """The test faces' ``Blocks`` over the items ``idx`` (a permutation of
    0..n-1) in rank order, keys ``key`` and second terms ``val`` (or None)
    by rank, the items of index >= ``below`` dropped one call at a time from
    the top, as the pass drops them. Returns the arrays, which must outlive
    its use."""
    cdef Py_ssize_t n = idx.shape[0], r
    if key.shape[0] != n:
        raise ValueError(f"key has {key.shape[0]} entries for {n} items")
    if val is not None and len(val) != n:
        raise ValueError(f"val has {len(val)} entries for {n} items")
    if not 0 <= below <= n:
        raise ValueError(f"below={below} is outside 0..{n}")
    rank_a = np.full(n, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] rank = rank_a
    for r in range(n):
        if not 0 <= idx[r] < n or rank[idx[r]] >= 0:
            raise ValueError(f"idx is not a permutation of 0..{n - 1}: idx[{r}] = {idx[r]}")
        rank[idx[r]] = r
    node_a = np.empty(blk_nodes(n, blk_shift(n)))
    val_a = np.ascontiguousarray(val if val is not None else np.zeros(n), dtype=np.float64)
    cdef double[::1] node = node_a
    cdef const double[::1] vals = val_a
    blk_init(b, &node[0], &idx[0] if n else NULL, &key[0] if n else NULL,
             &vals[0] if n and val is not None else NULL, &rank[0] if n else NULL, n)
    for r in range(n - 1, below - 1, -1):
        blk_below(b, r)
    return [rank_a, node_a, val_a]


def _blocks_within(const Py_ssize_t[::1] idx, const double[::1] key, Py_ssize_t below, double limit,
                   bint strict=False):
    """Test face of ``_blocks``: over the items ``idx`` (a permutation of
    0..n-1) in rank order with keys ``key`` (>= 0, by rank), the items of
    index >= ``below`` dropped one call at a time from the top: how many of
    those held make the longest rank prefix with key sum <= ``limit`` (<
    when ``strict``), and that sum."""
    cdef Blocks b
    cdef double total
    _alive = _test_blocks(&b, idx, key, None, below)  # the arrays b points into
    return blk_within(&b, limit, strict, &total), total


def _blocks_break(const Py_ssize_t[::1] idx, const double[::1] key, val, Py_ssize_t below, double limit):
    """Test face of ``_blocks.blk_break``, on the items of ``_blocks_within``
    with second terms ``val``: (the rank of the first item held past the
    longest rank prefix within ``limit``, or -1; that prefix's key sum; its
    val sum)."""
    cdef Blocks b
    cdef double total, vtotal
    _alive = _test_blocks(&b, idx, key, val, below)  # the arrays b points into
    cdef Py_ssize_t r = blk_break(&b, limit, &total, &vtotal)
    return r, total, vtotal
