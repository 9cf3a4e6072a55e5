# cython: language_level=3
"""The canonical pass's uniqueness runs: the items from a witness item k down
on which every set left agrees with the witness, settled in a few decide runs
in avoid mode (``_unique``) where the top-down pass would prove them needed
one run each (a nearly unique optimum under loose bounds, as on circle
items). Each run (``_other``) seeks a set that differs from the witness in a
range, skipping swaps of identical copies (``Pool.twin``), on the count path
on what the count's swap window leaves free (``_expand.avoid_windowed``);
chains start above the sets earlier ones found (``_chain_start``).

They are asked when the proofs so far make them worth it, within a budget
(``_try_unique``); ``unique_setup`` sets that schedule at a pass's start.
Private; ``_canonical`` calls these through ``_unique.pxd`` (no GIL).
"""

from libc.stdint cimport uint8_t

from ._decide cimport _run_counts
from ._expand cimport _core, avoid_windowed
from ._pool cimport AVOID_FREE, FOUND, GO_ON, INCONSISTENT, INTERRUPTED, NOT_FOUND, OVER_BUDGET, Card, Pool, _tick
from ._scan_state cimport BLOCK, CHAIN_KEEP, LEAVE_OUT, SCAN_DONE, Scan, _gather, _new_witness


# The uniqueness runs (``_unique``) are asked once the decide runs that
# proved items needed have cost (``_proof_work``) UNIQUE_FROM states and
# 1/UNIQUE_SHARE of the states OPT took (a search of about that size each),
# and again each time the proofs since have cost what the last ones did
# (``_try_unique``).
cdef Py_ssize_t UNIQUE_FROM = 250000
cdef Py_ssize_t UNIQUE_SHARE = 4
cdef Py_ssize_t UNIQUE_BUDGET = 4  # times the proofs' work (``_proof_work``) or s.uniq_floor, whichever is more
# On the count path the windowed runs are asked from the first proof on, when
# the proofs may stay cheap: there the floor is OPT's states / UNIQUE_EARLY
# or one state per free item, whichever is more, not all of OPT's (circle
# items, n=10^4: a first try of 4 OPTs that failed cost more than every
# proof after it).
cdef Py_ssize_t UNIQUE_EARLY = 16


def _configure_unique(Py_ssize_t states_from, Py_ssize_t share):
    """Test knob: the proof states after which the canonical pass asks the
    uniqueness runs (0: at every witness item a decide run would settle;
    -1: never) and the share of OPT's states they wait for too. Returns the
    old pair."""
    global UNIQUE_FROM, UNIQUE_SHARE
    old = (UNIQUE_FROM, UNIQUE_SHARE)
    UNIQUE_FROM, UNIQUE_SHARE = states_from, share
    return old


# Uniqueness runs explore only the sets with each group's lowest-indexed
# copies (``Pool.twin``): a swap of identical copies is not another set.
cdef bint TWINS = True


# Uniqueness chains start above the sets the earlier ones found that are
# still answers (``_chain_start``); the last CHAIN_KEEP are kept.
cdef bint CHAIN_START = True


def _configure_chain_start(bint on):
    """Test knob: whether uniqueness chains start above the sets earlier ones found. Returns the old value."""
    global CHAIN_START
    old = CHAIN_START
    CHAIN_START = on
    return old


def _configure_twins(bint on):
    """Test knob: whether uniqueness runs skip swaps of identical copies. Returns the old value."""
    global TWINS
    old = TWINS
    TWINS = on
    return old


