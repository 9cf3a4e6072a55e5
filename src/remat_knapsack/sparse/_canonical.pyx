# cython: language_level=3
"""The canonical pass of the sparse solver: among the optimal sets, the one
PyTorch's ``dp_knapsack`` backtrack returns.

Private. ``remat_knapsack.sparse._solver`` (``_kernel``) calls ``canonical`` once OPT
is known and the reduction has fixed what it can; the runs it asks for are
``_sparse._core``'s, in the same ``Workspace`` (pool and multipliers).

Top-down over the free items (``_scan``): an item not in the current optimal
witness is left out at no cost; an item in it (``_settle``, cheapest test
first) is kept when a group-mate above was needed or the bounds of the items
below it cannot reach the target (``_root_bound``: value sum, Lagrangian
bound, count bound from block sums, ``_blocks``; then ``_lp_keep``: Dantzig's
bound at their own break item); it is left out when everything below
fits, when the greedy set below reaches the target (``_greedy_below``), when a
decide run on the shortest prefix the bounds allow finds a set
(``_prefix_probe``), or when a decide run on the items below it does
(``_query``); a decide run that exhausts its search proves it needed. On
subset-sum items (value = weight) the question goes to the complement in the
prefix when that is smaller (``_complement``: only the light items can be
left out of a tight prefix), and a yes is followed down to the least prefix
that holds a set (``_least_prefix``, bisection). When
those proofs grow expensive, uniqueness runs (``_unique``) settle whole blocks
of items on which every set left agrees with the witness.
``canonical`` sets up the ``Scan``'s arrays.
"""

import threading
from time import perf_counter

import numpy as np

from libc.math cimport ceil, fabs, floor, INFINITY
from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memset

from ._class_counts cimport ClassCounts, cc_bound
from ._count_fill cimport (FILL_NONE, FILL_UNREAD, Fill, fill_bits, fill_greedy, fill_layers, fill_setup,
                           fill_work, walk_sum)
from ._blocks cimport Blocks, blk_below, blk_break, blk_init, blk_nodes, blk_shift, blk_within
from ._positive cimport positive_part
from ._select cimport group_ids
from ._subset_bits cimport bits_words, subset_sum_bits
from ._two_lists cimport TWO_LISTS_MAX_HALF, two_lists, two_lists_bytes
from ._sparse cimport (ABS_SLACK, AVOID_FREE, FOUND, GO_ON, INCONSISTENT, INTERRUPTED, LINE_TOL, NOT_FOUND,
                       OVER_BUDGET, QBEAM, REL_CARD, REL_LP, REL_SEARCH, SLOT_BYTES, Card, Pool, Workspace, _core,
                       _raise, _tick, avoid_windowed)

from ._lines import Below
from ._order import ascending, descending


