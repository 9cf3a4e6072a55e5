# cython: language_level=3
"""A Fenwick (binary indexed) tree of items in a fixed rank order.

Shared by ``_bounds`` (Dantzig bounds of item sets that change one item at a
time) and ``_sparse`` (count bounds of the canonical pass). Each node holds,
for its range of ranks, the sum of a ``key`` (what a descent is limited by,
e.g. weight), of a carried ``val`` (e.g. value; may be NULL) and of the item
count. Ranks are 1-based inside; arrays have n + 1 slots, slot 0 unused.
Fenwick, "A new data structure for cumulative frequency tables" (1994).

Cost: ``fen_add`` and both descents O(log n).
"""


cdef struct Fenwick:
    double* key          # summed key per node (the descent's limit is on it)
    double* val          # summed value per node, or NULL (not carried)
    double* cnt          # items per node
    Py_ssize_t n         # ranks 1..n
    Py_ssize_t top       # the largest power of two <= n (0 when n == 0)


cdef inline void fen_init(Fenwick* f, double* key, double* val, double* cnt, Py_ssize_t n) noexcept nogil:
    f.key = key
    f.val = val
    f.cnt = cnt
    f.n = n
    f.top = 0
    if n > 0:
        f.top = 1
        while f.top * 2 <= n:
            f.top *= 2


cdef inline void fen_add(Fenwick* f, Py_ssize_t rank, double key, double val, double cnt) noexcept nogil:
    """Add an item (or remove it, with negated amounts) at 1-based ``rank``."""
    while rank <= f.n:
        f.key[rank] += key
        if f.val != NULL:
            f.val[rank] += val
        f.cnt[rank] += cnt
        rank += rank & -rank


cdef inline Py_ssize_t fen_within(const Fenwick* f, double limit, bint strict,
                                  double* key, double* val, double* cnt) noexcept nogil:
    """The longest rank prefix whose key sum is <= ``limit`` (< when
    ``strict``): its length, and its key, val and count sums."""
    cdef Py_ssize_t pos = 0, step = f.top
    cdef double k = 0, v = 0, c = 0, x
    while step:
        if pos + step <= f.n:
            x = k + f.key[pos + step]
            if (x < limit) if strict else (x <= limit):
                pos += step
                k = x
                if f.val != NULL:
                    v += f.val[pos]
                c += f.cnt[pos]
        step >>= 1
    key[0] = k
    val[0] = v
    cnt[0] = c
    return pos


cdef inline Py_ssize_t fen_counted(const Fenwick* f, double count) noexcept nogil:
    """The longest rank prefix holding at most ``count`` items; its length
    (so the next item present, if any, has rank length + 1)."""
    cdef Py_ssize_t pos = 0, step = f.top
    cdef double c = 0
    while step:
        if pos + step <= f.n and c + f.cnt[pos + step] <= count:
            pos += step
            c += f.cnt[pos]
        step >>= 1
    return pos
