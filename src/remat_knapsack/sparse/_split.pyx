# cython: language_level=3
"""The split around the break item and the core it leaves, each in one compiled call.

Private; ``_core.split_at_break`` and ``_core.core_of_split`` are its Python
face and hold the algorithm's description. Each function here makes a few
O(n) passes over the items (classify and sum, gather, greedy fill, fix) and
sorts only what the algorithm sorts: the sample, the items between the
thresholds, and the low items that may join the greedy set (through
``_order.descending``). numpy's masks and fancy indexing made the same passes
one temporary array at a time: 0.25 ms at n = 10^4 where these take a
fraction of it (``benchmarks/bench_easy.py``).

The GIL is released in the passes.

>>> import numpy as np
>>> w = np.array([10.0, 10.0, 10.0, 10.0] * 8)
>>> v = np.array([30.0, 11.0, 10.0, 1.0] * 8)
>>> top, mid, low, b = split(w, v / w, 150.0, 1024, 1 / 16)
>>> b, float(v[mid[b]])  # eight items worth 30 and seven worth 11 fill 150: the break is the eighth 11
(15, 11.0)
"""

import numpy as np

from libc.math cimport INFINITY

from ._fixing import fix_by_bound
from ._order import descending


cdef inline double _weight_if_above(const double* w, const double* eff, Py_ssize_t i, double hi, double lo,
                                    Py_ssize_t* above, Py_ssize_t* below) noexcept nogil:
    """Item i's weight if its efficiency is above ``hi`` (else 0), counted
    into ``above``, or into ``below`` when it is below ``lo``."""
    cdef int up = eff[i] > hi
    above[0] += up
    below[0] += eff[i] < lo
    return w[i] * up


cdef double _weight_above(const double* w, const double* eff, Py_ssize_t n, double hi,
                          double lo, Py_ssize_t* counts) noexcept nogil:
    """The weight of the items with efficiency above ``hi``; ``counts`` gets
    how many are above ``hi``, between the two, and below ``lo``.
    Branch-free (flags as 0/1 numbers): on random efficiencies a branch per
    item mispredicts often, and this pass took twice as long with one. The
    weight in four parts whose additions overlap (integer weights with an
    exact total: any order gives it)."""
    cdef Py_ssize_t i = 0, above = 0, below = 0
    cdef double t0 = 0.0, t1 = 0.0, t2 = 0.0, t3 = 0.0
    while i + 4 <= n:
        t0 += _weight_if_above(w, eff, i, hi, lo, &above, &below)
        t1 += _weight_if_above(w, eff, i + 1, hi, lo, &above, &below)
        t2 += _weight_if_above(w, eff, i + 2, hi, lo, &above, &below)
        t3 += _weight_if_above(w, eff, i + 3, hi, lo, &above, &below)
        i += 4
    while i < n:
        t0 += _weight_if_above(w, eff, i, hi, lo, &above, &below)
        i += 1
    counts[0], counts[1], counts[2] = above, n - above - below, below
    return (t0 + t1) + (t2 + t3)


cdef double _weight_sum(const double* w, Py_ssize_t n) noexcept nogil:
    """w[0] + ... + w[n - 1] in four parts whose additions overlap (integer
    weights with an exact total: any order gives it)."""
    cdef Py_ssize_t i = 0
    cdef double t0 = 0.0, t1 = 0.0, t2 = 0.0, t3 = 0.0
    while i + 4 <= n:
        t0 += w[i]
        t1 += w[i + 1]
        t2 += w[i + 2]
        t3 += w[i + 3]
        i += 4
    while i < n:
        t0 += w[i]
        i += 1
    return (t0 + t1) + (t2 + t3)