cdef struct Scan:
    # The canonical pass over the free items 0..nu-1 (index order): pointers
    # into numpy arrays that ``_canonical`` keeps alive, and its progress.
    Py_ssize_t nu
    const double* fw            # weights
    const double* fv            # values
    const double* pre_v         # prefix sums (nu + 1) of the values
    const double* pre_w         # ... of the weights
    const double* pre_d         # ... of max(0, d), d = v - lam w
    const double* pre_k         # ... of max(0, d_k), the count path's d_k
    const double* pre_c         # ... of max(0, dc) for the count multipliers' dc
    const double* pre_ca        # ... of |dc| (``_count_sums``)
    const Py_ssize_t* eff_rank  # the free items in efficiency order
    Py_ssize_t* eff_twin        # ... with each group's copies moved into index order (``_copies_in_order``)
    bint twin_ready             # ... once a uniqueness run needed it
    const double* eff_w         # ... their weights in that order (streamed, not gathered)
    const double* eff_v         # ... and values
    const Py_ssize_t* d_rank    # ... in descending d_k (count-mode runs)
    const double* d_w           # ... their weights in that order
    const double* d_v           # ... and values
    const Py_ssize_t* w_rank    # ... by ascending weight
    const double* w_w           # ... their weights in that order (streamed, not gathered)
    const double* w_v           # ... and values
    const Py_ssize_t* by_v      # ... by descending value (count structures)
    const double* by_v_v        # ... their values in that order
    const Py_ssize_t* w_pos     # each item's position in w_rank
    const Py_ssize_t* v_pos     # ... and in by_v
    const Py_ssize_t* grp       # group of identical items of each item
    uint8_t* Sf                 # the current optimal witness
    uint8_t* needed             # per group: an identical item above is needed
    uint8_t* sx                 # a decide run's set
    double* sw                  # a decide run's items (gathered): weights
    double* sv                  # ... values
    double* st                  # ... their values' prefix sums, largest first
    Py_ssize_t* sr              # ... the free item of each
    Py_ssize_t* pos             # scratch: free item -> run item
    Py_ssize_t* hint            # a decide run's items by weight (pairing)
    Py_ssize_t* taken           # the items ``_greedy_below`` took
    Py_ssize_t by_weight_k      # sw, sv, sr hold the free items below it by weight (-1: not; ``_gather_by_weight``)
    Py_ssize_t by_weight_n      # ... that many
    Blocks by_w                 # the free items below by_w.below, by weight (count bounds)
    Blocks by_val               # ... and by value
    Card qcard                  # decide runs' multipliers (they count their own items)
    Card kcard                  # count-mode runs' (the count path's lam_k, mu_k)
    double lam                  # pre_d's multiplier (the break item's efficiency)
    bint counts                 # the count structures are in use
    bint cm                     # every optimal set has ``kneed`` free items
    bint count_runs             # count-mode runs are still within budget
    int integral
    double tol
    Py_ssize_t count_states     # count-mode runs' budget (1/COUNT_SHARE of it each)
    Py_ssize_t count_per_item
    double j                    # the capacity the items from k down may use
    double tgt                  # the value they must provide
    Py_ssize_t kneed            # the count path: how many of them
    double kmax                 # the next decide run's root count (``_root_bound``)
    Py_ssize_t queries          # decide runs
    Py_ssize_t no_runs          # those that proved an item needed
    Py_ssize_t no_states        # ... and their states
    Py_ssize_t wdone            # witness items passed
    bint on_line                # the free items lie on the count multipliers' line (the count bound is exact)
    bint sums                   # every free item's value is its weight (subset sum) ...
    double offset               # ... or its weight plus this D > 0 (strongly correlated; else 0) ...
    double gap                  # ... or plus this D < 0 (inverse strongly correlated; else 0; ``_fill_fewest``)
    uint64_t* bits              # ... the bit sets' layers then (``_sums_question``, ``_fill_question``), else NULL ...
    Py_ssize_t bits_cap         # ... and their words (0: no bit sets)
    Py_ssize_t bit_runs         # questions the bit sets answered
    Py_ssize_t fill_runs        # ... the count-fill bit sets (``_fill_question``)
    Py_ssize_t greedy_fills     # ... answered by ``fill_greedy`` (a yes, in O(n))
    Py_ssize_t proved_at        # ``_least_prefix`` proved that no set lies below this item ...
    double proved_tgt           # ... for this target
    Py_ssize_t complements      # decide runs asked of the complement (``_complement``) that found a set
    Py_ssize_t beam_misses      # heuristic runs in a row that found nothing (``_decide``)
    void* two_work              # the two-list search's workspace ...
    Py_ssize_t two_half         # ... for this half size (TWO_LISTS_HALF when the pass began; 0: off)
    Py_ssize_t two_misses       # two-list searches in a row that found nothing (``_decide``)
    Py_ssize_t two_tries        # two-list searches
    Py_ssize_t two_found        # ... that found a set
    Py_ssize_t two_asked        # ``_fill_question`` searched them for the question at this item (-1: none)
    Py_ssize_t yes_states       # the states of the last decide run that found a set (``_decide``)
    Py_ssize_t greedy_tries     # greedy sets tried below a witness item (``_greedy_below``)
    Py_ssize_t greedy_found     # ... that reached the target
    Py_ssize_t greedy_from_break  # ... that started at the break item ``_lp_keep`` found
    Py_ssize_t greedy_misses    # greedy sets in a row that did not (``_greedy_due``) ...
    Py_ssize_t greedy_skip      # ... and witness items to pass before the next try
    Py_ssize_t probes           # decide runs on the shortest prefix (``_prefix_probe``)
    Py_ssize_t probes_found     # ... that found a set there
    bint probe_off              # one failed since the last item kept: no more until the next
    uint8_t* av                 # a uniqueness run's avoided set (the witness, gathered)
    Py_ssize_t* twin            # ... each of its items' previous identical copy (``Pool.twin``)
    Py_ssize_t* copies          # scratch per group (``_link_copies``, ``_copies_in_order``) ...
    Py_ssize_t* held
    Py_ssize_t* below
    Py_ssize_t uniq_next        # proof work (``_proof_work``) at which to ask ``_unique`` next
    Py_ssize_t opt_states       # the states of the runs that found OPT
    Py_ssize_t uniq_floor       # the least proof work a uniqueness try's budget is counted from
    Py_ssize_t uniq_tries       # uniqueness runs
    Py_ssize_t uniq_states      # ... their states
    bint uniq_done              # one proved the witness the only set left
    Py_ssize_t uniq_blocks      # ... or settled a block of items (``BLOCK``)
    Py_ssize_t block            # the lowest item of that block
    Py_ssize_t other_h          # ``_other``: the highest item where its set differs from the witness
    Py_ssize_t other_n          # ... the items of its run
    uint8_t* kept               # the last CHAIN_KEEP sets ``_other`` found (nu bytes each; ``_chain_start``) ...
    Py_ssize_t* kept_k          # ... the item k of the question each answered (-1: none)
    Py_ssize_t nkept            # ... how many were found (the next goes to slot nkept % CHAIN_KEEP)
    Py_ssize_t uniq_runs        # ``_other`` runs
    Py_ssize_t uniq_windowed    # ... on a count window (``_other_windowed``)
    Py_ssize_t gb_k             # ``_greedy_below`` last ran below this item (-1: no break) ...
    Py_ssize_t gb_q             # ... and met its break item at this position of the efficiency order,
    double gb_w                 # ... after items of this weight ...
    double gb_v                 # ... and value
    Py_ssize_t windows          # window runs (``_window``)
    Py_ssize_t windows_found    # ... that found a set there
    bint lines_on               # the items lie on two parallel lines: ``lines`` bounds the items below k
    ClassCounts lines
    Blocks by_eff               # the free items below by_eff.below in efficiency order: weight and value sums
    Py_ssize_t scan_k           # the pass's position (the witness item it settles)
    Py_ssize_t lp_tries         # Dantzig's bounds below a witness item (``_lp_keep``) ...
    Py_ssize_t lp_kept          # ... that proved it needed
    Py_ssize_t lp_k             # the last of them from the blocks: below this item (-1: none) ...
    Py_ssize_t lp_r             # ... the break item's efficiency position (-1: every item fits) ...
    double lp_w                 # ... the weight of the items before it ...
    double lp_v                 # ... and their value ...
    double lp_j                 # ... within this capacity

