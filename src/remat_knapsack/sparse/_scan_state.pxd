# cython: language_level=3
"""The canonical pass's record (``Scan``): the free items in their orders,
their prefix sums, the current witness, a decide run's gathered items and
the pass's counters; what the pass decides for a witness item; and the
helpers every question of the pass uses: the gather of the free items below
an item into a run's arrays (``_gather``), a run's set as the new witness
(``_new_witness``) and the test of a bound against the target
(``_below_target``).

Declarations and inline helpers only, no extension of its own: ``_canonical``
(the pass and its set-up) and the modules it asks (``_prefix_bounds``,
``_fills``, ``_decide``, ``_unique``) share it.
"""

from libc.math cimport fabs
from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memset

from ._blocks cimport Blocks
from ._class_counts cimport ClassCounts
from ._pool cimport ABS_SLACK, REL_LP, Card


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
    # Uniqueness chains keep the last CHAIN_KEEP sets they found (``Scan.kept``,
    # ``_unique._chain_start``).
    CHAIN_KEEP = 16


cdef inline Py_ssize_t _gather(Scan* s, const Py_ssize_t* rank, const double* rw, const double* rv,
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


cdef inline void _new_witness(Scan* s, Py_ssize_t p, Py_ssize_t top, Py_ssize_t nsub, bint dropped) noexcept nogil:
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


cdef inline bint _below_target(const Scan* s, Py_ssize_t k, double ub) noexcept nogil:
    """Whether the bound ``ub`` on the items below k (with its allowance)
    cannot reach the target."""
    return ub + ABS_SLACK + REL_LP * (fabs(s.tgt) + s.pre_v[k]) < s.tgt - s.tol