cdef void _copies_in_order(Scan* s) noexcept nogil:
    """s.eff_twin: the efficiency order with the copies of each group of
    identical items moved into index order over the positions the group
    holds (the free items are in index order). A run's items are the same
    (the copies are identical); only which copy stands where changes. O(n),
    by buckets per group (``s.copies``: offsets; ``s.twin``: scratch)."""
    cdef Py_ssize_t q, g, acc = 0
    for g in range(s.nu + 1):
        s.copies[g] = 0
    for q in range(s.nu):
        s.copies[s.grp[q]] += 1
    for g in range(s.nu + 1):  # counts -> offsets
        q = s.copies[g]
        s.copies[g] = acc
        acc += q
    for q in range(s.nu):  # each group's positions, ascending
        g = s.grp[s.eff_rank[q]]
        s.twin[s.copies[g]] = q
        s.copies[g] += 1
    for g in range(s.nu, 0, -1):  # back to the offsets
        s.copies[g] = s.copies[g - 1]
    s.copies[0] = 0
    for q in range(s.nu):  # each group's copies, ascending, onto its positions
        g = s.grp[q]
        s.eff_twin[s.twin[s.copies[g]]] = q
        s.copies[g] += 1


cdef void _link_copies(Scan* s, Py_ssize_t nsub, Py_ssize_t m) noexcept nogil:
    """s.twin for a uniqueness run's items (``Pool.twin``; range m..k):
    each item's previous copy, in the groups where a set can differ from
    the witness in range by its choice of copies alone: those it holds some
    of but not all (a swap), and those with copies on both sides of m (a
    copy in range taken instead of one below). -1 elsewhere: every link
    costs the run dominance (``_open_steps``). Counts per group in
    s.copies, s.held, s.below."""
    cdef Py_ssize_t q, g, i
    for q in range(nsub):
        g = s.grp[s.sr[q]]
        s.copies[g] = s.held[g] = s.below[g] = 0
    for q in range(nsub):
        i = s.sr[q]
        g = s.grp[i]
        s.copies[g] += 1
        s.held[g] += s.Sf[i]
        s.below[g] += i < m
    for q in range(nsub):  # s.held: the group is linked (1) or not (0); s.copies: its last copy met
        g = s.grp[s.sr[q]]
        if s.copies[g] > 0:  # once per group
            s.held[g] = 0 < s.held[g] < s.copies[g] or 0 < s.below[g] < s.copies[g]
            s.copies[g] = -1
    for q in range(nsub):
        g = s.grp[s.sr[q]]
        s.twin[q] = s.copies[g] if s.held[g] else -1
        s.copies[g] = q


# Uniqueness runs on the count path run on what the swap window of the
# count leaves free (``avoid_windowed``); tests turn it off to compare.
cdef bint UNIQUE_WINDOW = True


def _configure_unique_window(bint on):
    """Test knob: whether uniqueness runs on the count path use the swap window. Returns the old value."""
    global UNIQUE_WINDOW
    old = UNIQUE_WINDOW
    UNIQUE_WINDOW = on
    return old


cdef Py_ssize_t _other_windowed(Scan* s, Pool* pool, Py_ssize_t nsub) noexcept nogil:
    """``_other``'s run on the gathered items when every set it seeks holds
    s.kneed of them (the count path: ``s.cm``) and the weights are
    integral: on the items the count's swap window leaves free
    (``avoid_windowed``). GO_ON when that does not apply."""
    cdef Card card
    cdef Py_ssize_t r
    if not (UNIQUE_WINDOW and s.cm and s.integral):
        return GO_ON
    card = s.kcard
    card.kfix = s.kneed
    r = avoid_windowed(s.sw, s.sv, nsub, s.j, s.tgt, s.tol, pool, &card, s.hint, s.av,
                       s.twin if TWINS else NULL, s.sx)
    s.uniq_windowed += r != GO_ON
    return r


