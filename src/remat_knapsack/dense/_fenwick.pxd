# cython: language_level=3
"""A Fenwick (binary indexed) tree of items in a fixed rank order.

Used by ``_bounds`` (Dantzig bounds of item sets that change one item at a
time, with as many reads as updates; the canonical pass, which drops many
items between few reads, keeps block sums instead: ``_blocks``). Each node holds,
for its range of ranks, the sum of a ``key`` (what a descent is limited by,
e.g. weight), of the item count and, optionally, of a carried ``val`` (e.g.
value). The fields of a node lie side by side (``width`` doubles a node:
key, count[, val]), so an update touches one cache line a level, not one
per field (measured in docs/algorithms.md).
Ranks are 1-based inside; the node array has n + 1 nodes, node 0 unused.
Fenwick, "A new data structure for cumulative frequency tables" (1994).

Cost: ``fen_add`` and both descents O(log n).
"""


cdef struct Fenwick:
    double* node         # (n + 1) * width doubles: per node key, count[, val]
    Py_ssize_t width     # 2, or 3 when a val is carried
    Py_ssize_t n         # ranks 1..n
    Py_ssize_t top       # the largest power of two <= n (0 when n == 0)


cdef inline void fen_init(Fenwick* f, double* node, bint carry_val, Py_ssize_t n) noexcept nogil:
    f.node = node
    f.width = 3 if carry_val else 2
    f.n = n
    f.top = 0
    if n > 0:
        f.top = 1
        while f.top * 2 <= n:
            f.top *= 2


cdef inline void fen_add(Fenwick* f, Py_ssize_t rank, double key, double val, double cnt) noexcept nogil:
    """Add an item (or remove it, with negated amounts) at 1-based ``rank``."""
    cdef double* x
    while rank <= f.n:
        x = f.node + rank * f.width
        x[0] += key
        x[1] += cnt
        if f.width == 3:
            x[2] += val
        rank += rank & -rank


cdef inline Py_ssize_t fen_within(const Fenwick* f, double limit, bint strict,
                                  double* key, double* val, double* cnt) noexcept nogil:
    """The longest rank prefix whose key sum is <= ``limit`` (< when
    ``strict``): its length, and its key, val (0 when not carried) and count sums."""
    cdef Py_ssize_t pos = 0, step = f.top
    cdef double k = 0, v = 0, c = 0, x
    cdef const double* nd
    while step:
        if pos + step <= f.n:
            nd = f.node + (pos + step) * f.width
            x = k + nd[0]
            if (x < limit) if strict else (x <= limit):
                pos += step
                k = x
                c += nd[1]
                if f.width == 3:
                    v += nd[2]
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
        if pos + step <= f.n and c + f.node[(pos + step) * f.width + 1] <= count:
            pos += step
            c += f.node[pos * f.width + 1]
        step >>= 1
    return pos
