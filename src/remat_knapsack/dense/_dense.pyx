# cython: language_level=3
"""Compiled kernels of the dense solvers: DP rows indexed by capacity.

Private. ``remat_knapsack.dense._solver`` validates the inputs, checks memory and calls
these. Every item here has an int64 weight w >= 1 and a value > 0
(``active_items`` has decided the others), in ascending original index; at the
top w <= capacity, but a sub-problem of a Hirschberg split may hold items
heavier than its own capacity.

Row semantics: ``row[b]`` is the best value of a set of the items whose weight
is at most ``b``. Item i *improves* capacity b when ``row[b - w] + v`` is
strictly greater than ``row[b]``; keeping an item only then is PyTorch's
``dp_knapsack`` backtracking rule (leave item i out whenever the optimum stays
reachable without it).

Pruning: a pass may be given, per item, an interval of capacities that can lie
on an optimal path (``_bounds.intervals``). Cells outside it are not updated;
they keep a value no larger than their true one (the row starts at zero where it
is read), which cannot change any cell on an optimal path nor a decision along
it: the cell an optimal value comes from is itself on an optimal path. Inside
those intervals a leaf's passes also skip the chunks that the row's own values
rule out (the gate, ``_dense_kernels.h``), by the same argument.

Ctrl-C: every loop counts its cells and, every ``irq.every`` of them, polls
Python's signal handlers (``_interrupt.pxd``) from the caller's thread only;
a handler that raises stops every thread at its next chunk, the kernel frees
its scratch and returns RK_INTERRUPTED, and the ``def`` raises the exception.
"""

import threading

import numpy as np

from libc.stdint cimport int64_t, uint8_t, uint64_t

from .._common._interrupt cimport CHECK_EVERY, interrupted, raise_pending
from . import _bounds

# Cells between two Ctrl-C checks in the Cython loops are counted per stretch
# of this many.
cdef enum:
    _SCAN_CHUNK = 65536

ctypedef fused real:
    float
    double


cdef extern from "_dense_kernels.h" nogil:
    ctypedef int (*rk_check_fn)() noexcept nogil
    ctypedef struct rk_interrupt:
        rk_check_fn check
        int64_t every
        int stop
    enum:
        RK_OK
        RK_NO_MEMORY
        RK_INTERRUPTED
    ctypedef struct rk_half:
        const int64_t* w
        const double* v
        int64_t n
        int64_t extra
        const int64_t* blo
        const int64_t* bhi
        void* dp
        int err
    bint rk_poll(rk_interrupt* irq)
    void rk_pair_f32(rk_half* half, int64_t c, int threads, rk_interrupt* irq)
    void rk_pair_f64(rk_half* half, int64_t c, int threads, rk_interrupt* irq)
    enum:
        RK_GATE_SHIFT
    ctypedef struct rk_gate:
        double thr
        int64_t blocks
        const int64_t* order
        int* map
        double* scratch
        int64_t skipped[2]
    int rk_profile_f32(const int64_t* w, const double* v, int64_t n, int64_t c,
                       int64_t extra, const int64_t* blo, const int64_t* bhi,
                       float* dp, uint64_t* bits, const int64_t* off, uint8_t* tail,
                       rk_gate* gate, int zeroed, int threads, rk_interrupt* irq, int may_check)
    int rk_profile_f64(const int64_t* w, const double* v, int64_t n, int64_t c,
                       int64_t extra, const int64_t* blo, const int64_t* bhi,
                       double* dp, uint64_t* bits, const int64_t* off, uint8_t* tail,
                       rk_gate* gate, int zeroed, int threads, rk_interrupt* irq, int may_check)


cdef int _check() noexcept nogil:
    return interrupted()


cdef rk_interrupt _interrupt():
    """Ctrl-C polling for one kernel call (see ``_interrupt.pxd``). Only the
    main thread polls: PyErr_CheckSignals does nothing on the others, and taking
    the GIL there would only slow concurrent solves down. A cell is up to 8
    bytes read and 8 written, and the first touch of a fresh page can cost
    microseconds, so the kernels poll every CHECK_EVERY / 8 cells: at most
    30-45 ms of CPU apart on fresh pages, as measured on a 2-core VM."""
    cdef rk_interrupt irq
    irq.check = NULL
    if threading.current_thread() is threading.main_thread():
        irq.check = _check
    irq.every = CHECK_EVERY // 8
    irq.stop = 0
    return irq


