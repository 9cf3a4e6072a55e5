# cython: language_level=3
"""The canonical pass's runs on the free items below a witness item k:
whether they hold a set reaching the target within the capacity left.

``_query``
    The question itself, cheapest answer first: the fills and the complement
    (``_fills``), a window run on the items nearest the break (``_window``),
    a count-mode decide run (count path) within a budget, then a decide run
    (``_decide``: the two-list search, a 512-state heuristic run, the exact
    run).
``_greedy_below``, ``_prefix_probe``
    Two cheaper tries before it: the greedy set below k, and a decide run on
    the shortest prefix the bounds allow within a state budget.

Private; ``_canonical`` and ``_unique`` call these through ``_decide.pxd`` (no
GIL). The runs are ``_expand._core``'s, in the solve's pool.
"""

from libc.string cimport memset

from ._expand cimport _core
from ._fills cimport _complement, _fill_question, _least_prefix, _two_lists_found
from ._pool cimport FOUND, INTERRUPTED, NOT_FOUND, OVER_BUDGET, QBEAM, Card, Pool, _tick
from ._prefix_bounds cimport _shortest_prefix
from ._scan_state cimport KEEP, LEAVE_OUT, Scan, _gather, _new_witness


cdef Py_ssize_t BEAM_MISSES = 1


cdef enum:
    # A count-mode decide run gets 1/COUNT_SHARE of the count path's budget
    # (the first over it ends them for the pass; docs/algorithms.md).
    COUNT_SHARE = 4


cdef void _run_counts(Scan* s, Py_ssize_t k, double kmax) noexcept nogil:
    """With the count structures: the decide runs' card gets the counts of
    the free items below k, ``kmax`` and their values largest first (from
    the order sorted once)."""
    cdef Py_ssize_t i, q = 0
    if not s.counts:
        return
    for i in range(s.nu):
        if s.by_v[i] < k:
            s.st[q + 1] = s.st[q] + s.by_v_v[i]
            q += 1
    s.qcard.topv = s.st
    s.qcard.ntop = q
    s.qcard.kmax = kmax


cdef Py_ssize_t _decide(Scan* s, Pool* pool, Py_ssize_t nsub, Py_ssize_t k) noexcept nogil:
    """Can the gathered run items (efficiency order) reach s.tgt within s.j?
    The two-list search first (``_two_lists_found``), then a decide run (a
    512-state heuristic run first when the count bound is active, unless
    BEAM_MISSES of them in a row found nothing: a heuristic run only pays on
    a yes, and proofs tend to come in runs, as on circle items, where they
    cost a sixth of the states; the next yes of a full run turns them on
    again), with the counts of ``_run_counts``."""
    cdef Py_ssize_t bb, r = 0, g0 = pool.generated
    cdef double zz
    if s.two_asked != k and _two_lists_found(s, nsub, s.j, s.tgt - s.tol, s.on_line):
        return FOUND
    _run_counts(s, k, s.kmax)
    if s.integral and s.qcard.mu != 0 and s.beam_misses < BEAM_MISSES:
        pool.beam = QBEAM
        pool.by_weight = s.hint
        r = _core(s.sw, s.sv, nsub, s.j, 1, s.tgt, s.integral, s.tol, pool, &s.qcard, s.sx, &zz, &bb)
        pool.beam = 0
        s.beam_misses = s.beam_misses + 1 if r == NOT_FOUND else 0
    if r == NOT_FOUND:
        pool.by_weight = s.hint
        r = _core(s.sw, s.sv, nsub, s.j, 1, s.tgt, s.integral, s.tol, pool, &s.qcard, s.sx, &zz, &bb)
        if r == FOUND:
            s.beam_misses = s.two_misses = 0
    if r == FOUND:
        s.yes_states = pool.generated - g0
    return r