cdef enum:
    # What the canonical pass decides for an item of the witness
    LEAVE_OUT = 1     # a set below it reaches the target (now the witness)
    KEEP = 2          # it is needed
    SCAN_DONE = 3     # a uniqueness run settled every item up to it
    BLOCK = 4         # a uniqueness run settled the items from it down to s.block

cdef enum:
    # A count-mode decide run gets 1/COUNT_SHARE of the count path's budget
    # (the first over it ends them for the pass; docs/algorithms.md).
    COUNT_SHARE = 4


cdef Py_ssize_t _gather(Scan* s, const Py_ssize_t* rank, const double* rw, const double* rv,
                        Py_ssize_t k) noexcept nogil:
    """The free items below k, in the order of ``rank`` (``rw``, ``rv``:
    their weights and values in that order), into the run's arrays (sw, sv,
    sr), and their weight order into ``hint``: the free items' weight order
    filtered, O(n) instead of a sort per run."""
    cdef Py_ssize_t q, m, h = 0, nsub = 0
    s.by_weight_k = -1
    for q in range(s.nu):
        m = rank[q]
        if m < k:
            s.sw[nsub] = rw[q]
            s.sv[nsub] = rv[q]
            s.sr[nsub] = m
            s.pos[m] = nsub
            nsub += 1
    for q in range(s.nu):
        m = s.w_rank[q]
        if m < k:
            s.hint[h] = s.pos[m]
            h += 1
    return nsub


cdef void _new_witness(Scan* s, Py_ssize_t p, Py_ssize_t top, Py_ssize_t nsub, bint dropped) noexcept nogil:
    """s.Sf from a run's set on the free items below p (run items s.sr,
    chosen s.sx), every item from p up to ``top`` left out. ``dropped``: the
    run's set is what the prefix leaves out (a complement run), else what it
    takes."""
    cdef Py_ssize_t q
    if top >= p:
        memset(s.Sf + p, 0, top + 1 - p)
    if dropped:
        memset(s.Sf, 1, p)
        for q in range(nsub):
            if s.sx[q]:
                s.Sf[s.sr[q]] = 0
    else:
        for q in range(nsub):
            s.Sf[s.sr[q]] = s.sx[q]


# The count term mu * k of a decide run's bound is negligible below this
# share of its target (a fitted mu of 1e-10 on profit ceiling items).
cdef double COUNT_NEGLIGIBLE = 1e-6


cdef Py_ssize_t _gather_light(Scan* s, bint by_weight, Py_ssize_t k, double vcap) noexcept nogil:
    """The free items below k of value at most ``vcap`` into the run's
    arrays, weights and values swapped (``_complement``'s run): by ascending
    v / w (the swapped run's efficiency order), or (``by_weight``, on
    subset-sum items only) by ascending weight, in O(their count). Returns
    their count. (Each item is written at the next place and kept only if it
    qualifies: no branch to mispredict; the place is at most the item's own
    step, within the arrays.)"""
    cdef Py_ssize_t q, p, m, nu = s.nu, nsub = 0
    cdef const Py_ssize_t* rank = s.w_rank if by_weight else s.eff_rank
    cdef const double* rw = s.w_w if by_weight else s.eff_w
    cdef const double* rv = s.w_v if by_weight else s.eff_v
    cdef double* sw = s.sw
    cdef double* sv = s.sv
    cdef Py_ssize_t* sr = s.sr
    s.by_weight_k = -1
    for q in range(nu):
        p = q if by_weight else nu - 1 - q
        if by_weight and rw[p] > vcap:  # weight = value: the rest are heavier
            break
        m = rank[p]
        sw[nsub] = rv[p]
        sv[nsub] = rw[p]
        sr[nsub] = m
        nsub += (m < k) & (rv[p] <= vcap)
    return nsub


# Subset sums by bit sets (``_sums_question``) while the layers take at most
# SUMS_BITS_WORDS words (8 MiB; less under a memory limit: ``Scan.bits_cap``):
# a word-parallel pass over them costs about what a state-list run of
# SUMS_BITS_WORDS / 32 states does.
cdef Py_ssize_t SUMS_BITS_WORDS = 1 << 20
cdef Py_ssize_t SUMS_BITS_FIRST = 1 << 17  # about the cost of one two-list search


def _configure_sums_bits(Py_ssize_t words):
    """Test knob: ``SUMS_BITS_WORDS`` (0: no bit sets; at most 2**20).
    Returns the old one."""
    global SUMS_BITS_WORDS
    if not 0 <= words <= 1 << 20:
        raise ValueError(f"words must be in 0..{1 << 20}, not {words}")
    old = SUMS_BITS_WORDS
    SUMS_BITS_WORDS = words
    return old