cdef int _raise_for(int err) except -1:
    """Turn a kernel's result code into the exception it stands for."""
    if err == RK_NO_MEMORY:
        raise MemoryError("scratch arrays for the DP pass")
    if err == RK_INTERRUPTED:
        raise_pending()  # the KeyboardInterrupt the signal handler set
        raise RuntimeError("internal error: a kernel stopped with no pending exception")
    return 0


cdef int _profile(const int64_t* w, const double* v, Py_ssize_t n, int64_t c,
                  int64_t extra, const int64_t* blo, const int64_t* bhi,
                  real* dp, uint64_t* bits, const int64_t* off,
                  uint8_t* tail, rk_gate* gate, bint zeroed, int threads,
                  rk_interrupt* irq, bint may_check) noexcept nogil:
    """One fused in-place pass per item: dp[b] = best value within capacity b.

    On return dp is valid for b in [max(0, c - extra), min(c, total weight)]
    (and inside the last item's interval when pruned); ``extra`` is the weight
    that may still be added after these items (the other half of a Hirschberg
    split), so smaller capacities cannot matter and are skipped. Capacities at
    or above the running weight P of the items seen so far hold their running
    total T: they are not touched until an item can miss them. With a
    ``gate`` (leaves only) that holds only for the chunks it lets through:
    skipped cells keep a value no larger than their true one, which the
    backtrack along the canonical path never reads.

    ``blo``/``bhi`` (or NULL): the capacities item i may update; then the
    cells the passes read are zeroed first. With ``bits`` (and ``off``,
    ``tail``; see :func:`leaf_layout`), a bit records that item i improved
    capacity b, and ``tail[i]`` that it improved the all-fit total; each item's
    bit row is zeroed by its own pass.
    ``threads`` = 2 runs the passes as a wavefront on two cores (see
    ``_dense_kernels.h``). ``irq``/``may_check``: Ctrl-C polling, from this
    call only if ``may_check`` (the caller's thread).
    Returns RK_OK, RK_NO_MEMORY or RK_INTERRUPTED.
    """
    if real is float:
        return rk_profile_f32(w, v, n, c, extra, blo, bhi, dp, bits, off, tail, gate, zeroed, threads, irq,
                              may_check)
    else:
        return rk_profile_f64(w, v, n, c, extra, blo, bhi, dp, bits, off, tail, gate, zeroed, threads, irq,
                              may_check)


def leaf_layout(const int64_t[::1] w, int64_t c, blo=None, bhi=None):
    """Bit-table layout of the leaf DP over items ``w`` with capacity ``c``.

    Item i needs bits only for capacities [lo_i, hi_i]: below c minus the
    weight still to come nothing can matter, from P_i (its running weight) on
    every item so far fits, and ``blo``/``bhi`` may narrow it further. Its row
    is the 64-bit words covering that range, starting at word ``off[i]``; the
    bit of capacity b is bit (b & 63) of word off[i] + (b >> 6) - (lo_i >> 6).
    Returns (lo, hi, off, total_words).
    """
    wa = np.asarray(w)
    after = np.cumsum(wa[::-1])[::-1] - wa
    lo = np.maximum(0, c - after)
    hi = np.minimum(c, np.cumsum(wa) - 1)
    if blo is not None:
        lo = np.maximum(lo, blo)
        hi = np.minimum(hi, bhi)
    words = np.where(hi >= lo, (hi >> 6) - (lo >> 6) + 1, 0)
    off = np.zeros(wa.shape[0], dtype=np.int64)
    if wa.shape[0] > 1:
        np.cumsum(words[:wa.shape[0] - 1], out=off[1:])
    return lo, hi, off, int(words.sum())


