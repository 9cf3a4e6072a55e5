# cython: language_level=3
"""The canonical pass's questions that need no state-list run, on items that
lie on a line: subset sums (value = weight) and strongly correlated items
(value = weight + D), where a set reaching the target must fill the capacity
(almost) exactly.

``_fill_question``
    Some m of the free items below k with a weight in a range: the lightest
    m, ``_count_fill``'s greedy, then its bit sets (``_count_fill.pxd``), or
    without room for their history the nearest items only (``_fill_near``).
``_complement``, ``_least_prefix``
    The question asked of the complement in the prefix (at a tight prefix
    only the light items can be left out; on subset sums the bit sets of
    ``_subset_bits.pxd`` answer it), and after a yes the least prefix that
    holds a set.
``_two_lists_found``
    The two-list search (``_two_lists.pxd``) over the items nearest the
    break, while it pays.

Their knobs, their workspaces (one per thread, kept from solve to solve) and
their part of a pass's set-up (``fills_setup``) are here too. Private;
``_canonical`` and ``_decide`` call these through ``_fills.pxd`` (no GIL).
The ``_py`` functions are test faces of the ``.pxd`` kernels.
"""

import threading

import numpy as np

from libc.math cimport ceil, fabs, floor
from libc.stdint cimport uint8_t, uint64_t

from ._blocks cimport blk_within
from ._count_fill cimport (FILL_NONE, FILL_UNREAD, Fill, fill_bits, fill_greedy, fill_layers, fill_setup,
                           fill_work, walk_sum)
from ._expand cimport _core
from ._pool cimport FOUND, INTERRUPTED, NOT_FOUND, OVER_BUDGET, SLOT_BYTES, Pool, _tick
from ._prefix_bounds cimport _lp_keep, _shortest_prefix, _sums_below
from ._scan_state cimport KEEP, LEAVE_OUT, Scan, _new_witness
from ._subset_bits cimport bits_words, subset_sum_bits
from ._two_lists cimport TWO_LISTS_MAX_HALF, two_lists, two_lists_bytes


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


cdef list fills_setup(Scan* s, const Pool* pool, const double* fw, const double* fv):
    """This module's part of a pass's set-up: which line the free items
    (``fw``, ``fv``: s.nu of them) lie on (``_line_offsets``), the two-list
    search's workspace (s.two_half, s.two_work) and the bit sets'
    (s.bits_cap, s.bits). Returns the workspaces' arrays, which must outlive
    the pass."""
    cdef uint8_t[::1] two_work
    cdef uint64_t[::1] bits
    _line_offsets(s, fw, fv, s.nu)
    s.two_half = TWO_LISTS_HALF if s.integral else 0  # the workspace's: a knob set meanwhile cannot overrun it
    two_work_a = _two_lists_work(s.two_half)
    # the bit sets within SUMS_BITS_WORDS and the memory the states may still grow into
    s.bits_cap = (min(SUMS_BITS_WORDS, max(0, pool.max_states - pool.cap) // 8 * SLOT_BYTES)
                  if s.sums or s.offset > 0 else 0)
    bits_a = _bits_work(s.bits_cap) if s.bits_cap > 0 else None
    two_work = two_work_a
    bits = bits_a
    s.two_work = &two_work[0]
    s.bits = &bits[0] if s.bits_cap > 0 else NULL
    s.yes_states = TWO_WORTH  # before the first yes: the two-list search may pay
    return [two_work_a, bits_a]


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