cdef Py_ssize_t _sums_question(Scan* s, Pool* pool, Py_ssize_t nsub, double vcap, double wgoal) noexcept nogil:
    """``_complement``'s question on subset-sum items (value = weight), the
    nsub light items gathered by ascending weight: a set E of them with a
    sum in [wgoal, vcap]. The two-list search first (a break solution of
    many light items, whose flips reach any small gap; in efficiency order
    it missed), then the bit sets of ``_subset_bits`` when they fit
    SUMS_BITS_WORDS; the bit sets alone when they cost less than a two-list
    search (SUMS_BITS_FIRST). Returns FOUND (E in s.sx), NOT_FOUND, OVER_BUDGET (not
    answered) or INTERRUPTED."""
    cdef Py_ssize_t budget = s.bits_cap
    cdef Py_ssize_t layer = bits_words(<Py_ssize_t>vcap) if vcap < 64.0 * budget else budget + 1
    cdef bint bits = layer <= budget and nsub + 1 <= budget // layer
    cdef Py_ssize_t words = (nsub + 1) * layer if bits else 0  # (no overflow: checked by division)
    if not (bits and words <= SUMS_BITS_FIRST) and _two_lists_found(s, nsub, vcap, wgoal, True):
        return FOUND
    if not bits:
        return OVER_BUDGET
    if _tick(pool, words >> 2):
        return INTERRUPTED
    s.bit_runs += 1
    return FOUND if subset_sum_bits(s.sw, nsub, <Py_ssize_t>wgoal, <Py_ssize_t>vcap, s.bits, s.sx) else NOT_FOUND


# Count fills by bit sets (``_fill_question``) up to FILL_BITS_WORK word
# operations (a few ms); beyond FILL_BITS_FIRST (about a two-list search) the
# two-list search goes first.
cdef Py_ssize_t FILL_BITS_WORK = 1 << 22
cdef Py_ssize_t FILL_BITS_FIRST = 1 << 17
# A question whose history does not fit: the sets of at most FILL_NEAR_SWAPS
# more items swapped in than out (or out than in) at any step, on the nearest
# items whose history fits (``_fill_near``; docs/algorithms.md).
cdef Py_ssize_t FILL_NEAR_SWAPS = 2
cdef Py_ssize_t FILL_NEAR_WORK = 1 << 19  # its word operations at most (the items it takes)
# Before the bit sets: ``_count_fill.fill_greedy``'s O(n) yes.
cdef bint FILL_GREEDY = True


def _configure_fill_greedy(bint on):
    """Test and benchmark knob: ``FILL_GREEDY``. Returns the old setting."""
    global FILL_GREEDY
    old = FILL_GREEDY
    FILL_GREEDY = on
    return old


def _configure_fill_bits(Py_ssize_t work, Py_ssize_t near=2):
    """Test knob: ``FILL_BITS_WORK`` (0: no count-fill bit sets) and
    ``FILL_NEAR_SWAPS`` (0: no search without the history). Returns the old
    ones."""
    global FILL_BITS_WORK, FILL_NEAR_SWAPS
    if work < 0 or near < 0:
        raise ValueError(f"work and near must be >= 0, not {work} and {near}")
    old = (FILL_BITS_WORK, FILL_NEAR_SWAPS)
    FILL_BITS_WORK, FILL_NEAR_SWAPS = work, near
    return old


cdef Py_ssize_t _gather_by_weight(Scan* s, Py_ssize_t k) noexcept nogil:
    """The free items below k by ascending weight into the run's arrays (on
    strongly correlated items, also their efficiency order). Returns their
    count. When the arrays still hold the last such gather, from an item at
    or above k (the pass's questions come a few items apart), they are
    filtered in place: the items before the first one dropped stay put."""
    cdef Py_ssize_t q, m, nsub = 0
    if s.by_weight_k >= k:
        for q in range(s.by_weight_n):
            m = s.sr[q]
            if m < k:
                if nsub < q:
                    s.sw[nsub], s.sv[nsub], s.sr[nsub] = s.sw[q], s.sv[q], m
                nsub += 1
    else:
        for q in range(s.nu):
            m = s.w_rank[q]
            if m < k:
                s.sw[nsub], s.sv[nsub], s.sr[nsub] = s.w_w[q], s.w_v[q], m
                nsub += 1
    s.by_weight_k, s.by_weight_n = k, nsub
    return nsub


cdef Py_ssize_t _fill_question(Scan* s, Pool* pool, Py_ssize_t k) noexcept nogil:
    """On strongly correlated items (v = w + D, ``s.offset``): whether the
    free items below k hold a set reaching s.tgt within s.j, when only the
    most of them that fit, m, can (m - 1 items are worth at most
    j + D (m - 1)): some m of them with a weight in [tgt - D m, j], by
    ``_count_fill``'s greedy (an O(n) yes), then its bit sets. (On inverse
    strongly correlated items, D < 0, ``_fill_fewest``'s greedy yes only.)
    The two-list search first when the bit sets would
    cost more (FILL_BITS_FIRST); beyond FILL_BITS_WORK, or without room in
    the bit sets' memory (``bits_cap``) for the history a yes is read back
    from, only ``_fill_near``. Returns LEAVE_OUT (s.Sf the set found, every
    item from k up left out), KEEP, 0 when not answered, or a negative
    code."""
    cdef Fill f
    cdef Py_ssize_t nsub, m = 0, work
    cdef double least = 0.0, need = s.tgt - s.tol, lo
    cdef bint fits, keep
    if s.gap < 0.0 and FILL_GREEDY and FILL_BITS_WORK > 0:
        return _fill_fewest(s, k)
    if s.offset <= 0.0 or s.bits_cap == 0 or FILL_BITS_WORK == 0:
        return 0
    nsub = _gather_by_weight(s, k)
    if s.counts and s.by_w.below >= k:  # the count sums hold them by weight too: m in O(sqrt n)
        _sums_below(s, k)
        m = <Py_ssize_t>blk_within(&s.by_w, s.j, False, &least)
    while m < nsub and least + s.sw[m] <= s.j:
        least += s.sw[m]
        m += 1
    if m == 0 or need - s.offset * (m - 1) <= s.j:
        return 0  # fewer items may reach it too: not this question
    lo = ceil(need - s.offset * m)
    if lo > s.j:
        return KEEP  # not even m items weighing j
    if _easy_fill(s, k, nsub, m, least, lo, floor(s.j), FILL_GREEDY) == LEAVE_OUT:
        return LEAVE_OUT
    fill_setup(&f, s.sw, nsub, m, <Py_ssize_t>(lo - least), <Py_ssize_t>(floor(s.j) - least), s.hint)
    fits = fill_layers(&f) <= s.bits_cap
    keep = fits and f.t + 1 <= s.bits_cap // fill_layers(&f)
    work = fill_work(&f, FILL_BITS_WORK)
    if fits and work <= min(FILL_BITS_FIRST, FILL_BITS_WORK):  # cheap: yes (read back or not) and no
        return _fill_answer(s, pool, k, nsub, &f, keep, work)
    if _two_lists_found(s, nsub, s.j, need, True):
        _new_witness(s, k, k, nsub, False)
        return LEAVE_OUT
    s.two_asked = k  # (``_decide`` does not search them again)
    if keep and work <= FILL_BITS_WORK:
        return _fill_answer(s, pool, k, nsub, &f, True, work)
    return _fill_near(s, pool, k, nsub, &f)