cdef Py_ssize_t _query(Scan* s, Pool* pool, Py_ssize_t k) noexcept nogil:
    """Bounds cannot tell: decide on the free items below k. A count-mode run
    first (count path), within a budget: near-line items can make its
    equal-count states explode, and then the pass goes on without them.
    Returns LEAVE_OUT (s.Sf is the run's witness), KEEP or a negative code."""
    cdef Py_ssize_t nsub, r = OVER_BUDGET, g0 = pool.generated
    cdef Py_ssize_t bb
    cdef double zz
    s.queries += 1
    s.two_asked = -1
    if _tick(pool, s.nu):  # the gathers below
        return INTERRUPTED
    if s.proved_at == k and s.proved_tgt == s.tgt:  # the search below proved it
        return KEEP
    r = _fill_question(s, pool, k)
    if r == KEEP:
        s.no_runs += 1
    if r != 0:
        return r
    r = _complement(s, pool, k, k)
    if r == KEEP:
        s.no_runs += 1
        s.no_states += pool.generated - g0
    if r == LEAVE_OUT:
        return _least_prefix(s, pool, k)
    if r != 0:
        return r
    r = _window(s, pool, k)
    if r != 0:
        return r
    r = OVER_BUDGET
    if s.count_runs:
        nsub = _gather(s, s.d_rank, s.d_w, s.d_v, k)
        pool.by_weight = s.hint
        pool.limit = pool.generated + (s.count_states + s.count_per_item * nsub) // COUNT_SHARE
        r = _core(s.sw, s.sv, nsub, s.j, 1, s.tgt, s.integral, s.tol, pool, &s.kcard, s.sx, &zz, &bb)
        pool.limit = 0
        s.count_runs = r != OVER_BUDGET
    if r == OVER_BUDGET:
        nsub = _gather(s, s.eff_rank, s.eff_w, s.eff_v, k)
        r = _decide(s, pool, nsub, k)
    if r < 0:
        return r
    if r == FOUND:
        _new_witness(s, k, k, nsub, False)
        return LEAVE_OUT
    s.no_runs += 1
    s.no_states += pool.generated - g0
    return KEEP


# A prefix probe (``_prefix_probe``) is tried when the shortest prefix the bounds allow
# lies at least PROBE_GAP items below the witness item, within a budget of
# PROBE_STATES states plus PROBE_PER_ITEM per item of that prefix.
cdef Py_ssize_t PROBE_GAP = 16
cdef Py_ssize_t PROBE_STATES = 4096
cdef Py_ssize_t PROBE_PER_ITEM = 8


def _configure_probe(Py_ssize_t gap, Py_ssize_t states, Py_ssize_t per_item):
    """Test knob: the prefix probe's gap and budget (``PROBE_GAP``,
    ``PROBE_STATES``, ``PROBE_PER_ITEM``). Returns the old ones."""
    global PROBE_GAP, PROBE_STATES, PROBE_PER_ITEM
    old = (PROBE_GAP, PROBE_STATES, PROBE_PER_ITEM)
    PROBE_GAP, PROBE_STATES, PROBE_PER_ITEM = gap, states, per_item
    return old


cdef Py_ssize_t _prefix_probe(Scan* s, Pool* pool, Py_ssize_t k) noexcept nogil:
    """Before a decide run on the free items below witness item k: the same
    question on the shortest prefix p the bounds allow (``_shortest_prefix``),
    within a state budget. A set below p that reaches the target lies below
    every item from k down to p, and the target does not change while items
    are left out, so all of them are left out at once, where the top-down
    pass would ask a decide run for each witness item among them (subset sum
    n=10^4: a chain of a dozen). On subset-sum items the question goes to
    the complement (``_complement``): at the shortest prefix its light
    items are few, and the bit sets answer. Returns LEAVE_OUT (s.Sf is the new witness),
    0 (no answer: over budget, or no such set) or a negative code. After a
    0 no probe runs until the pass keeps an item. Not in count mode (its
    runs need sets of exactly s.kneed items)."""
    cdef Py_ssize_t p, nsub, r
    if s.cm or s.probe_off:
        return 0
    p = _shortest_prefix(s, k)
    if k - p < PROBE_GAP:
        return 0
    s.probes += 1
    if s.sums:  # subset sums: the complement question, at a short prefix a few light items
        r = _complement(s, pool, p, k)
        if r == LEAVE_OUT:
            s.probes_found += 1
        if r == KEEP:
            s.probe_off = 1
        if r != 0:
            return 0 if r == KEEP else r
    if _tick(pool, s.nu):  # the gather
        return INTERRUPTED
    nsub = _gather(s, s.eff_rank, s.eff_w, s.eff_v, p)
    pool.limit = pool.generated + PROBE_STATES + PROBE_PER_ITEM * nsub
    r = _decide(s, pool, nsub, p)
    pool.limit = 0
    if r == OVER_BUDGET or r == NOT_FOUND:
        s.probe_off = 1
        return 0
    if r < 0:
        return r
    _new_witness(s, p, k, nsub, False)
    s.probes_found += 1
    return LEAVE_OUT


