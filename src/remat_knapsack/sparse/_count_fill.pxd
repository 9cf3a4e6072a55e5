# cython: language_level=3
"""Exact fills of a count, as bit sets, for the canonical pass's questions on
strongly correlated items.

On items with v_i = w_i + D (D > 0) a set of c items is worth w(S) + D c, so
when only the most items that fit (m, the lightest m weighing ``least``) can
reach a target, the question is whether some m of the n items have a weight
sum in [lo, hi]. Every such set is the lightest m with r of them swapped out
(A) and r others swapped in (B). With the pivot p, the heaviest of the
lightest m, give each item its distance to it, u = p - w (in) or w - p (out),
all >= 0: then w(S) - least = u(A) + u(B) whenever |A| = |B|. So the question
becomes a subset sum over the distances, in [lo - least, hi - least], with
the balance d = |B| - |A| ending at 0: one bit set per balance over the sums
0..hi - least, the items taken by ascending distance (the balanced subset
sums of Pisinger, "Linear time algorithms for knapsack problems with bounded
weights", J. Algorithms 33, 1999, on the word RAM as in ``_subset_bits``).

Only items with u <= hi - least can take part, and a balance beyond b, the
most swaps whose r smallest distances on each side still fit, can never come
back to 0 (it needs r items on each side). A state (d, s) also needs |d|
more items, each at least as far as the current one, so layer d keeps only
sums up to hi - least - |d| u. A question near the least sum of m (the
canonical pass's proofs) takes a few dozen items and a few layers of a few
hundred words: about a word operation where a state-list run keeps a state.

O(t (2b + 1) (hi - least) / 64) time for the t items in the walk, and
(2b + 1) layers, or (t + 1) (2b + 1) with the history kept to read a set back.

``fill_greedy`` answers the same question's easy yes in O(n), where the
range lies far above the least sum and the bit sets would be wide: slide a
window of m consecutive items (by weight) up while its sum stays within the
range's top, then look for one last swap, by two pointers over the weights:
a window item out and a heavier item above the window in, whose gain lands
in the range; or, from the next window (over the top), a window item out
and a lighter one below it in, whose loss does. On dense weights (the
canonical pass's first questions at n = 10^4 and 10^5) it nearly always
finds one; a miss proves nothing.
"""

from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memcpy, memset

from ._subset_bits cimport _bit, _in_range, _or_shifted, bits_words


cdef enum:
    # What ``fill_bits`` found
    FILL_NONE = 0      # no m of the items have a sum in the range
    FILL_FOUND = 1     # some do: the set is in x
    FILL_UNREAD = 2    # some do, not read back (the history was not kept)


cdef struct Fill:
    # One question: some m of n items (integer weights, ascending) with a
    # sum in [least + dlo, least + dhi]
    const double* w     # the weights, ascending
    Py_ssize_t n
    Py_ssize_t m        # the count
    Py_ssize_t pivot    # w[m - 1]
    Py_ssize_t dlo      # the range, less the least sum of m
    Py_ssize_t dhi
    Py_ssize_t* seq     # the walk: positions by ascending distance to the pivot (n slots)
    Py_ssize_t t        # ... its length (distance <= dhi)
    Py_ssize_t b        # the most swaps
    Py_ssize_t words    # one layer's words (sums 0..dhi)


cdef inline bint _swap_up(const double* w, Py_ssize_t i, Py_ssize_t m, Py_ssize_t n, Py_ssize_t glo,
                          Py_ssize_t ghi, Py_ssize_t* a, Py_ssize_t* b) noexcept nogil:
    """An item a in [i, m) and an item b in [m, n) (weights ascending) with
    w[b] - w[a] in [glo, ghi], glo > 0: True with them, by two pointers (as a
    grows, the least b whose gain reaches glo does not fall). O(n - i)."""
    cdef Py_ssize_t q = m
    a[0] = i
    while a[0] < m:
        while q < n and <Py_ssize_t>w[q] - <Py_ssize_t>w[a[0]] < glo:
            q += 1
        if q == n:
            return False  # heavier window items only gain less
        if <Py_ssize_t>w[q] - <Py_ssize_t>w[a[0]] <= ghi:
            b[0] = q
            return True
        a[0] += 1
    return False