cdef Py_ssize_t _fill_fewest(Scan* s, Py_ssize_t k) noexcept nogil:
    """On inverse strongly correlated items (v = w + D, D = ``s.gap`` < 0) a
    set of c items is worth its weight plus D c, so the free items below k
    reach s.tgt within s.j with some c items weighing in [tgt - D c, j].
    Tried greedily for c, the fewest whose heaviest c reach the target
    (``fill_greedy`` from the lightest c): LEAVE_OUT with the set found
    (s.Sf), or 0 (a miss proves nothing; the runs decide)."""
    cdef Py_ssize_t nsub = _gather_by_weight(s, k), c = 0, q
    cdef double top = 0.0, least = 0.0, need = s.tgt - s.tol, lo, hi = floor(s.j)
    while c < nsub and top + s.gap * c < need:
        top += s.sw[nsub - 1 - c]
        c += 1
    if c == 0 or top + s.gap * c < need:
        return 0  # the empty set, or not even all of them
    for q in range(c):
        least += s.sw[q]
    lo = ceil(need - s.gap * c)
    if least > hi or lo > hi:
        return 0
    return _easy_fill(s, k, nsub, c, least, lo, hi, True)


cdef Py_ssize_t _easy_fill(Scan* s, Py_ssize_t k, Py_ssize_t nsub, Py_ssize_t m, double least, double lo, double hi,
                           bint greedy) noexcept nogil:
    """Some m of the gathered items (by weight; the lightest m weigh
    ``least`` <= hi) with a weight in [lo, hi], the easy way: the lightest
    m, or (``greedy``) ``fill_greedy``. LEAVE_OUT with s.Sf the set found,
    every item from k up left out; else 0 (proves nothing)."""
    cdef Py_ssize_t q
    if lo <= least:  # the lightest m
        for q in range(nsub):
            s.sx[q] = q < m
    elif greedy and fill_greedy(s.sw, nsub, m, <Py_ssize_t>least, <Py_ssize_t>lo, <Py_ssize_t>hi, s.sx):
        s.greedy_fills += 1
    else:
        return 0
    _new_witness(s, k, k, nsub, False)
    return LEAVE_OUT


cdef Py_ssize_t _fill_answer(Scan* s, Pool* pool, Py_ssize_t k, Py_ssize_t nsub, const Fill* f, bint keep,
                             Py_ssize_t work) noexcept nogil:
    """``_fill_question``'s bit sets (``keep``: with the history): LEAVE_OUT
    (the set read back), KEEP (none), 0 (a yes not read back) or
    INTERRUPTED."""
    cdef int r
    if _tick(pool, work >> 2):
        return INTERRUPTED
    s.fill_runs += 1
    r = fill_bits(f, s.bits, keep, s.sx)
    if r == FILL_NONE:
        return KEEP
    if r == FILL_UNREAD:
        return 0
    _new_witness(s, k, k, nsub, False)
    return LEAVE_OUT


