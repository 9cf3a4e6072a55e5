# cython: language_level=3
"""Linear-time stand-ins for full sorts of the sparse solver.

``lightest_count``: how many of the lightest items fit a capacity (the most
items any set can hold, ``kmax``), by counting the items of each weight when
the weights are small integers, else by counting and summing buckets of the
weight range and selecting within the one bucket that crosses the capacity
(expected O(n); a sort and a prefix sum before). ``lightest_k``: the
weight of the k lightest items and the k-th and (k+1)-th weights (a count's
swap window, ``_count_window.pxd``), by the same quickselect; ``kth_largest``
likewise, in place on the caller's scratch (the count multiplier mu, ``_fit``). ``group_ids``: which items
are identical (same weight and value), by open-addressing hashing (expected
O(n), a cache miss an item): the canonical pass's fallback when one pass
over the weight order cannot tell (a run of equal weights mixes values). They
replace O(n log n) work that cost 2-8 ms at 10^5 items (docs/algorithms.md).
"""

from libc.math cimport INFINITY, floor
from libc.stdint cimport uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy, memset


cdef inline void _three_way(double* a, Py_ssize_t lo, Py_ssize_t hi, double p,
                            Py_ssize_t* lt, Py_ssize_t* gt, double* below) noexcept nogil:
    """Partition a[lo:hi] into < p, == p, > p (Dijkstra's three colours): on
    return a[lo:lt] < p, a[lt:gt] == p, a[gt:hi] > p; ``below`` = sum of a[lo:lt]."""
    cdef Py_ssize_t i = lo, left = lo, g = hi
    cdef double x, s = 0
    while i < g:
        x = a[i]
        if x < p:
            a[i] = a[left]
            a[left] = x
            s += x
            left += 1
            i += 1
        elif x > p:
            g -= 1
            a[i] = a[g]
            a[g] = x
        else:
            i += 1
    lt[0] = left
    gt[0] = g
    below[0] = s


cdef inline double _median3(double x, double y, double z) noexcept nogil:
    if x > y:
        x, y = y, x
    if y > z:
        y = z
    return x if x > y else y


cdef inline uint64_t _mix(uint64_t x) noexcept nogil:
    """A 64-bit finaliser (MurmurHash3's fmix64): spreads the bits of x."""
    x ^= x >> 33
    x *= <uint64_t>0xff51afd7ed558ccd
    x ^= x >> 33
    x *= <uint64_t>0xc4ceb9fe1a85ec53
    x ^= x >> 33
    return x


cdef inline double _pivot(const double* a, Py_ssize_t lo, Py_ssize_t hi, uint64_t* seed) noexcept nogil:
    """The median of three pseudo-random picks from a[lo:hi]: expected O(n)
    selection on any input order (sorted runs defeat fixed picks after a
    three-way partition)."""
    seed[0] = _mix(seed[0] + 1)
    return _median3(a[lo + <Py_ssize_t>(seed[0] % <uint64_t>(hi - lo))],
                    a[lo + <Py_ssize_t>((seed[0] >> 21) % <uint64_t>(hi - lo))],
                    a[lo + <Py_ssize_t>((seed[0] >> 42) % <uint64_t>(hi - lo))])


cdef enum:
    # ``lightest_count`` counts the items of each weight when no weight
    # exceeds COUNTING_PER_ITEM n + COUNTING_SLACK: O(n + max w), about 3x
    # faster than the quickselect at 10^4 items (quantised weights are often
    # this small).
    COUNTING_PER_ITEM = 2
    COUNTING_SLACK = 1024


cdef inline Py_ssize_t _lightest_by_counts(const double* w, Py_ssize_t n, double c,
                                           Py_ssize_t wmax) noexcept nogil:
    """``lightest_count`` on integer weights 1..wmax: how many items weigh
    each, then the weights in ascending order while they fit. -1 if out of
    memory."""
    cdef Py_ssize_t* counts = <Py_ssize_t*>calloc(wmax + 1, sizeof(Py_ssize_t))
    cdef Py_ssize_t i, x, take, count = 0
    cdef double room = c
    if counts == NULL:
        return -1
    for i in range(n):
        counts[<Py_ssize_t>w[i]] += 1
    for x in range(1, wmax + 1):
        take = counts[x]
        if take * <double>x > room:  # exact: integers below 2**53
            take = <Py_ssize_t>floor(room / x)
            while take > 0 and take * <double>x > room:  # the quotient may round up
                take -= 1
            count += take
            break
        count += take
        room -= take * <double>x
    free(counts)
    return count