def leaf_bits(const int64_t[::1] w, int64_t c, blo=None, bhi=None):
    """Bits the leaf DP's table needs (see :func:`leaf_layout`)."""
    return 64 * leaf_layout(w, c, blo, bhi)[3]


#: A leaf gates its passes (see ``_dense_kernels.h``) up to this many items:
#: each item builds its LP lists in O(n).
GATE_MAX_ITEMS = 4096


def gate_bytes(Py_ssize_t n, int64_t c):
    """Bytes a gated leaf of n items allocates beyond its row and bit table:
    three block maps, two threads' LP lists, the ratio order and the ratios
    it is sorted from (and their negation, while sorting)."""
    return 3 * 4 * ((c >> RK_GATE_SHIFT) + 1) + 2 * 6 * 8 * (n + 1) + 3 * 8 * n


def leaf(const int64_t[::1] w, const double[::1] v, int64_t c, real[::1] row,
         uint8_t[::1] sel, scratch=None, blo=None, bhi=None, int threads=1,
         double threshold=-np.inf, bint zeroed=False):
    """Full-table DP with one decision bit per cell, then dp_knapsack's backtrack.

    Sets ``sel[i] = 1`` for the chosen items. ``row`` needs c + 1 cells. The
    bit table goes into ``scratch`` (a uint64 array) when it is large enough.
    ``blo``/``bhi`` restrict each item's pass (see the module docstring).
    ``threshold`` (with ``blo``/``bhi``, at most ``GATE_MAX_ITEMS`` items): a
    lower bound on the optimum less the rows' rounding; the passes then skip
    the chunks whose own values show no optimal path can use them (the gate,
    ``_dense_kernels.h``). ``zeroed``: ``row`` holds zeros (fresh from
    ``np.zeros``, whose pages the kernel maps only when they are touched), so
    it need not be cleared first. Returns the cells the gate skipped.
    Time O(n c), memory c + 1 cells plus one bit per (item, useful capacity),
    plus ``gate_bytes`` with a gate.
    Raises KeyboardInterrupt on Ctrl-C.
    """
    cdef Py_ssize_t n = w.shape[0], i
    if n == 0:
        return 0
    lo_a, hi_a, off_a, words = leaf_layout(w, c, blo, bhi)
    words += 1  # never empty; every item zeroes its own words
    if scratch is not None and scratch.shape[0] >= words:
        bits_a = scratch[:words]
    else:
        bits_a = np.empty(words, dtype=np.uint64)
    tail_a = np.zeros(n, dtype=np.uint8)
    run_a = np.cumsum(np.asarray(w))
    cdef const int64_t[::1] lo = lo_a, hi = hi_a, off = off_a, run = run_a
    cdef const int64_t[::1] bl, bh
    cdef const int64_t* blp = NULL
    cdef const int64_t* bhp = NULL
    if blo is not None:
        bl = blo
        bh = bhi
        blp = &bl[0]
        bhp = &bh[0]
    cdef rk_gate gate
    cdef rk_gate* gp = NULL
    cdef const int64_t[::1] order
    cdef int[::1] gate_map
    cdef double[::1] lists
    if blo is not None and threshold > -np.inf and n <= GATE_MAX_ITEMS:
        order_a = np.argsort(-(np.asarray(v) / np.asarray(w)), kind="stable").astype(np.int64, copy=False)
        order = order_a
        gate.blocks = (c >> RK_GATE_SHIFT) + 1
        gate_map = np.zeros(3 * gate.blocks, dtype=np.intc)
        lists = np.empty(2 * 6 * (n + 1))
        gate.thr = threshold
        gate.order = &order[0]
        gate.map = &gate_map[0]
        gate.scratch = &lists[0]
        gate.skipped[0] = gate.skipped[1] = 0
        gp = &gate
    cdef uint64_t[::1] bits = bits_a
    cdef uint8_t[::1] tail = tail_a
    cdef int64_t j = c, k
    cdef bint take, lost = False
    cdef int err
    cdef rk_interrupt irq = _interrupt()
    with nogil:
        err = _profile(&w[0], &v[0], n, c, 0, blp, bhp, &row[0], &bits[0], &off[0], &tail[0],
                       gp, zeroed, threads, &irq, True)
    _raise_for(err)
    with nogil:
        for i in range(n - 1, -1, -1):
            if j >= run[i]:
                take = tail[i]
            elif lo[i] <= j <= hi[i]:
                k = off[i] + (j >> 6) - (lo[i] >> 6)
                take = (bits[k] >> (j & 63)) & 1
            else:  # pruned: cannot happen with valid bounds
                lost = True
                break
            if take:
                sel[i] = 1
                j -= w[i]
    if lost:
        raise RuntimeError("internal error: the optimal path left the pruned capacities")
    return 0 if gp == NULL else gate.skipped[0] + gate.skipped[1]