cdef void _pieces(const double* eff, Py_ssize_t n, double hi, double lo, Py_ssize_t* top,
                  Py_ssize_t* mid, Py_ssize_t* low) noexcept nogil:
    """The positions above ``hi``, between, and below ``lo``, each ascending.
    Branch-free: every position is written to all three arrays and kept by
    the one whose count it advances, so each holds one slot more than its
    count."""
    cdef Py_ssize_t i, a = 0, m = 0, z = 0
    cdef int up, down
    for i in range(n):
        up = eff[i] > hi
        down = eff[i] < lo  # never both: lo <= hi
        top[a] = i
        mid[m] = i
        low[z] = i
        a += up
        z += down
        m += 1 - up - down


cdef Py_ssize_t _break_count(const double* w, const Py_ssize_t* items, Py_ssize_t m, double room) noexcept nogil:
    """How many of ``items`` (in order) fit ``room`` one after the other
    before the first that does not: m when all do."""
    cdef Py_ssize_t q
    cdef double used = 0.0
    for q in range(m):
        used += w[items[q]]
        if used > room:
            return q
    return m


def break_position(const double[::1] w, const Py_ssize_t[::1] order, double c):
    """How many of the items ``order`` (positions into ``w``, in that order)
    fit ``c`` one after the other before the first that does not: the
    break item is ``order[b]`` (b = len(order) when all fit). One pass,
    without gathering the weights."""
    cdef Py_ssize_t m = order.shape[0], n = w.shape[0], q, i
    cdef double used = 0.0
    for q in range(m):  # the items read are checked: up to the break
        i = order[q]
        if not 0 <= i < n:
            raise ValueError(f"break_position: order[{q}] = {i} is not a position of {n} weights")
        used += w[i]
        if used > c:
            return q
    return m


def split(const double[::1] w, const double[::1] eff, double c, Py_ssize_t sample, double margin):
    """(top, mid, low, b) of ``_core.Split``, or None when two tries at the
    thresholds and the whole range all miss the break item (the items then
    weigh at most c). ``sample`` efficiencies are taken at evenly spaced
    positions, the thresholds ``margin`` (then 4 ``margin``, then all) of
    the sample either side of where its scaled weight crosses c."""
    cdef Py_ssize_t n = w.shape[0], m, step, i, j, g, attempt, b
    cdef Py_ssize_t counts[3]
    cdef double total = 0.0, s_total = 0.0, scale, hi, lo, room, run
    if eff.shape[0] != n:
        raise ValueError(f"split: {n} weights but {eff.shape[0]} efficiencies")
    if sample < 1:
        raise ValueError(f"split: sample must be at least 1, got {sample}")
    if n == 0:
        return None
    m = min(n, sample)
    step = n // m
    s_eff_a = np.empty(m)
    cdef double[::1] s_eff = s_eff_a
    cdef double[::1] s_w = np.empty(m)
    with nogil:
        total = _weight_sum(&w[0], n)
        for i in range(m):
            s_eff[i] = eff[i * step]
            s_w[i] = w[i * step]
            s_total += s_w[i]
    cdef Py_ssize_t[::1] so = descending(s_eff_a)
    scale = total / s_total
    with nogil:  # the sample's estimate of the prefix weight crosses c after j of its items
        run = 0.0
        j = m
        for i in range(m):
            run += s_w[so[i]]
            if run * scale > c:
                j = i
                break
    cdef Py_ssize_t[::1] top, mid, low
    for attempt in range(3):
        g = max(16, <Py_ssize_t>((margin if attempt == 0 else 4 * margin) * m)) if attempt < 2 else m
        hi = s_eff[so[j - g]] if j - g >= 0 else INFINITY
        lo = s_eff[so[j + g]] if j + g < m else -INFINITY
        with nogil:
            room = c - _weight_above(&w[0], &eff[0], n, hi, lo, counts)
        if room < 0 or counts[1] == 0:
            continue
        top_a, mid_a, low_a = (np.empty(counts[0] + 1, np.intp), np.empty(counts[1] + 1, np.intp),
                               np.empty(counts[2] + 1, np.intp))
        top, mid, low = top_a, mid_a, low_a
        with nogil:
            _pieces(&eff[0], n, hi, lo, &top[0], &mid[0], &low[0])
        top_a, low_a = top_a[:counts[0]], low_a[:counts[2]]
        mid_a = mid_a[:counts[1]]
        mid_a = mid_a[descending(np.asarray(eff)[mid_a])]
        mid = mid_a
        with nogil:
            b = _break_count(&w[0], &mid[0], counts[1], room)
        if b < counts[1]:
            return top_a, mid_a, low_a, b
    return None


