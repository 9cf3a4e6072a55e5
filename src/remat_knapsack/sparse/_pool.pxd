# cython: language_level=3
"""What every kernel of the sparse solver's runs shares: the result codes,
the state pool (``Pool``) and the cardinality card (``Card``), the rounding
allowances (one definition, as C macros), the signal check (``_tick``), the
allowance of a two-term bound (``_slack``) and the count term's k
(``_kcount``).

Declarations and inline helpers only, no extension of its own: ``_expand``
runs the core on a pool, ``_sparse`` keeps one per solve (``Workspace``), and
the canonical pass (``_canonical`` and the modules it drives) asks runs of it.
"""

from libc.math cimport fabs
from libc.stdint cimport int32_t, uint8_t, uint64_t

from .._common._interrupt cimport CHECK_EVERY, interrupted


# Rounding allowances. Every bound is computed in float64 and compared with
# a value that must be reached: a state is pruned (an item fixed) only when
# the bound plus its allowance is still below, so an allowance larger than
# the rounding error only costs pruning, never exactness.
cdef extern from *:
    """
    #define ABS_SLACK (1e-9)
    #define REL_SUM (1e-15)
    #define REL_LP (1e-13)
    #define REL_CARD (1e-11)
    #define REL_SEARCH (1e-12)
    #define LINE_TOL (1e-9)
    """
    const double ABS_SLACK  # absolute part of every allowance
    const double REL_SUM  # per unit of magnitude, a bound of two terms (``_slack``)
    const double REL_LP  # weight-only Lagrangian bounds (sums over items)
    const double REL_CARD  # bounds with cardinality multipliers (more terms, larger)
    const double REL_SEARCH  # multiplier search and count look-ups (``_count_bound``, ``_kcount``)
    const double LINE_TOL  # items within this (relative) of the fitted line lie on it


cdef enum:
    # Results of ``_core`` and of the runs built on it.
    NOT_FOUND = 0       # decide: no set reaches the goal
    FOUND = 1           # optimise: ``x`` holds an optimal set; decide: a set reaching the goal
    NO_BETTER = 2       # optimise: nothing beats the value known reachable (``x``: greedy)
    GO_ON = 3           # ``_count_start``/``_plain_start``: set up, run the core
    STATE_LIMIT = -1    # the states would exceed ``pool.max_states`` (or malloc failed)
    INCONSISTENT = -2   # a recovery run missed the state it rebuilds (a bug)
    OVER_BUDGET = -4    # more than ``pool.limit`` states generated
    INTERRUPTED = -5    # a signal handler raised: KeyboardInterrupt is pending

cdef enum:
    BEAM = 512       # states per step of the heuristic probe in _optimum
    QBEAM = 512       # the same before each decide run of the canonical pass
    VW = 1            # 64-bit words of decision history per state
    VBITS = 64        # = 64 * VW core steps remembered per state
    # Bytes per state slot: two buffers of weight, value, decision history, item count.
    SLOT_BYTES = 2 * (8 + 8 + 8 * VW + 4)
    KWIN = 64         # count mode: per-count dominance for counts within kfix +- KWIN
    # Avoid mode (``Pool.avoid``): an item the avoided set leaves free (out of
    # range), and a state's class bit, kept in its item count K above the count.
    AVOID_FREE = 2
    CLASS_D = 1 << 30
    COUNT_MASK = CLASS_D - 1


cdef struct Card:
    # A second bound, Lagrangian in weight (lam) and item count (mu):
    #   v(X) <= P + lam (c - W) + mu (k - |state|) + sum of positive reduced
    #   profits d_j = v_j - lam w_j - mu of the items still to add and of -d_j
    #   of those still to remove,
    # with k = kmax (no feasible set has more items) when mu >= 0 and
    # k = kmin(goal) (fewer items cannot reach the goal) when mu < 0.
    # This is what makes (almost / inverse) strongly correlated items cheap.
    double lam
    double mu
    double kmax
    const double* topv   # prefix sums of all values, largest first (ntop + 1)
    Py_ssize_t ntop
    # Count mode (kfix >= 0): only sets of exactly kfix items are sought, the
    # items are in descending order of d_j = v_j - lam w_j - mu, and the bound
    # is the count bound of ``_core`` (see ``_count_bound``); -1 otherwise.
    double kfix

cdef struct Pool:
    double* W
    double* P
    uint64_t* V
    int32_t* K
    double* W2
    double* P2
    uint64_t* V2
    int32_t* K2
    Py_ssize_t cap
    Py_ssize_t max_states
    Py_ssize_t peak
    Py_ssize_t generated
    Py_ssize_t runs
    Py_ssize_t first_steps   # core steps of the first (optimise) run
    Py_ssize_t beam          # > 0: keep at most this many states per step (heuristic runs)
    Py_ssize_t first_best    # the step at which it found its best state
    Py_ssize_t limit         # > 0: give up (OVER_BUDGET) once this many states were generated
    Py_ssize_t ticks         # work since the last signal check
    const Py_ssize_t* by_weight  # the next run's items by ascending weight, or NULL (taken by that run)
    # The next decide run seeks a set that differs from this one (over its
    # items, in its order: 0 or 1, or AVOID_FREE for an item out of range) on
    # an item in range, or NULL (taken by that run): ``_core``'s avoid mode.
    const uint8_t* avoid
    # With ``avoid``: for each item of the next run, the position of the
    # previous identical copy in its order, or -1 (NULL: none). Among
    # identical copies that run's core steps then take the lowest-indexed
    # ones first (each group's copies lie in index order: ``_twin_rule``),
    # so most sets that differ from ``avoid`` only by a swap of copies are
    # never reached. Not held to it: a pair with an item outside the core, a
    # copy decided more than VBITS steps back, the rebuild of a longer run;
    # those can still return such a set (a real one: it costs a run, never
    # exactness). Taken by that run.
    const Py_ssize_t* twin
    bint windowed            # the next run's items are what a count window left free (taken by that run)
    double win_lam           # the last count multipliers refitted to a window's free items
    double win_mu            # (``_windowed``: the next window's first try)
    bint stop                # a signal handler raised: every run returns INTERRUPTED
    # An upper bound on OPT known beforehand (``_lines``), or INFINITY: an
    # optimise run whose incumbent reaches it stops.
    double opt_bound


cdef inline bint _tick(Pool* pool, Py_ssize_t work) noexcept nogil:
    """Count ``work`` units; every ``CHECK_EVERY`` of them run the pending
    signal handlers. True once one raised (the caller frees and returns
    INTERRUPTED)."""
    pool.ticks += work
    if pool.ticks >= CHECK_EVERY:
        pool.ticks = 0
        if interrupted():
            pool.stop = 1
    return pool.stop


cdef inline double _slack(double a, double b) noexcept nogil:
    """Rounding allowance of a bound a + b computed in float64."""
    return ABS_SLACK + REL_SUM * (fabs(a) + fabs(b))


cdef inline double _kcount(const Card* card, double goal) noexcept nogil:
    """The k of the cardinality term: kmax, or when mu < 0 the fewest items
    whose values (largest first) can reach ``goal``."""
    cdef Py_ssize_t lo = 0, hi = card.ntop, mid
    if card.mu >= 0:
        return card.kmax
    if card.topv[hi] * (1 + REL_SEARCH) + ABS_SLACK < goal:
        return <double>(hi + 1)  # unreachable: any k > n makes the bound prune
    while lo < hi:
        mid = (lo + hi) // 2
        if card.topv[mid] * (1 + REL_SEARCH) + ABS_SLACK >= goal:
            hi = mid
        else:
            lo = mid + 1
    return <double>lo
