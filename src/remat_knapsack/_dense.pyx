# cython: language_level=3
"""Compiled kernels of the dense solvers: DP rows indexed by capacity.

Private. ``remat_knapsack.dense`` validates the inputs, checks memory and calls
these. Every item here has an int64 weight with 1 <= w <= capacity and a value
> 0 (``active_items`` has decided the others), in ascending original index.

Row semantics: ``row[b]`` is the best value of a set of the items whose weight
is at most ``b``. Item i *improves* capacity b when ``row[b - w] + v`` is
strictly greater than ``row[b]``; keeping an item only then is PyTorch's
``dp_knapsack`` backtracking rule (leave item i out whenever the optimum stays
reachable without it).
"""

import numpy as np

from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint8_t, uint64_t

ctypedef fused real:
    float
    double


cdef void _profile(const int64_t* w, const double* v, Py_ssize_t n, int64_t c,
                   int64_t extra, real* dp, uint64_t* bits, const int64_t* off,
                   uint8_t* tail) noexcept nogil:
    """One fused in-place pass per item: dp[b] = best value within capacity b.

    On return dp is valid for b in [max(0, c - extra), c]; ``extra`` is the
    weight that may still be added after these items (the other half of a
    Hirschberg split), so smaller capacities cannot matter and are skipped.
    Capacities at or above the running weight P of the items seen so far hold
    their running total T: they are not touched until an item can miss them.

    With ``bits`` (and ``off``, ``tail``), bit ``off[i] + b - lo_i`` records
    that item i improved capacity b, and ``tail[i]`` that it improved the
    all-fit total. No initialisation of dp is needed.
    """
    cdef int64_t rem = 0, P = 0, lo, hi, b, bot, wi
    cdef int64_t k
    cdef real T = 0, Tn, vi, cand
    cdef Py_ssize_t i
    for i in range(n):
        rem += w[i]
    for i in range(n):
        wi = w[i]
        vi = <real>v[i]
        rem -= wi
        lo = c - rem - extra
        if lo < 0:
            lo = 0
        hi = P + wi - 1
        if hi > c:
            hi = c
        # Capacities in [P, hi] held T before this item; below wi it cannot fit.
        bot = P if P > lo else lo
        b = hi
        while b >= bot:
            if b >= wi and dp[b - wi] + vi > T:
                dp[b] = dp[b - wi] + vi
                if bits != NULL:
                    k = off[i] + b - lo
                    bits[k >> 6] |= (<uint64_t>1) << (k & 63)
            else:
                dp[b] = T
            b -= 1
        # Capacities in [max(lo, wi), P - 1]: the textbook update, in place.
        b = P - 1
        if b > c:
            b = c
        bot = lo if lo > wi else wi
        if bits == NULL:
            while b >= bot:
                cand = dp[b - wi] + vi
                dp[b] = cand if cand > dp[b] else dp[b]
                b -= 1
        else:
            while b >= bot:
                cand = dp[b - wi] + vi
                if cand > dp[b]:
                    dp[b] = cand
                    k = off[i] + b - lo
                    bits[k >> 6] |= (<uint64_t>1) << (k & 63)
                b -= 1
        Tn = T + vi
        if tail != NULL:
            tail[i] = Tn > T
        T = Tn
        P += wi
    lo = c - extra
    if lo < 0:
        lo = 0
    b = P if P > lo else lo
    while b <= c:
        dp[b] = T
        b += 1


def leaf_layout(const int64_t[::1] w, int64_t c):
    """Bit-table layout of the leaf DP over items ``w`` with capacity ``c``.

    Item i needs bits only for capacities [lo_i, hi_i]: below lo_i = c minus the
    weight still to come nothing can matter, from hi_i = P_i (its running
    weight) on every item so far fits. Returns (lo, hi, off, total_bits).
    """
    wa = np.asarray(w)
    after = np.cumsum(wa[::-1])[::-1] - wa
    lo = np.maximum(0, c - after)
    hi = np.minimum(c, np.cumsum(wa) - 1)
    width = np.maximum(0, hi - lo + 1)
    off = np.zeros(wa.shape[0], dtype=np.int64)
    if wa.shape[0] > 1:
        np.cumsum(width[:-1], out=off[1:])
    return lo, hi, off, int(width.sum())


def leaf_bits(const int64_t[::1] w, int64_t c):
    """Bits the leaf DP's table needs (see :func:`leaf_layout`)."""
    return leaf_layout(w, c)[3]