# After GREEDY_MISSES greedy sets in a row fall short of the target, the
# next tries back off: one every 2, 4, 8, ... witness items that reach the
# test (a set that reaches it resets this). Each try is a pass over the
# free items, and on some families none finds a set (docs/algorithms.md).
cdef Py_ssize_t GREEDY_MISSES = 4


def _configure_greedy_misses(Py_ssize_t misses):
    """Test knob: ``GREEDY_MISSES`` (0: never back off). Returns the old one."""
    global GREEDY_MISSES
    old = GREEDY_MISSES
    GREEDY_MISSES = misses
    return old


cdef bint _greedy_due(Scan* s) noexcept nogil:
    """Whether ``_greedy_below`` is tried at this witness item (its backoff)."""
    if s.greedy_skip > 0:
        s.greedy_skip -= 1
        return False
    return True


cdef void _greedy_missed(Scan* s) noexcept nogil:
    s.greedy_misses += 1
    if 0 < GREEDY_MISSES <= s.greedy_misses:
        s.greedy_skip = (<Py_ssize_t>1 << min(s.greedy_misses - GREEDY_MISSES + 1, 30)) - 1


cdef Py_ssize_t _greedy_below(Scan* s, Py_ssize_t k) noexcept nogil:
    """The greedy set of the free items below k (efficiency order, every item
    that still fits within s.j), when it reaches the target: LEAVE_OUT with
    it as the witness, else 0. One pass, which lists the items it takes
    (``s.taken``); on success the witness below k is cleared and those set,
    where a second pass over the order would look every item up again. On
    integral items, when ``_lp_keep`` has just found the break item of the
    same items within the same capacity (its block sums, exact there), the
    pass starts at that item: everything before it is taken. On many
    instances (inverse strongly correlated, n=10^5) a decide run's greedy
    start is its answer, and this costs less than the run's gather and
    set-up. Its break item is remembered for ``_window``."""
    cdef Py_ssize_t q, m, start = 0, taken = 0
    cdef double room = s.j, val = 0
    cdef bint from_break = s.integral and s.lp_k == k and s.lp_j == s.j
    s.greedy_tries += 1
    s.gb_k = -1
    if from_break:
        s.greedy_from_break += 1
        start = s.lp_r if s.lp_r >= 0 else s.nu
        room, val = s.j - s.lp_w, s.lp_v
    for q in range(start, s.nu):  # streams the efficiency order: no gather
        m = s.eff_rank[q]
        if m < k:
            if s.eff_w[q] <= room:
                room -= s.eff_w[q]
                val += s.eff_v[q]
                s.taken[taken] = m
                taken += 1
            elif s.gb_k < 0:  # the break item: remembered for ``_window``
                s.gb_k, s.gb_q, s.gb_w, s.gb_v = k, q, s.j - room, val
    if val < s.tgt - s.tol:
        _greedy_missed(s)
        return 0
    s.greedy_found += 1
    s.greedy_misses = 0
    memset(s.Sf, 0, k + 1)  # k and every item below it left out, but those taken:
    for q in range(start):  # ... every item before the break (m > k: unchanged) ...
        m = s.eff_rank[q]
        s.Sf[m] |= m < k
    for q in range(taken):  # ... and those the pass took
        s.Sf[s.taken[q]] = 1
    return LEAVE_OUT


# A window run (``_window``) is tried before a decide run on at least
# WINDOW_FROM free items: on the WINDOW of them nearest the break, within
# WINDOW_STATES states. On fewer items a full run's set-up costs less than
# the windows that miss (strongly correlated, n=10^4: docs/algorithms.md).
cdef Py_ssize_t WINDOW = 512
cdef Py_ssize_t WINDOW_FROM = 16384
cdef Py_ssize_t WINDOW_STATES = 2048