cdef enum:
    # ``lightest_count`` on larger weights first splits their range into
    # about n / ITEMS_PER_BUCKET equal buckets (at least MIN_BUCKETS, at most
    # MAX_BUCKETS: their counts and sums stay in a 32 KiB L1 cache; from
    # BUCKETS_FROM items on): one branch-free pass counts and sums each
    # bucket, and only the bucket where the running sum passes the capacity
    # is selected item by item. A quickselect's partition branches on every
    # item and mispredicts on random weights: 3-4x slower at 10^4 and 10^5
    # items (tests/sparse/test_select.py checks both against a sort).
    ITEMS_PER_BUCKET = 8
    MIN_BUCKETS = 64
    MAX_BUCKETS = 2048
    BUCKETS_FROM = 64


cdef inline Py_ssize_t _lightest_by_select(double* a, Py_ssize_t n, double c) noexcept nogil:
    """``lightest_count`` of a[0:n] by a quickselect that carries weight
    sums, reordering ``a`` in place."""
    cdef Py_ssize_t lo = 0, hi = n, lt, gt, count = 0, take, ne
    cdef double room = c, p, below
    cdef uint64_t seed = 0x9E3779B97F4A7C15
    while lo < hi:
        p = _pivot(a, lo, hi, &seed)
        _three_way(a, lo, hi, p, &lt, &gt, &below)
        if below > room:  # the answer lies among the lighter ones
            hi = lt
            continue
        room -= below
        count += lt - lo
        ne = gt - lt
        take = <Py_ssize_t>floor(room / p)
        if take > ne:
            take = ne
        while take > 0 and take * p > room:  # the quotient may round up
            take -= 1
        count += take
        room -= take * p
        if take < ne:
            break
        lo = gt
    return count


cdef inline Py_ssize_t _bucket_of(double x, double low, double scale, Py_ssize_t last) noexcept nogil:
    """The bucket of weight x: floor((x - low) scale), at most ``last``.
    Monotone in x (a rounded product never decreases as x grows)."""
    cdef Py_ssize_t k = <Py_ssize_t>((x - low) * scale)
    return k if k < last else last


cdef inline Py_ssize_t _lightest_by_buckets(const double* w, Py_ssize_t n, double c, double wmin,
                                            double wmax) noexcept nogil:
    """``lightest_count`` by buckets of equal width over [wmin, wmax]: every
    item of a lower bucket weighs less than every item of a higher one, so
    the lightest items that fit are whole buckets taken from the bottom while
    their sums fit, then the lightest of the next bucket's items that still
    fit (``_lightest_by_select`` on those alone). Expected O(n) on any
    weights; two passes without data-dependent branches, and a selection
    among about ``ITEMS_PER_BUCKET`` items. -1 if out of memory."""
    cdef Py_ssize_t nb = n // ITEMS_PER_BUCKET, i, t, k, count = 0, m = 0
    if nb < MIN_BUCKETS:
        nb = MIN_BUCKETS
    if nb > MAX_BUCKETS:
        nb = MAX_BUCKETS
    cdef double scale = nb / (wmax - wmin + 1.0), room = c
    cdef Py_ssize_t* counts = <Py_ssize_t*>calloc(nb, sizeof(Py_ssize_t))
    cdef double* sums = <double*>calloc(nb, sizeof(double))
    cdef double* a = NULL
    if counts == NULL or sums == NULL:
        free(counts)
        free(sums)
        return -1
    for i in range(n):
        k = _bucket_of(w[i], wmin, scale, nb - 1)
        counts[k] += 1
        sums[k] += w[i]  # integers with a total below 2**53: exact
    t = 0
    while t < nb and sums[t] <= room:
        room -= sums[t]
        count += counts[t]
        t += 1
    if t < nb:  # bucket t does not fit whole: its lightest items that do
        a = <double*>malloc((counts[t] + 1) * sizeof(double))
        if a == NULL:
            count = -1
        else:
            for i in range(n):  # branch-free: every weight written, kept when in bucket t
                a[m] = w[i]
                m += _bucket_of(w[i], wmin, scale, nb - 1) == t
                if m == counts[t]:
                    break
            count += _lightest_by_select(a, m, room)
            free(a)
    free(counts)
    free(sums)
    return count