def profile(const int64_t[::1] w, const double[::1] v, int64_t c, real[::1] row,
            int64_t extra=0, int threads=1):
    """Best value within every capacity (valid from ``c - extra`` up), in ``row``."""
    cdef int err
    cdef rk_interrupt irq = _interrupt()
    if w.shape[0] == 0:
        row[:c + 1] = 0
        return
    with nogil:
        err = _profile(&w[0], &v[0], w.shape[0], c, extra, NULL, NULL, &row[0], NULL, NULL, NULL,
                       NULL, False, threads, &irq, True)
    _raise_for(err)


cdef int _keyed_profile(const int64_t* w, const double* v, Py_ssize_t n,
                        Py_ssize_t key0, int64_t c, real* dp,
                        uint64_t* key, rk_interrupt* irq) noexcept nogil:
    """Full in-place DP over capacities [0, c] that also tracks, per capacity,
    which of the items key0 .. key0+63 its canonical set holds (one bit each).
    Returns RK_OK or RK_INTERRUPTED."""
    cdef int64_t b, bot, wi, work = 0
    cdef Py_ssize_t i
    cdef real vi, cand
    cdef uint64_t bit
    for b in range(c + 1):
        dp[b] = 0
        key[b] = 0
        work += 1
        if work == irq.every:
            work = 0
            if rk_poll(irq):
                return RK_INTERRUPTED
    for i in range(n):
        wi = w[i]
        vi = <real>v[i]
        bit = ((<uint64_t>1) << (i - key0)) if i >= key0 else 0
        b = c
        while b >= wi:
            bot = b - _SCAN_CHUNK + 1 if b - _SCAN_CHUNK + 1 > wi else wi
            work += b - bot + 1
            while b >= bot:
                cand = dp[b - wi] + vi
                if cand > dp[b]:
                    dp[b] = cand
                    key[b] = key[b - wi] | bit
                b -= 1
            if work >= irq.every:
                work = 0
                if rk_poll(irq):
                    return RK_INTERRUPTED
    return RK_OK


cdef int _best_split(const real* A, const real* B, int64_t cc, int64_t a_lo,
                     int64_t a_hi, double* best, int64_t* best_a,
                     Py_ssize_t* ties, rk_interrupt* irq) noexcept nogil:
    """The first a in [a_lo, a_hi] maximising A[a] + B[cc - a], that maximum
    and how many a reach it. Returns RK_OK or RK_INTERRUPTED."""
    cdef int64_t a = a_lo, top
    cdef double s
    best[0] = -1.0
    best_a[0] = a_lo
    ties[0] = 0
    while a <= a_hi:
        top = a + irq.every - 1 if a_hi - a >= irq.every else a_hi
        while a <= top:
            s = <double>A[a] + <double>B[cc - a]
            if s > best[0]:
                best[0] = s
                best_a[0] = a
                ties[0] = 1
            elif s == best[0]:
                ties[0] += 1
            a += 1
        if a <= a_hi and rk_poll(irq):
            return RK_INTERRUPTED
    return RK_OK


cdef void _pair(rk_half* half, int64_t c, int threads, rk_interrupt* irq,
                real* like) noexcept nogil:
    """Both profiles of a split, side by side (``rk_pair`` in the header);
    ``like`` only selects the row type."""
    if real is float:
        rk_pair_f32(half, c, threads, irq)
    else:
        rk_pair_f64(half, c, threads, irq)