cdef double _greedy(const double* w, const double* v, const Py_ssize_t* items, Py_ssize_t m,
                    double* room) noexcept nogil:
    """Every item of ``items`` (in order) that still fits ``room`` taken, one
    after the other: their value (summed in order), ``room`` reduced."""
    cdef Py_ssize_t q
    cdef double added = 0.0
    for q in range(m):
        if w[items[q]] <= room[0]:
            room[0] -= w[items[q]]
            added += v[items[q]]
    return added


cdef void _sums_at(const double* w, const double* v, const Py_ssize_t* items, Py_ssize_t m,
                   double* weight, double* value) noexcept nogil:
    """Add the weights and the values of ``items`` to ``weight`` and ``value``,
    each summed in two parts (items q and q + 1 of each step) added at the
    end: the additions overlap instead of waiting on each other. The weights
    are integers with an exact total (any order gives it); the value is the
    greedy set's, whose use allows for the rounding of any order."""
    cdef Py_ssize_t q = 0
    cdef double sw0 = 0.0, sw1 = 0.0, sv0 = 0.0, sv1 = 0.0
    while q + 2 <= m:
        sw0 += w[items[q]]
        sv0 += v[items[q]]
        sw1 += w[items[q + 1]]
        sv1 += v[items[q + 1]]
        q += 2
    if q < m:
        sw0 += w[items[q]]
        sv0 += v[items[q]]
    weight[0] += sw0 + sw1
    value[0] += sv0 + sv1


cdef Py_ssize_t _fitting(const double* w, const Py_ssize_t* items, Py_ssize_t m, double room,
                         Py_ssize_t* out) noexcept nogil:
    """The items (in order) of weight at most ``room`` into ``out`` (may be
    ``items`` itself); returns how many."""
    cdef Py_ssize_t q, k = 0
    for q in range(m):
        if w[items[q]] <= room:
            out[k] = items[q]
            k += 1
    return k


cdef Py_ssize_t _free_and_fixed(const double* w, const unsigned char* fix_in, const unsigned char* fix_out,
                                Py_ssize_t n, Py_ssize_t* free, Py_ssize_t* fixed, Py_ssize_t* nfixed,
                                double* fixed_weight) noexcept nogil:
    """Positions neither bound fixes into ``free`` and those fixed in into
    ``fixed`` (ascending; each holds one slot more than its count, as in
    ``_pieces``); returns how many are free."""
    cdef Py_ssize_t i, nf = 0, nin = 0
    cdef double used = 0.0
    cdef int taken
    for i in range(n):
        taken = fix_in[i] != 0
        fixed[nin] = i
        free[nf] = i
        nin += taken
        used += w[i] * taken
        nf += (1 - taken) * (fix_out[i] == 0)
    nfixed[0], fixed_weight[0] = nin, used
    return nf


cdef bint _none_marked(const unsigned char* fix_in, const unsigned char* fix_out, Py_ssize_t n) noexcept nogil:
    """Whether the bound marked no item either way (a loose core): one
    OR over both arrays, without a branch an item."""
    cdef Py_ssize_t i
    cdef unsigned char marked = 0
    for i in range(n):
        marked |= fix_in[i] | fix_out[i]
    return marked == 0


cdef void _efficiencies(const double* w, const double* v, const Py_ssize_t* items, Py_ssize_t m,
                        double* out) noexcept nogil:
    """v / w of ``items`` into ``out`` (the same division as the caller's ``v / w``)."""
    cdef Py_ssize_t q
    for q in range(m):
        out[q] = v[items[q]] / w[items[q]]