cdef inline bint _swap_down(const double* w, Py_ssize_t i, Py_ssize_t m, Py_ssize_t glo, Py_ssize_t ghi,
                            Py_ssize_t* a, Py_ssize_t* b) noexcept nogil:
    """An item a in [i, m) and an item b in [0, i) (weights ascending) with
    w[a] - w[b] in [glo, ghi], glo > 0: True with them, by two pointers (as a
    falls, the heaviest b whose loss reaches glo does not rise). O(m)."""
    cdef Py_ssize_t q = i - 1
    a[0] = m - 1
    while a[0] >= i:
        while q >= 0 and <Py_ssize_t>w[a[0]] - <Py_ssize_t>w[q] < glo:
            q -= 1
        if q < 0:
            return False  # lighter window items only lose less
        if <Py_ssize_t>w[a[0]] - <Py_ssize_t>w[q] <= ghi:
            b[0] = q
            return True
        a[0] -= 1
    return False


cdef inline bint fill_greedy(const double* w, Py_ssize_t n, Py_ssize_t m, Py_ssize_t least, Py_ssize_t lo,
                             Py_ssize_t hi, uint8_t* x) noexcept nogil:
    """Some m of the n items (integer weights, ascending; the lightest m sum
    to ``least`` < lo <= hi) with a sum in [lo, hi], greedily (module docs):
    True with the set in x, False when missed (proves nothing). O(n)."""
    cdef Py_ssize_t s = 0, cur = least, a = -1, b = -1, q, over
    while s + m < n and cur + (<Py_ssize_t>w[s + m] - <Py_ssize_t>w[s]) <= hi:
        cur += <Py_ssize_t>w[s + m] - <Py_ssize_t>w[s]
        s += 1  # the window [s, s + m) weighs cur
    if cur < lo and not _swap_up(w, s, s + m, n, lo - cur, hi - cur, &a, &b):
        if s + m == n:
            return False  # the heaviest m: no window above
        over = cur + (<Py_ssize_t>w[s + m] - <Py_ssize_t>w[s])  # the next window, above hi
        s += 1
        if not _swap_down(w, s, s + m, over - hi, over - lo, &a, &b):
            return False
    for q in range(n):
        x[q] = s <= q < s + m
    if a >= 0:
        x[a] = 0
        x[b] = 1
    return True


cdef inline Py_ssize_t _dist(const Fill* f, Py_ssize_t q) noexcept nogil:
    """The distance of the item at position q to the pivot."""
    return <Py_ssize_t>f.w[q] - f.pivot if q >= f.m else f.pivot - <Py_ssize_t>f.w[q]


cdef inline void fill_setup(Fill* f, const double* w, Py_ssize_t n, Py_ssize_t m, Py_ssize_t dlo,
                            Py_ssize_t dhi, Py_ssize_t* seq) noexcept nogil:
    """The walk (in-items from m - 1 down, out-items from m up, merged by
    distance) and the most swaps, for 1 <= m <= n and 0 <= dlo <= dhi."""
    cdef Py_ssize_t i = m - 1, o = m, r = 0, acc = 0
    f.w, f.n, f.m, f.pivot, f.dlo, f.dhi, f.seq = w, n, m, <Py_ssize_t>w[m - 1], dlo, dhi, seq
    f.t = 0
    while True:
        if i >= 0 and (o >= n or _dist(f, i) <= _dist(f, o)):
            if _dist(f, i) > dhi:
                break
            seq[f.t] = i
            i -= 1
        elif o < n:
            if _dist(f, o) > dhi:
                break
            seq[f.t] = o
            o += 1
        else:
            break
        f.t += 1
    while r < m and m + r < n and acc + _dist(f, m - 1 - r) + _dist(f, m + r) <= dhi:
        acc += _dist(f, m - 1 - r) + _dist(f, m + r)
        r += 1
    f.b = r
    f.words = bits_words(dhi)