cdef Py_ssize_t _fill_near(Scan* s, Pool* pool, Py_ssize_t k, Py_ssize_t nsub, Fill* f) noexcept nogil:
    """``_fill_question`` without room for the history: the bit sets with at
    most FILL_NEAR_SWAPS balances on the nearest items whose history fits,
    within FILL_NEAR_WORK, while the last yes of a run cost TWO_WORTH states
    or more. A set found is an answer (LEAVE_OUT); none proves nothing (0)."""
    cdef Py_ssize_t r
    f.b = min(f.b, FILL_NEAR_SWAPS)
    if FILL_NEAR_SWAPS == 0 or s.yes_states < TWO_WORTH or fill_layers(f) > s.bits_cap // 2:
        return 0  # (as the two lists: only while the last yes of a run was costly)
    f.t = min(f.t, s.bits_cap // fill_layers(f) - 1, FILL_NEAR_WORK // fill_layers(f))
    if walk_sum(f) < f.dlo:
        return 0  # the nearest items cannot add up to the range (dense weights: n=10^4 and up)
    r = _fill_answer(s, pool, k, nsub, f, True, f.t * fill_layers(f))
    return r if r == LEAVE_OUT or r < 0 else 0


cdef Py_ssize_t _complement(Scan* s, Pool* pool, Py_ssize_t k, Py_ssize_t top) noexcept nogil:
    """Whether the free items below k hold a set S with w(S) <= j and
    v(S) >= tgt, asked of its complement E in that prefix: with pre_w,
    pre_v the prefix's sums, E must shed weight w(E) >= pre_w - j while
    giving up value v(E) <= pre_v - tgt. That is a knapsack with the roles
    swapped (weights v, values w, capacity pre_v - tgt, goal pre_w - j), on
    the items of value at most pre_v - tgt only: at a tight prefix (pre_v
    just above the target) a few items, where the direct run searches all of
    them. Asked when that capacity is below the target (integer values, not
    in count mode), unless the direct run has an exact count bound to lean
    on (a count term that is not negligible, with the items on its line; the
    swapped run has none: on inverse strongly correlated items the
    complement took 6x the states; on profit ceiling items, whose fitted
    count multiplier is 0 up to rounding, 0.4x; on circle items, off the
    line, 0.8x the time).
    Returns LEAVE_OUT (s.Sf is the prefix less E, the items from k up to
    ``top`` left out), KEEP, 0 when not asked, or a negative code."""
    cdef double vcap = s.pre_v[k] - s.tgt, wgoal = s.pre_w[k] - s.j
    cdef Py_ssize_t nsub, r = OVER_BUDGET, bb, g0 = pool.generated
    cdef double zz
    if not s.integral or s.cm or vcap >= s.tgt:
        return 0
    if k != top and _lp_keep(s, k):  # (at the question's own item, ``_settle`` asked it)
        return KEEP
    if fabs(s.qcard.mu) * k > COUNT_NEGLIGIBLE * s.tgt and s.on_line:
        return 0
    if wgoal <= 0:  # every item below k fits (inside ``_least_prefix``): is their value enough?
        if vcap < 0:
            return KEEP
        _new_witness(s, k, top, 0, True)
        return LEAVE_OUT
    if s.sums:
        nsub = _gather_light(s, True, k, vcap)
        r = _sums_question(s, pool, nsub, vcap, wgoal)
    if r == OVER_BUDGET:
        nsub = _gather_light(s, False, k, vcap)
        pool.by_weight = NULL
        r = _core(s.sw, s.sv, nsub, vcap, 1, wgoal, 1, 0.0, pool, NULL, s.sx, &zz, &bb)
        if r == FOUND and s.sums:  # what the two-list search of the next question weighs
            s.yes_states = pool.generated - g0
    if r < 0:
        return r
    if r != FOUND:
        return KEEP
    _new_witness(s, k, top, nsub, True)
    s.complements += 1
    return LEAVE_OUT


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


cdef inline bint _below_target(const Scan* s, Py_ssize_t k, double ub) noexcept nogil:
    """Whether the bound ``ub`` on the items below k (with its allowance)
    cannot reach the target."""
    return ub + ABS_SLACK + REL_LP * (fabs(s.tgt) + s.pre_v[k]) < s.tgt - s.tol


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


cdef Py_ssize_t BEAM_MISSES = 1
# Before a decide run: a two-list search (``_two_lists``) over the
# 2 * TWO_LISTS_HALF items nearest the break (2^12 subsets a list), then
# TWO_LISTS_TRIES - 1 more with some of them spread out, on items on one
# line only. A search costs about what a run of 4,000 states does (the
# merges are latency-bound), so it is tried only while the last yes of a run
# cost TWO_WORTH states or more, and not after TWO_MISSES of them in a row
# found nothing (a no proves nothing, and proofs come in runs); the next yes
# of a full run turns them on again. Off the line (profit ceiling, spanner,
# multiple strongly correlated items) it found only cheap sets: 1.1-1.4x
# slower there. Not on inverse strongly correlated items (``s.gap`` < 0)
# either: the sets it found there a decide run finds about as cheaply, and
# its misses cost up to 0.4 ms each (n = 10^3 and 10^4, R = 10^4 and 10^6:
# 1.0-2.4x the time with it).
cdef Py_ssize_t TWO_LISTS_HALF = 12
cdef Py_ssize_t TWO_LISTS_TRIES = 3
cdef Py_ssize_t TWO_MISSES = 2
cdef Py_ssize_t TWO_WORTH = 16384
cdef bint TWO_ANY_ITEMS = False  # tests: off the line too


cdef _check_two_lists(Py_ssize_t half, Py_ssize_t tries):
    """ValueError unless ``two_lists`` supports this half size and these tries."""
    if not 0 <= half <= TWO_LISTS_MAX_HALF:
        raise ValueError(f"half must be in 0..{TWO_LISTS_MAX_HALF}, not {half}")
    if not 1 <= tries <= 3:
        raise ValueError(f"tries must be 1, 2 or 3, not {tries}")


def _configure_two_lists(Py_ssize_t half, Py_ssize_t misses, Py_ssize_t tries=3, Py_ssize_t worth=16384,
                         bint any_items=False):
    """Test knob: the two-list search's half size (0: off), its misses in a
    row, its tries, the states a yes must have cost, and whether items off
    the line are searched too (``TWO_LISTS_HALF``, ``TWO_MISSES``,
    ``TWO_LISTS_TRIES``, ``TWO_WORTH``, ``TWO_ANY_ITEMS``). Returns the old
    ones."""
    global TWO_LISTS_HALF, TWO_MISSES, TWO_LISTS_TRIES, TWO_WORTH, TWO_ANY_ITEMS
    old = (TWO_LISTS_HALF, TWO_MISSES, TWO_LISTS_TRIES, TWO_WORTH, TWO_ANY_ITEMS)
    _check_two_lists(half, tries)
    TWO_LISTS_HALF, TWO_MISSES, TWO_LISTS_TRIES, TWO_WORTH, TWO_ANY_ITEMS = half, misses, tries, worth, any_items
    return old


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


cdef bint _two_lists_found(Scan* s, Py_ssize_t nsub, double cap, double goal, bint line) noexcept nogil:
    """The two-list search on the gathered run items (capacity ``cap``, goal
    ``goal``), when it may pay: the items lie on one line (``line``: then a
    set reaching the goal must fill the capacity exactly, and the runs'
    states double before one does) but not on the inverse strongly
    correlated line (``s.gap`` < 0), the last yes of a run cost TWO_WORTH
    states or more (or none came yet), and fewer than TWO_MISSES searches in
    a row found nothing. True with its set in s.sx."""
    if s.two_half == 0 or not ((line and s.gap >= 0.0) or TWO_ANY_ITEMS):  # two_half: 0 unless integral
        return False
    if s.two_misses >= TWO_MISSES or s.yes_states < TWO_WORTH:
        return False
    s.two_tries += 1
    if two_lists(s.sw, s.sv, nsub, cap, goal, s.two_half, TWO_LISTS_TRIES, s.sx, s.two_work) == 1:
        s.two_found += 1
        s.two_misses = 0
        return True
    s.two_misses += 1
    return False


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


cdef Py_ssize_t _least_prefix(Scan* s, Pool* pool, Py_ssize_t k) noexcept nogil:
    """After ``_complement`` found a set below witness item k: the least
    prefix p that holds one, between the shortest prefix the bounds allow
    and k (whether a prefix holds a set only grows with it), each step one
    complement question. Every witness item from k down to p is left out
    (each has that set below it, and the target does not change meanwhile);
    s.Sf becomes the set found below p. Without it the pass took the witness
    the complement gives (the whole prefix but a few light items) one item
    at a time: subset sum n=10^4, R=10^6 asked 3,583 questions. The proof
    that none lies below p - 1 (the next witness item), when the search made
    it, is remembered (``proved_at``) so the pass does not ask it again. The
    search gallops up from the shortest prefix first (lo, lo + 1, lo + 3,
    lo + 7, ...), then bisects: the least prefix tends to lie at or a few
    items above the shortest (profit ceiling items: at it; subset sums,
    where the bit sets answer short prefixes in microseconds, a few above),
    while a question at a long prefix is a run over thousands of items
    (subset sum n=10^4, R=10^6: 13 such runs below the top witness item).
    Returns LEAVE_OUT or a negative code."""
    cdef Py_ssize_t lo = _shortest_prefix(s, k), hi = k, mid, r, step = 1
    while lo < hi:
        if step > 0:  # galloping up from lo first: see above
            mid = min(lo + step - 1, hi - 1)
            step *= 2
        else:
            mid = lo + (hi - lo) // 2
        s.queries += 1
        r = _complement(s, pool, mid, k)
        if r < 0:
            return r
        if r == LEAVE_OUT:  # a set below mid: s.Sf holds it
            hi = mid
            step = 0  # bisection from here
        else:  # KEEP: none below mid (0, not asked, cannot occur below k: the
            # capacity and the count term only shrink with the prefix)
            s.proved_at, s.proved_tgt = mid, s.tgt  # the question at item mid
            lo = mid + 1
    return LEAVE_OUT


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
cdef Py_ssize_t CHAIN_KEEP = 16


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


# The two-list search's workspace, one per thread, kept from solve to solve:
# allocated afresh, its 352 KB (half size 12) would be faulted in again by
# every search (measured: 0.2-0.3 ms a solve on profit ceiling items,
# n=10^3). It grows to the largest half size asked for (5.5 MB at 16, a
# test's) and is freed with the thread.
_local = threading.local()


cdef _bits_work(Py_ssize_t words):
    """This thread's workspace for ``subset_sum_bits``, at least ``words``
    words (its pages fault in as the layers first reach them)."""
    work = getattr(_local, "sums_bits", None)
    if work is None or work.shape[0] < words:
        work = _local.sums_bits = np.empty(words, dtype=np.uint64)
    return work


cdef _two_lists_work(Py_ssize_t half):
    """This thread's workspace for ``two_lists`` with half size ``half``."""
    need = two_lists_bytes(half)
    work = getattr(_local, "two_lists", None)
    if work is None or work.shape[0] < need:
        work = _local.two_lists = np.empty(need, dtype=np.uint8)
        work.fill(0)  # its pages faulted in here, once
    return work


cdef struct _Carve:
    char* p  # the next free byte of a scratch buffer (8-byte aligned)


cdef inline void* _take(_Carve* cut, Py_ssize_t nbytes) noexcept nogil:
    """The next ``nbytes`` of the buffer, rounded up to 8 (the next piece stays aligned)."""
    cdef void* at = cut.p
    cut.p += (nbytes + 7) // 8 * 8
    return at


cdef void _line_offsets(Scan* s, const double* fw, const double* fv, Py_ssize_t nu) noexcept nogil:
    """On integer items: whether every value is its weight (``s.sums``), or
    its weight plus one D > 0 (``s.offset``) or D < 0 (``s.gap``); exact, the
    differences being integers below 2**53. One pass."""
    cdef Py_ssize_t q
    cdef double g
    cdef bint same = True
    s.sums, s.offset, s.gap = False, 0.0, 0.0
    if not s.integral or nu == 0:
        return
    g = fv[0] - fw[0]
    for q in range(1, nu):
        if fv[q] - fw[q] != g:
            same = False
            break
    if not same:
        return
    s.sums = g == 0
    s.offset = g if g > 0 else 0.0
    s.gap = g if g < 0 else 0.0


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
    s.opt_states = s.uniq_floor = pool.generated
    s.uniq_next = max(UNIQUE_FROM, pool.generated // UNIQUE_SHARE) if UNIQUE_FROM > 0 else UNIQUE_FROM
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
        if UNIQUE_FROM > 0 and UNIQUE_WINDOW and integral:  # windowed: from the first proof on
            s.uniq_next = 1
            s.uniq_floor = max(s.opt_states // UNIQUE_EARLY, nu)
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
    _line_offsets(&s, &fw[0], &fv[0], nu)
    s.two_half = TWO_LISTS_HALF if s.integral else 0  # the workspace's: a knob set meanwhile cannot overrun it
    cdef uint8_t[::1] two_work = _two_lists_work(s.two_half)
    # the bit sets within SUMS_BITS_WORDS and the memory the states may still grow into
    s.bits_cap = (min(SUMS_BITS_WORDS, max(0, pool.max_states - pool.cap) // 8 * SLOT_BYTES)
                  if s.sums or s.offset > 0 else 0)
    cdef uint64_t[::1] bits = _bits_work(s.bits_cap) if s.bits_cap > 0 else None
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
    s.w_pos, s.v_pos, s.grp, s.Sf, s.two_work = &w_pos[0], &v_pos[0], &grp[0], &Sf[0], &two_work[0]
    s.bits = &bits[0] if s.bits_cap > 0 else NULL
    s.on_line = s.counts and pre_ca[nu] <= LINE_TOL * pre_v[nu]
    s.kmax = nu  # before the first count: every item
    s.yes_states = TWO_WORTH  # before the first yes: the two-list search may pay
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


def _two_lists_py(const double[::1] w, const double[::1] v, double c, double goal, Py_ssize_t half,
                  Py_ssize_t tries=1):
    """For tests: ``_two_lists.two_lists`` on items (w, v) in efficiency
    order: the set found as a uint8 array, or None."""
    cdef Py_ssize_t n = w.shape[0]
    if v.shape[0] != n:
        raise ValueError(f"v has {v.shape[0]} items, w has {n}")
    _check_two_lists(half, tries)
    x = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] xv = x
    cdef uint8_t[::1] work = _two_lists_work(half)
    cdef int r
    with nogil:
        r = two_lists(&w[0] if n else NULL, &v[0] if n else NULL, n, c, goal, half, tries,
                      &xv[0] if n else NULL, &work[0])
    return x if r == 1 else None


def _subset_bits_py(const double[::1] w, Py_ssize_t lo, Py_ssize_t hi):
    """For tests: ``_subset_bits.subset_sum_bits`` on integer weights ``w``:
    a set with a sum in [lo, hi] as a uint8 array, or None."""
    cdef Py_ssize_t n = w.shape[0]
    if not 0 <= lo <= hi:
        raise ValueError(f"need 0 <= lo <= hi, not lo={lo}, hi={hi}")
    x = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] xv = x
    cdef uint64_t[::1] layers = np.empty((n + 1) * bits_words(hi), dtype=np.uint64)
    cdef int r
    with nogil:
        r = subset_sum_bits(&w[0] if n else NULL, n, lo, hi, &layers[0], &xv[0] if n else NULL)
    return x if r == 1 else None


def _fill_greedy_py(const double[::1] w, Py_ssize_t m, Py_ssize_t lo, Py_ssize_t hi):
    """For tests: ``_count_fill.fill_greedy`` on integer weights ``w``
    (ascending), lo above the least sum of m. Returns the set found as a
    uint8 array, or None."""
    cdef Py_ssize_t n = w.shape[0], q, least = 0
    if not 1 <= m <= n:
        raise ValueError(f"need 1 <= m <= n = {n}, not m={m}")
    for q in range(m):
        least += <Py_ssize_t>w[q]
    if not least < lo <= hi:
        raise ValueError(f"need {least} (the least sum of m) < lo <= hi, not lo={lo}, hi={hi}")
    x = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] xv = x
    cdef bint found
    with nogil:
        found = fill_greedy(&w[0], n, m, least, lo, hi, &xv[0])
    return x if found else None


def _count_fill_py(const double[::1] w, Py_ssize_t m, Py_ssize_t lo, Py_ssize_t hi, bint keep=True):
    """For tests: ``_count_fill.fill_bits`` on integer weights ``w``
    (ascending): whether some m of them have a sum in [lo, hi], lo at
    least the least sum of m. Returns (code, the set as a uint8 array or None, (walk, swaps, words))."""
    cdef Py_ssize_t n = w.shape[0], q
    cdef double least = 0.0
    if not 1 <= m <= n:
        raise ValueError(f"need 1 <= m <= n = {n}, not m={m}")
    for q in range(m):
        least += w[q]
    if not least <= lo <= hi:
        raise ValueError(f"need {least:.0f} (the least sum of m) <= lo <= hi, not lo={lo}, hi={hi}")
    cdef Fill f
    cdef Py_ssize_t[::1] seq = np.empty(n, dtype=np.intp)
    x = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] xv = x
    fill_setup(&f, &w[0], n, m, lo - <Py_ssize_t>least, hi - <Py_ssize_t>least, &seq[0])
    cdef uint64_t[::1] layers = np.empty((f.t + 1 if keep else 1) * fill_layers(&f), dtype=np.uint64)
    cdef int r
    with nogil:
        r = fill_bits(&f, &layers[0], keep, &xv[0])
    return r, (x if r == 1 else None), (f.t, f.b, f.words)


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