def leaf(const int64_t[::1] w, const double[::1] v, int64_t c, real[::1] row,
         uint8_t[::1] sel):
    """Full-table DP with one decision bit per cell, then dp_knapsack's backtrack.

    Sets ``sel[i] = 1`` for the chosen items. ``row`` needs c + 1 cells.
    Time O(n c), memory c + 1 cells plus one bit per (item, useful capacity).
    """
    cdef Py_ssize_t n = w.shape[0], i
    if n == 0:
        return
    lo_a, hi_a, off_a, total = leaf_layout(w, c)
    bits_a = np.zeros((total + 63) // 64 + 1, dtype=np.uint64)
    tail_a = np.zeros(n, dtype=np.uint8)
    cdef const int64_t[::1] lo = lo_a, hi = hi_a, off = off_a
    cdef uint64_t[::1] bits = bits_a
    cdef uint8_t[::1] tail = tail_a
    cdef int64_t j = c, k
    cdef bint take
    with nogil:
        _profile(&w[0], &v[0], n, c, 0, &row[0], &bits[0], &off[0], &tail[0])
        for i in range(n - 1, -1, -1):
            if j > hi[i]:
                take = tail[i]
            else:
                k = off[i] + j - lo[i]
                take = (bits[k >> 6] >> (k & 63)) & 1
            if take:
                sel[i] = 1
                j -= w[i]


def profile(const int64_t[::1] w, const double[::1] v, int64_t c, real[::1] row,
            int64_t extra=0):
    """Best value within every capacity (valid from ``c - extra`` up), in ``row``."""
    if w.shape[0] == 0:
        row[:c + 1] = 0
        return
    with nogil:
        _profile(&w[0], &v[0], w.shape[0], c, extra, &row[0], NULL, NULL, NULL)


cdef void _keyed_profile(const int64_t* w, const double* v, Py_ssize_t n,
                         Py_ssize_t key0, int64_t c, real* dp,
                         uint64_t* key) noexcept nogil:
    """Full in-place DP over capacities [0, c] that also tracks, per capacity,
    which of the items key0 .. key0+63 its canonical set holds (one bit each)."""
    cdef int64_t b, wi
    cdef Py_ssize_t i
    cdef real vi, cand
    cdef uint64_t bit
    for b in range(c + 1):
        dp[b] = 0
        key[b] = 0
    for i in range(n):
        wi = w[i]
        vi = <real>v[i]
        bit = ((<uint64_t>1) << (i - key0)) if i >= key0 else 0
        b = c
        while b >= wi:
            cand = dp[b - wi] + vi
            if cand > dp[b]:
                dp[b] = cand
                key[b] = key[b - wi] | bit
            b -= 1


def hirschberg(const int64_t[::1] w, const double[::1] v, int64_t c,
               real[::1] A, real[::1] B, uint8_t[::1] sel, int64_t leaf_max_bits,
               int threads, key_row):
    """Hirschberg's divide and conquer over two DP rows, exact and canonical.

    Sets ``sel[i] = 1`` for the items of the solution dp_knapsack's backtrack
    would return. ``A`` and ``B`` need c + 1 cells; ``key_row(size)`` returns a
    uint64 array of that size and is only called on ties across a split.
    Returns a dict of counters.

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
    cdef Py_ssize_t l, r, m, rr, h, i
    cdef int64_t cc, WL, WR, a, a_lo, a_hi, best_a, used
    cdef double s, best
    cdef Py_ssize_t ties
    cdef int64_t[::1] pre
    pre_a = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.asarray(w), out=pre_a[1:])
    pre = pre_a
    stats = {"frames": 0, "leaves": 0, "tie_splits": 0, "key_passes": 0}
    stack = [(0, n, c, -1)]
    while stack:
        l, r, cc, rr = stack.pop()
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
        if r - l <= 2 or leaf_bits(w[l:r], cc) <= leaf_max_bits:
            stats["leaves"] += 1
            leaf(w[l:r], v[l:r], cc, A, sel[l:r])
            continue
        m = (l + r) // 2
        WL = pre[m] - pre[l]
        WR = pre[r] - pre[m]
        with nogil:
            for h in prange(2, num_threads=threads, schedule="static"):
                if h == 0:
                    _profile(&w[l], &v[l], m - l, cc, WR, &A[0], NULL, NULL, NULL)
                else:
                    _profile(&w[m], &v[m], r - m, cc, WL, &B[0], NULL, NULL, NULL)
            a_lo = cc - WR if cc > WR else 0
            a_hi = WL if WL < cc else cc
            best = -1.0
            best_a = a_lo
            ties = 0
            for a in range(a_lo, a_hi + 1):
                s = <double>A[a] + <double>B[cc - a]
                if s > best:
                    best = s
                    best_a = a
                    ties = 1
                elif s == best:
                    ties += 1
        stack.append((l, m, cc, r))  # the left half, after the right one
        if ties == 1:
            stack.append((m, r, cc - best_a, -1))
            continue
        stats["tie_splits"] += 1
        _break_tie(w, v, m, r, cc, a_lo, a_hi, best, A, B, sel, key_row, stack, stats)
    return stats


cdef _break_tie(const int64_t[::1] w, const double[::1] v, Py_ssize_t m,
                Py_ssize_t r, int64_t cc, int64_t a_lo, int64_t a_hi, double best,
                real[::1] A, real[::1] B, uint8_t[::1] sel, key_row, list stack,
                dict stats):
    """Several split capacities reach the optimum: pick the canonical one.

    Every candidate b (right capacity) gives the right half the canonical set
    C(b); the backtrack of the full table ends in the lexicographically least
    of them, read from the top item down. Among candidates whose G[b] is equal
    the largest b is least, so only those are kept; then each pass over the
    right half fixes the membership of its top 64 undecided items.
    """
    cdef int64_t a, b, wsum, bmax
    cdef Py_ssize_t top, k0, i
    cdef uint64_t kmin, kb
    cdef uint64_t[::1] key
    cands = []
    prev_g = None
    for a in range(a_hi, a_lo - 1, -1):  # b ascending
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
            _keyed_profile(&w[m], &v[m], top - m, k0 - m, bmax, &B[0], &key[0])
        kmin = key[cands[0]]
        for b in cands:
            if key[b] < kmin:
                kmin = key[b]
        wsum = 0
        for i in range(k0, top):
            if (kmin >> (i - k0)) & 1:
                sel[i] = 1
                wsum += w[i]
        cands = [b - wsum for b in cands if key[b] == kmin]
        top = k0
    if top > m:
        stack.append((m, top, cands[0], -1))