def _by_efficiency(const double[::1] w, const double[::1] v, items_a):
    """``items`` (positions) by descending v / w, ties by position."""
    cdef const Py_ssize_t[::1] items = items_a
    cdef Py_ssize_t m = items.shape[0]
    key_a = np.empty(m)
    cdef double[::1] key = key_a
    if m:
        with nogil:
            _efficiencies(&w[0], &v[0], &items[0], m, &key[0])
    return items_a[descending(key_a)]


def core(const double[::1] w, const double[::1] v, double c, const Py_ssize_t[::1] top,
         const Py_ssize_t[::1] mid, Py_ssize_t b, low_a, bint low_sorted, double thr_slack, double rel):
    """(free items, fixed-in items, the capacity those leave, ``low`` in
    efficiency order or None if this call did not sort it) of
    ``_core.core_of_split``: the break solution ``top`` and ``mid[:b]``
    completed greedily through ``mid[b:]`` and the ``low`` items that still
    fit, sorted; Dantzig's bound at ``mid[b]`` against that value less
    ``thr_slack`` (the tolerance), with the rounding allowance ``rel``."""
    cdef Py_ssize_t n = w.shape[0], nlow = len(low_a), nfit = 0, nfree, nfixed = 0, brk
    cdef Py_ssize_t ntop = top.shape[0]
    if v.shape[0] != n:
        raise ValueError(f"core: {n} weights but {v.shape[0]} values")
    if not 0 <= b < mid.shape[0]:
        raise ValueError(f"core: the break position {b} is not in mid (of {mid.shape[0]} items)")
    brk = mid[b]
    cdef double room, added, used = 0.0, base = 0.0, fixed_weight = 0.0
    cdef const Py_ssize_t* tp = &top[0] if ntop else NULL
    cdef const Py_ssize_t[::1] low = low_a
    fit_a = np.empty(nlow, np.intp)
    cdef Py_ssize_t[::1] fit = fit_a
    with nogil:
        _sums_at(&w[0], &v[0], tp, ntop, &used, &base)
        _sums_at(&w[0], &v[0], &mid[0], b, &used, &base)
        room = c - used  # integer weights: exact
        added = _greedy(&w[0], &v[0], &mid[b], mid.shape[0] - b, &room)
        if nlow:
            nfit = _fitting(&w[0], &low[0], nlow, room, &fit[0])
    sorted_low = None
    if nlow and not low_sorted and 2 * nfit >= nlow:
        # Most of them fit: sort them all, once (the full order, if needed, reuses it).
        sorted_low = _by_efficiency(w, v, low_a)
        low = sorted_low
        with nogil:
            nfit = _fitting(&w[0], &low[0], nlow, room, &fit[0])
    elif nfit and not low_sorted:
        fit = _by_efficiency(w, v, fit_a[:nfit])
    if nfit:
        with nogil:
            added += _greedy(&w[0], &v[0], &fit[0], nfit, &room)
    # Sums of n terms are within n 2**-53 of their magnitude: the value stays reachable.
    lower = (base + added) * (1.0 - n * 2.0**-52)
    fix_in_a, fix_out_a = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    fix_by_bound(w, v, c, v[brk] / w[brk], 0.0, 0.0, rel, lower - thr_slack, fix_in_a, fix_out_a, None)
    cdef const unsigned char[::1] fix_in = fix_in_a
    cdef const unsigned char[::1] fix_out = fix_out_a
    cdef bint none
    with nogil:
        none = _none_marked(&fix_in[0], &fix_out[0], n)
    if none:  # every item free: no pass to sort them out
        return np.arange(n, dtype=np.intp), np.empty(0, np.intp), c, sorted_low
    free_a, fixed_a = np.empty(n + 1, np.intp), np.empty(n + 1, np.intp)
    cdef Py_ssize_t[::1] free = free_a
    cdef Py_ssize_t[::1] fixed = fixed_a
    with nogil:
        nfree = _free_and_fixed(&w[0], &fix_in[0], &fix_out[0], n, &free[0], &fixed[0], &nfixed, &fixed_weight)
    return free_a[:nfree], fixed_a[:nfixed], c - fixed_weight, sorted_low