def _configure_window(Py_ssize_t window, Py_ssize_t window_from, Py_ssize_t states):
    """Test knob: the window run's size, threshold and budget (``WINDOW``,
    ``WINDOW_FROM``, ``WINDOW_STATES``; a window of 0 turns it off). Returns
    the old ones."""
    global WINDOW, WINDOW_FROM, WINDOW_STATES
    old = (WINDOW, WINDOW_FROM, WINDOW_STATES)
    WINDOW, WINDOW_FROM, WINDOW_STATES = window, window_from, states
    return old


cdef Py_ssize_t _window_edges(const Scan* s, Py_ssize_t k, Py_ssize_t* lo, Py_ssize_t* hi,
                              double* w_in, double* v_in) noexcept nogil:
    """The window of ``_window``: efficiency positions lo..hi-1 holding
    WINDOW / 2 free items below k on either side of the break item
    (``_greedy_below``'s), and the weight and value of those below k before
    lo (the items the window run keeps). Returns its item count."""
    cdef Py_ssize_t q = s.gb_q, got = 0
    w_in[0], v_in[0] = s.gb_w, s.gb_v
    while q > 0 and got < WINDOW // 2:
        q -= 1
        if s.eff_rank[q] < k:
            got += 1
            w_in[0] -= s.eff_w[q]
            v_in[0] -= s.eff_v[q]
    lo[0] = q
    q = s.gb_q
    while q < s.nu and got < WINDOW:
        if s.eff_rank[q] < k:
            got += 1
        q += 1
    hi[0] = q
    return got


cdef inline bint _window_takes(const Scan* s, Py_ssize_t q, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """Whether a window run's set (s.sx over the window's items, s.pos their
    places) takes the item at efficiency position q: kept before the window,
    as the run chose inside it, left out after it."""
    return s.sx[s.pos[s.eff_rank[q]]] if lo <= q < hi else q < lo


cdef Py_ssize_t _window(Scan* s, Pool* pool, Py_ssize_t k) noexcept nogil:
    """Before a decide run on the free items below witness item k: the same
    question on the WINDOW of them nearest the break in efficiency order,
    those before the window kept and those after it left out, within
    WINDOW_STATES states. A set found there is a set below k; on the items
    of a line (strongly correlated, R=10^6, n=10^5) the decide runs find
    their sets next to the break, and a full run's set-up costs O(n) passes
    where this costs O(WINDOW). Returns LEAVE_OUT (s.Sf is the new witness),
    0 (no answer: the full run decides) or a negative code."""
    cdef Py_ssize_t lo, hi, q, m, nsub = 0, r, bb
    cdef double w_in, v_in, zz
    cdef Card card
    if WINDOW <= 0 or k < WINDOW_FROM or s.gb_k != k:
        return 0
    if _window_edges(s, k, &lo, &hi, &w_in, &v_in) < WINDOW:
        return 0
    s.windows += 1
    for q in range(lo, hi):
        m = s.eff_rank[q]
        if m < k:
            s.sw[nsub], s.sv[nsub], s.sr[nsub], s.pos[m] = s.eff_w[q], s.eff_v[q], m, nsub
            nsub += 1
    card = s.qcard
    card.topv = NULL  # the run counts its own items
    pool.limit = pool.generated + max(1, WINDOW_STATES)  # 0 would mean no limit
    r = _core(s.sw, s.sv, nsub, s.j - w_in, 1, s.tgt - v_in, s.integral, s.tol, pool, &card, s.sx, &zz, &bb)
    pool.limit = 0
    if r == OVER_BUDGET or r == NOT_FOUND:
        return 0
    if r < 0:
        return r
    if _tick(pool, s.nu):  # the pass below
        return INTERRUPTED
    w_in = v_in = 0.0  # the set summed afresh: w_in and v_in were streamed differences
    for q in range(hi):  # after the window nothing is taken
        if s.eff_rank[q] < k and _window_takes(s, q, lo, hi):
            w_in += s.eff_w[q]
            v_in += s.eff_v[q]
    if w_in > s.j or v_in < s.tgt - s.tol:
        return 0
    for q in range(s.nu):
        m = s.eff_rank[q]
        if m < k:
            s.Sf[m] = _window_takes(s, q, lo, hi)
    s.Sf[k] = 0
    s.windows_found += 1
    return LEAVE_OUT