cdef Py_ssize_t _other(Scan* s, Pool* pool, Py_ssize_t k, Py_ssize_t m) noexcept nogil:
    """Whether the free items 0..k hold a set T within s.j reaching s.tgt
    that differs from the witness on an item from m to k: one decide run in
    avoid mode (``_core``). Identical copies are taken lowest-indexed first
    (``_copies_in_order``, ``Pool.twin``): T differs in what it holds, not
    only in which copies. NOT_FOUND, FOUND (s.sx: T over the run's items,
    kept by ``_keep_found``; s.other_h: the highest item where it differs),
    or a negative code."""
    cdef Py_ssize_t nsub, q, bb, r
    cdef double zz
    if _tick(pool, s.nu):  # the gather
        return INTERRUPTED
    if TWINS and not s.twin_ready:
        _copies_in_order(s)
        s.twin_ready = 1
    nsub = s.other_n = _gather(s, <const Py_ssize_t*>s.eff_twin if TWINS else s.eff_rank, s.eff_w, s.eff_v, k + 1)
    for q in range(nsub):
        s.av[q] = s.Sf[s.sr[q]] if s.sr[q] >= m else AVOID_FREE
    if TWINS:
        _link_copies(s, nsub, m)
    r = _other_windowed(s, pool, nsub)
    if r == GO_ON:
        _run_counts(s, k + 1, s.kmax + 1)  # one item more than below k: at most one more fits
        pool.by_weight = s.hint
        pool.avoid = s.av
        pool.twin = s.twin if TWINS else NULL
        r = _core(s.sw, s.sv, nsub, s.j, 1, s.tgt, s.integral, s.tol, pool, &s.qcard, s.sx, &zz, &bb)
    if r != FOUND:
        return r
    s.other_h = _answer_top(s, _keep_found(s, k), k)  # -1 when T is no answer
    if s.other_h < m:
        return INCONSISTENT
    return FOUND


cdef uint8_t* _keep_found(Scan* s, Py_ssize_t k) noexcept nogil:
    """Keep the set ``_other`` just found (s.sx over its run's items, the
    free items 0..k) for ``_chain_start``; returns it by free item."""
    cdef Py_ssize_t q, slot = s.nkept % CHAIN_KEEP
    cdef uint8_t* x = &s.kept[slot * s.nu]
    for q in range(s.other_n):
        x[s.sr[q]] = s.sx[q]
    s.kept_k[slot] = k
    s.nkept += 1
    return x


cdef Py_ssize_t _answer_top(const Scan* s, const uint8_t* x, Py_ssize_t k) noexcept nogil:
    """For ``_chain_start``: when the set x on the free items 0..k is an
    answer there (within s.j, reaching s.tgt), the highest item where it
    differs from the witness (-1 if none); else -1."""
    cdef Py_ssize_t q, h = -1
    cdef double tw = 0.0, tv = 0.0
    for q in range(k + 1):
        if x[q]:
            tw += s.fw[q]
            tv += s.fv[q]
        if x[q] != s.Sf[q]:
            h = q
    return h if tw <= s.j and tv >= s.tgt - s.tol else -1


cdef Py_ssize_t _chain_start(const Scan* s, Py_ssize_t k) noexcept nogil:
    """Where ``_unique``'s first question at witness item k may start: one
    above the highest item h < k where a kept set (``_keep_found``) that is
    still an answer differs from the witness; 0 if none. Every answer
    differs from the witness at or below the highest item h* where two sets
    left differ, so h <= h*, and the chain from h + 1 ends where the chain
    from 0 does (at h* + 1) without climbing through the sets below (circle
    items, n=10^5: the chains at successive witness items re-found the sets
    the ones before had, at about half an OPT's states each). A kept set
    that is no answer any more (the pass has settled items above k since)
    is passed over. O(CHAIN_KEEP k)."""
    cdef Py_ssize_t slot, h, m = 0
    for slot in range(min(s.nkept, CHAIN_KEEP)):
        if s.kept_k[slot] < k:
            continue
        h = _answer_top(s, &s.kept[slot * s.nu], k)
        if h < k and h + 1 > m:
            m = h + 1
    return m