cdef inline Py_ssize_t fill_layers(const Fill* f) noexcept nogil:
    """Words of one set of layers (balances -b..b)."""
    return (2 * f.b + 1) * f.words


cdef inline Py_ssize_t walk_sum(const Fill* f) noexcept nogil:
    """The distances of the walk's items added up: no set of them sums higher."""
    cdef Py_ssize_t i, total = 0
    for i in range(f.t):
        total += _dist(f, f.seq[i])
    return total


cdef inline Py_ssize_t _reach(const Fill* f, Py_ssize_t d, Py_ssize_t u) noexcept nogil:
    """The highest sum layer d keeps while the items are at distance u or
    more (-1: none)."""
    return f.dhi - (d if d >= 0 else -d) * u


cdef inline Py_ssize_t fill_work(const Fill* f, Py_ssize_t cap) noexcept nogil:
    """Word operations of the walk (an upper bound), or some count above
    ``cap`` once they exceed it: O(min(cap, that) + t)."""
    cdef Py_ssize_t i, d, u, reach, work = 0
    for i in range(f.t):
        u = _dist(f, f.seq[i])
        reach = f.b if u == 0 else min(f.b, f.dhi // u)  # the balances with sums left
        for d in range(-reach, reach + 1):
            work += _reach(f, d, u) // 64 + 1
        if work > cap:
            break
    return work


cdef inline void _fill_step(const Fill* f, const uint64_t* prev, uint64_t* cur, Py_ssize_t i) noexcept nogil:
    """Item i of the walk into the layers: an out-item raises the balance, an
    in-item lowers it; balances in the order that reads each source before
    it changes (``cur`` may be ``prev``)."""
    cdef Py_ssize_t q = f.seq[i], u = _dist(f, q), step = 1 if q >= f.m else -1
    cdef Py_ssize_t d, top, e
    for e in range(2 * f.b):
        d = f.b - e if step > 0 else -f.b + e  # the target balance
        top = _reach(f, d, u)
        if top >= 0:
            _or_shifted(prev + (d - step + f.b) * f.words, cur + (d + f.b) * f.words, top // 64 + 1, u)


cdef inline void _read_back(const Fill* f, const uint64_t* hist, Py_ssize_t done, Py_ssize_t s,
                            uint8_t* x) noexcept nogil:
    """The set of sum s at balance 0 after ``done`` items of the walk, from
    the history: x[q] for each position (the lightest m, with the walk's
    items used flipped)."""
    cdef Py_ssize_t L = fill_layers(f), d = 0, i, q
    for q in range(f.n):
        x[q] = q < f.m
    for i in range(done, 0, -1):  # an item is used when its sum was not reached without it
        if not _bit(hist + (i - 1) * L + (d + f.b) * f.words, s):
            q = f.seq[i - 1]
            x[q] = not x[q]
            d -= 1 if q >= f.m else -1
            s -= _dist(f, q)


cdef inline int fill_bits(const Fill* f, uint64_t* work, bint keep, uint8_t* x) noexcept nogil:
    """Whether some m of the items sum into the range: FILL_FOUND with the
    set in x (``keep``: ``work`` holds (t + 1) * fill_layers words, the
    history), FILL_UNREAD (not ``keep``: fill_layers words), or FILL_NONE."""
    cdef Py_ssize_t L = fill_layers(f), i = 0, at
    cdef uint64_t* cur = work
    memset(work, 0, L * sizeof(uint64_t))
    work[f.b * f.words] = 1  # nothing swapped: the lightest m
    at = _in_range(cur + f.b * f.words, f.dlo, f.dhi)
    while at < 0:
        if i == f.t:
            return FILL_NONE
        if keep:
            cur = work + (i + 1) * L
            memcpy(cur, cur - L, L * sizeof(uint64_t))
        _fill_step(f, cur - L if keep else cur, cur, i)
        i += 1
        at = _in_range(cur + f.b * f.words, f.dlo, f.dhi)
    if not keep:
        return FILL_UNREAD
    _read_back(f, work, i, at, x)
    return FILL_FOUND