cdef inline Py_ssize_t lightest_count(const double* w, Py_ssize_t n, double c) noexcept nogil:
    """The largest k such that the k lightest of w[0:n] (all > 0, integers
    whose total is below 2**53, so every sum here is exact) weigh at most c:
    the same count as a sort, a prefix sum and a binary search give. -1 if
    out of memory. Small weights by their counts (``_lightest_by_counts``),
    others by buckets of their range (``_lightest_by_buckets``), a few by a
    quickselect that carries weight sums (``_lightest_by_select``)."""
    cdef Py_ssize_t i, k
    cdef double wmax = 0.0, wmin = INFINITY
    for i in range(n):
        wmax = w[i] if w[i] > wmax else wmax
        wmin = w[i] if w[i] < wmin else wmin
    if wmax <= COUNTING_PER_ITEM * n + COUNTING_SLACK:
        return _lightest_by_counts(w, n, c, <Py_ssize_t>wmax)
    if n >= BUCKETS_FROM:
        return _lightest_by_buckets(w, n, c, wmin, wmax)
    cdef double* a = <double*>malloc(n * sizeof(double) + 1)
    if a == NULL:
        return -1
    memcpy(a, w, n * sizeof(double))
    k = _lightest_by_select(a, n, c)
    free(a)
    return k


cdef inline int lightest_k(const double* w, Py_ssize_t n, Py_ssize_t k, double* light, double* wk,
                           double* wk1) noexcept nogil:
    """The k lightest of w[0:n] (1 <= k < n; integers whose total is below
    2**53, so every sum here is exact): their weight into ``light``, the
    k-th and the (k+1)-th smallest weight into ``wk`` and ``wk1``. The same
    numbers as a sort gives, by ``lightest_count``'s quickselect (expected
    O(n)). 0, or -1 if out of memory."""
    cdef double* a = <double*>malloc(n * sizeof(double) + 1)
    cdef Py_ssize_t lo = 0, hi = n, lt, gt, need = k, i, le = 0
    cdef double p, below, s = 0.0, top = 0.0, nxt = INFINITY
    cdef uint64_t seed = 0x9E3779B97F4A7C15
    if a == NULL:
        return -1
    memcpy(a, w, n * sizeof(double))
    while True:
        if need == hi - lo:  # all that is left: the k-th is their largest
            for i in range(lo, hi):
                s += a[i]
                top = a[i] if a[i] > top else top
            break
        p = _pivot(a, lo, hi, &seed)
        _three_way(a, lo, hi, p, &lt, &gt, &below)
        if need <= lt - lo:  # the k-th is among the lighter ones
            hi = lt
            continue
        s += below
        need -= lt - lo
        if need <= gt - lt:  # ... or one of the copies of p
            s += need * p
            top = p
            break
        s += (gt - lt) * p
        need -= gt - lt
        lo = gt
    free(a)
    for i in range(n):  # the (k+1)-th: the k-th again if it has more copies, else the next weight up
        if w[i] <= top:
            le += 1
        elif w[i] < nxt:
            nxt = w[i]
    light[0] = s
    wk[0] = top
    wk1[0] = top if le > k else nxt
    return 0


cdef inline double kth_largest(double* a, Py_ssize_t n, Py_ssize_t k) noexcept nogil:
    """The k-th largest of a[0:n] (1 <= k <= n; no NaN), as
    ``np.partition(a, n - k)[n - k]``, by ``lightest_count``'s quickselect
    in place (expected O(n); a is reordered)."""
    cdef Py_ssize_t lo = 0, hi = n, lt, gt, want = n - k  # its place in ascending order
    cdef double p, below
    cdef uint64_t seed = 0x9E3779B97F4A7C15
    while True:
        p = _pivot(a, lo, hi, &seed)
        _three_way(a, lo, hi, p, &lt, &gt, &below)
        if want < lt:
            hi = lt
        elif want >= gt:
            lo = gt
        else:
            return p


cdef inline uint64_t _bits(double x) noexcept nogil:
    cdef uint64_t u
    memcpy(&u, &x, sizeof(double))
    return u


cdef inline Py_ssize_t group_ids(const double* w, const double* v, Py_ssize_t n,
                                 Py_ssize_t* out) noexcept nogil:
    """out[i] = the group of item i: 0, 1, ... in order of first appearance,
    equal exactly when both weight and value are equal (no NaN, no -0.0:
    then equal doubles have equal bits). Returns the number of groups, or
    -1 if out of memory. Linear probing in a table of at least 2n slots."""
    cdef Py_ssize_t size = 1, i, r, h, groups = 0
    cdef Py_ssize_t* table
    while size < 2 * n:
        size <<= 1
    table = <Py_ssize_t*>malloc(size * sizeof(Py_ssize_t))
    if table == NULL:
        return -1
    memset(table, 0xFF, size * sizeof(Py_ssize_t))  # every slot -1: empty
    for i in range(n):
        h = <Py_ssize_t>(_mix(_bits(w[i]) ^ _mix(_bits(v[i]))) & <uint64_t>(size - 1))
        while True:
            r = table[h]
            if r < 0:
                table[h] = i
                out[i] = groups
                groups += 1
                break
            if w[r] == w[i] and v[r] == v[i]:
                out[i] = out[r]
                break
            h = (h + 1) & (size - 1)
    free(table)
    return groups