cdef Py_ssize_t _unique(Scan* s, Pool* pool, Py_ssize_t k) noexcept nogil:
    """The items from k down on which every set left agrees with the
    witness (the free items 0..k within s.j reaching s.tgt): those are the
    canonical choice, witness items needed and the others left out. Where
    the top-down pass proves its witness items needed one decide run each (a
    nearly unique optimum under loose bounds, as on circle items), this
    settles them in a few runs (``_other``): first any other set T at all;
    if there is one, it becomes the witness when the canonical rule prefers
    it (at the highest item h where the two differ, T leaves it out), and the
    question is asked again for the items above h, until none is found.
    Returns SCAN_DONE (the witness is the only set: s.Sf is the canonical
    choice of items 0..k), BLOCK (items s.block..k settled as s.Sf has them),
    LEAVE_OUT (T leaves out k: the new witness) or a negative code."""
    cdef Py_ssize_t m = _chain_start(s, k) if CHAIN_START else 0, r
    while True:
        s.uniq_runs += 1
        r = _other(s, pool, k, m)
        if r == NOT_FOUND:
            s.block = m
            return SCAN_DONE if m == 0 else BLOCK
        if r != FOUND:
            return r
        if s.Sf[s.other_h]:  # T leaves out h, which the witness keeps: the canonical rule prefers T
            _new_witness(s, k + 1, k, s.other_n, False)
            if s.other_h == k:
                return LEAVE_OUT
        m = s.other_h + 1


# A proof's O(nu) gather and bounds cost about a state per GATHER_PER_STATE
# free items (circle items, n=10^4: 5.6 ns an item, 30-45 ns a state).
cdef Py_ssize_t GATHER_PER_STATE = 8


cdef inline Py_ssize_t _gathers(const Scan* s, Py_ssize_t runs) noexcept nogil:
    """What ``runs`` gathers (and the bounds beside them) cost, in states."""
    return runs * (s.nu // GATHER_PER_STATE)


cdef inline Py_ssize_t _proof_work(const Scan* s) noexcept nogil:
    """What the proofs have cost so far, in states: their own, and their
    gathers and bounds (circle items, n=10^4, R=10^6: 1,854 proofs of 3
    states in all took 0.1 s)."""
    return s.no_states + _gathers(s, s.no_runs)


cdef Py_ssize_t _try_unique(Scan* s, Pool* pool, Py_ssize_t k) noexcept nogil:
    """``_unique`` when the proofs so far make it worth it (UNIQUE_FROM,
    UNIQUE_SHARE), within UNIQUE_BUDGET times their work (``_proof_work``)
    or s.uniq_floor, whichever is more: over it, the pass goes on with its
    proofs and asks again once they have cost twice that base. Returns its
    result, or 0 when not asked or over budget."""
    cdef Py_ssize_t g0 = pool.generated, runs = s.uniq_runs, r, cost
    cdef Py_ssize_t work = _proof_work(s), base = max(work, s.uniq_floor)
    if UNIQUE_FROM < 0 or work < s.uniq_next or (UNIQUE_FROM > 0 and s.no_runs == 0):
        return 0
    s.uniq_tries += 1
    pool.limit = g0 + UNIQUE_BUDGET * base if UNIQUE_FROM > 0 else 0
    r = _unique(s, pool, k)
    pool.limit = 0
    s.uniq_states += pool.generated - g0
    if r == OVER_BUDGET:  # on with the proofs; again once they have cost twice the base
        s.uniq_next = 2 * base
        return 0
    cost = pool.generated - g0 + _gathers(s, s.uniq_runs - runs)
    if UNIQUE_FROM > 0:  # 0: at every witness item a decide run would settle
        s.uniq_next = work + cost
    if r == SCAN_DONE:
        s.uniq_done = 1
    elif r == BLOCK:
        s.uniq_blocks += 1
    return r


cdef void unique_setup(Scan* s, const Pool* pool) noexcept nogil:
    """The uniqueness runs' schedule at the start of a pass (s.nu,
    s.integral and s.cm set): the proof work at which they are first asked
    (s.uniq_next) and the least work a try's budget counts from
    (s.uniq_floor), from the states the runs that found OPT took."""
    s.opt_states = s.uniq_floor = pool.generated
    s.uniq_next = max(UNIQUE_FROM, pool.generated // UNIQUE_SHARE) if UNIQUE_FROM > 0 else UNIQUE_FROM
    if s.cm and UNIQUE_FROM > 0 and UNIQUE_WINDOW and s.integral:  # windowed: from the first proof on
        s.uniq_next = 1
        s.uniq_floor = max(s.opt_states // UNIQUE_EARLY, s.nu)