def hirschberg(const int64_t[::1] w, const double[::1] v, int64_t c,
               real[::1] A, real[::1] B, uint8_t[::1] sel, int64_t leaf_max_bits,
               int threads, key_row, double lower_bound, double tol,
               int64_t prune_min_capacity, bint gate=True, bint zeroed=False):
    """Hirschberg's divide and conquer over two DP rows, exact and canonical.

    Sets ``sel[i] = 1`` for the items of the solution dp_knapsack's backtrack
    would return. ``A`` and ``B`` need c + 1 cells; a leaf keeps its values in
    ``A`` and its bit table in ``B``'s memory when it fits there (a larger one,
    up to ``leaf_max_bits``, gets its own array).
    ``key_row(size)`` returns a uint64 array of that size and is only called on
    ties across a split. ``lower_bound`` is a feasible value (greedy's); frames
    whose capacity is at least ``prune_min_capacity`` restrict their passes to the
    capacities whose LP bound reaches the frame's lower bound minus ``tol``,
    and their leaves gate their passes by the row's own values (unless
    ``gate`` is False; see ``leaf``). ``zeroed``: ``A`` holds zeros (from
    ``np.zeros``) until its first pass.
    Returns counters. Raises KeyboardInterrupt on Ctrl-C.

    A frame (l, r, c) is split at m; the left profile F and the right profile G
    are computed in place, one per thread, and the best split capacity is
    argmax_a F[a] + G[c - a]. The right half is solved first and the left half
    then gets exactly the capacity the right one left unused, which is what the
    full table's backtrack (from the last item down) would leave it. When several
    splits reach the optimum, the right half's candidate sets are compared
    lexicographically from the top item down (64 items per pass of
    ``_keyed_profile``) so the choice is still the canonical one.
    """
    cdef Py_ssize_t n = w.shape[0]
    cdef Py_ssize_t l, r, m, rr, i
    cdef int64_t cc, WL, WR, a_lo, a_hi, best_a, used
    cdef double best, lb
    cdef Py_ssize_t ties
    cdef int err
    cdef int64_t[::1] pre
    cdef const int64_t[::1] bl, bh, gl, gh
    cdef rk_half half[2]
    cdef rk_interrupt irq = _interrupt()
    pre_a = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.asarray(w), out=pre_a[1:])
    pre = pre_a
    stats = {"frames": 0, "leaves": 0, "tie_splits": 0, "key_passes": 0, "pruned_passes": 0, "gated_cells": 0}
    scratch = np.asarray(B).view(np.uint64)
    stack = [(0, n, c, -1, lower_bound)]
    while stack:
        if rk_poll(&irq):
            _raise_for(RK_INTERRUPTED)
        l, r, cc, rr, lb = stack.pop()
        if rr >= 0:  # a left half: it gets what the solved right half [r, rr) left
            used = 0
            for i in range(r, rr):
                if sel[i]:
                    used += w[i]
            cc -= used
        stats["frames"] += 1
        if r <= l or cc <= 0:
            continue
        if pre[r] - pre[l] <= cc:
            for i in range(l, r):
                sel[i] = 1
            continue
        if r - l == 1:
            continue
        prune = cc >= prune_min_capacity and lb > 0
        if prune:
            stats["pruned_passes"] += 1
            fl, fh = _bounds.intervals(w[l:r], v[l:r], np.arange(r - l), cc, lb - tol)
            if leaf_bits(w[l:r], cc, fl, fh) <= leaf_max_bits:
                stats["leaves"] += 1
                stats["gated_cells"] += leaf(w[l:r], v[l:r], cc, A, sel[l:r], scratch, fl, fh, threads,
                                             lb - tol if gate else -np.inf, zeroed)
                zeroed = False
                continue
        elif leaf_bits(w[l:r], cc) <= leaf_max_bits:
            stats["leaves"] += 1
            leaf(w[l:r], v[l:r], cc, A, sel[l:r], scratch, None, None, threads)
            zeroed = False
            continue
        m = (l + r) // 2
        WL = pre[m] - pre[l]
        WR = pre[r] - pre[m]
        a_lo = cc - WR if cc > WR else 0
        a_hi = WL if WL < cc else cc
        half[0] = rk_half(&w[l], &v[l], m - l, WR, NULL, NULL, &A[0], RK_OK)
        half[1] = rk_half(&w[m], &v[m], r - m, WL, NULL, NULL, &B[0], RK_OK)
        if prune:
            bl = fl[:m - l]
            bh = fh[:m - l]
            gl_a, gh_a = _bounds.intervals(w[l:r], v[l:r], np.arange(m - l, r - l), cc, lb - tol)
            gl = gl_a
            gh = gh_a
            half[0].blo, half[0].bhi, half[1].blo, half[1].bhi = &bl[0], &bh[0], &gl[0], &gh[0]
            # Only split capacities inside both last intervals can be optimal.
            a_lo = max(a_lo, bl[m - l - 1], cc - gh[r - m - 1])
            a_hi = min(a_hi, bh[m - l - 1], cc - gl[r - m - 1])
        zeroed = False
        with nogil:
            _pair(half, cc, threads, &irq, &A[0])
        for err in (half[0].err, half[1].err):
            if err == RK_INTERRUPTED:
                _raise_for(err)
        _raise_for(half[0].err or half[1].err)
        with nogil:
            err = _best_split(&A[0], &B[0], cc, a_lo, a_hi, &best, &best_a, &ties, &irq)
        _raise_for(err)
        if ties == 0:
            raise RuntimeError("internal error: no split capacity passed the bounds")
        stack.append((l, m, cc, r, <double>A[best_a]))  # the left half, after the right one
        if ties == 1:
            stack.append((m, r, cc - best_a, -1, <double>B[cc - best_a]))
            continue
        stats["tie_splits"] += 1
        _break_tie(w, v, m, r, cc, a_lo, a_hi, best, A, B, sel, key_row, stack, stats, &irq)
    return stats


cdef _break_tie(const int64_t[::1] w, const double[::1] v, Py_ssize_t m,
                Py_ssize_t r, int64_t cc, int64_t a_lo, int64_t a_hi, double best,
                real[::1] A, real[::1] B, uint8_t[::1] sel, key_row, list stack,
                dict stats, rk_interrupt* irq):
    """Several split capacities reach the optimum: pick the canonical one.

    Every candidate b (right capacity) gives the right half the canonical set
    C(b); the backtrack of the full table ends in the lexicographically least
    of them, read from the top item down. Among candidates whose G[b] is equal
    the largest b is least, so only those are kept; then each pass over the
    right half fixes the membership of its top 64 undecided items.
    """
    cdef int64_t a, b, wsum, bmax
    cdef Py_ssize_t top, k0, i
    cdef uint64_t kmin
    cdef uint64_t[::1] key
    cdef int err
    cands = []
    prev_g = None
    for a in range(a_hi, a_lo - 1, -1):  # b ascending
        if (a_hi - a) % irq.every == irq.every - 1 and rk_poll(irq):
            _raise_for(RK_INTERRUPTED)
        if <double>A[a] + <double>B[cc - a] == best:
            g = B[cc - a]
            if cands and g == prev_g:
                cands[len(cands) - 1] = cc - a
            else:
                cands.append(cc - a)
            prev_g = g
    top = r
    while len(cands) > 1 and top > m:
        stats["key_passes"] += 1
        k0 = top - 64 if top - 64 > m else m
        bmax = max(cands)
        key_a = key_row(bmax + 1)
        key = key_a
        with nogil:
            err = _keyed_profile(&w[m], &v[m], top - m, k0 - m, bmax, &B[0], &key[0], irq)
        _raise_for(err)
        b = cands[0]
        kmin = key[b]
        for b in cands:
            if key[b] < kmin:
                kmin = key[b]
        wsum = 0
        for i in range(k0, top):
            if (kmin >> (i - k0)) & 1:
                sel[i] = 1
                wsum += w[i]
        kept = []
        for b in cands:
            if key[b] == kmin:
                kept.append(b - wsum)
        cands = kept
        top = k0
    if top > m:
        stack.append((m, top, cands[0], -1, 0.0))
