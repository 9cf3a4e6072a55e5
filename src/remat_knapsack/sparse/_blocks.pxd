# cython: language_level=3
"""Prefix sums in a fixed rank order over an item set that only shrinks.

The canonical pass (``_canonical``) asks, now and then, how many of the
lightest free items below its position fit in the room left, while it drops
an item at every step down. A Fenwick tree answers in O(log n) but pays
O(log n) scattered writes per dropped item; the pass drops tens of thousands
of items between a few dozen questions. Here the ranks are cut into blocks
of 2**shift; each block keeps the key sum and the count of the items it
still holds. Dropping an item is one write to a small array that stays in
cache; a question walks the blocks and then the ranks of one block.
Each block may carry a second sum along (``val``: the values, where the key
is the weight), so that a question also gets the prefix's value
(``blk_break``: Dantzig's bound of the items held, in efficiency order).

An item is held while its index is below ``below``: the pass drops the items
from the top of the index order (``blk_below``), so no per-rank flag is kept.

Cost: ``blk_below`` O(1) per dropped item; ``blk_within`` O(n / 2**shift +
2**shift), O(sqrt n) with ``blk_shift``; ``blk_init`` O(n).
"""


cdef struct Blocks:
    double* node               # per block: key sum, count, val sum of the items held (3 doubles)
    const double* key          # per rank (0-based): the item's key, >= 0
    const double* val          # per rank: a second sum's term (NULL: none, the sums stay 0)
    const Py_ssize_t* idx      # per rank: the item's index
    const Py_ssize_t* rank     # per index: its rank
    Py_ssize_t n               # ranks 0..n-1
    Py_ssize_t shift           # log2 of the block length
    Py_ssize_t below           # the items held: index < below


cdef inline Py_ssize_t blk_shift(Py_ssize_t n) noexcept nogil:
    """The block length's log2 for n ranks: about half of n's bit length
    (blocks of about sqrt n), at least 4."""
    cdef Py_ssize_t bits = 0
    while (<Py_ssize_t>1 << bits) < n:
        bits += 1
    return max(4, (bits + 1) // 2)


cdef inline Py_ssize_t blk_nodes(Py_ssize_t n, Py_ssize_t shift) noexcept nogil:
    """The doubles ``node`` needs for n ranks."""
    return 3 * ((n >> shift) + 1)


cdef inline void blk_init(Blocks* b, double* node, const Py_ssize_t* idx, const double* key,
                          const double* val, const Py_ssize_t* rank, Py_ssize_t n) noexcept nogil:
    """Hold every item: ``idx``/``key``/``val`` the items, their keys and
    second terms (or NULL) in rank order, ``rank`` the inverse of ``idx``;
    ``node``: ``blk_nodes`` doubles."""
    cdef Py_ssize_t r
    b.node, b.key, b.val, b.idx, b.rank, b.n = node, key, val, idx, rank, n
    b.shift = blk_shift(n)
    b.below = n
    for r in range(blk_nodes(n, b.shift)):
        node[r] = 0.0
    for r in range(n):
        node[3 * (r >> b.shift)] += key[r]
        node[3 * (r >> b.shift) + 1] += 1.0
        if val != NULL:
            node[3 * (r >> b.shift) + 2] += val[r]


cdef inline void blk_below(Blocks* b, Py_ssize_t k) noexcept nogil:
    """Drop the items of index k and up (none when k >= ``below``)."""
    cdef Py_ssize_t q, r
    for q in range(k, b.below):
        r = b.rank[q]
        b.node[3 * (r >> b.shift)] -= b.key[r]
        b.node[3 * (r >> b.shift) + 1] -= 1.0
        if b.val != NULL:
            b.node[3 * (r >> b.shift) + 2] -= b.val[r]
    if k < b.below:
        b.below = k


cdef inline bint _blk_fits(double x, double limit, bint strict) noexcept nogil:
    return (x < limit) if strict else (x <= limit)


cdef inline double blk_within(const Blocks* b, double limit, bint strict, double* key) noexcept nogil:
    """How many items held make the longest rank prefix whose key sum is
    <= ``limit`` (< when ``strict``); that sum into ``key``."""
    cdef Py_ssize_t blk = 0, r, end, blocks = (b.n >> b.shift) + 1
    cdef double acc = 0.0, cnt = 0.0
    while blk < blocks and _blk_fits(acc + b.node[3 * blk], limit, strict):
        acc += b.node[3 * blk]
        cnt += b.node[3 * blk + 1]
        blk += 1
    key[0] = acc
    if blk == blocks:
        return cnt
    end = min(b.n, (blk + 1) << b.shift)
    for r in range(blk << b.shift, end):
        if b.idx[r] < b.below:
            if not _blk_fits(acc + b.key[r], limit, strict):
                break
            acc += b.key[r]
            cnt += 1.0
    key[0] = acc
    return cnt


cdef inline Py_ssize_t blk_break(const Blocks* b, double limit, double* key, double* val) noexcept nogil:
    """The rank of the first item held that the longest rank prefix within
    ``limit`` (key sum <= limit) leaves out, -1 when every item held fits;
    that prefix's key sum into ``key`` and its ``val`` sum into ``val``
    (``val`` non-NULL in ``blk_init``)."""
    cdef Py_ssize_t blk = 0, r, blocks = (b.n >> b.shift) + 1
    cdef double acc = 0.0, vacc = 0.0
    while blk < blocks and acc + b.node[3 * blk] <= limit:
        acc += b.node[3 * blk]
        vacc += b.node[3 * blk + 2]
        blk += 1
    key[0], val[0] = acc, vacc
    if blk == blocks:
        return -1
    # The block's sum did not fit, so one of its items does not, unless the
    # limit is below 0 and the block holds no item: then the walk goes on to
    # the first item held anywhere after it.
    for r in range(blk << b.shift, b.n):
        if b.idx[r] < b.below:
            if acc + b.key[r] > limit:
                key[0], val[0] = acc, vacc
                return r
            acc += b.key[r]
            vacc += b.val[r]
    return -1
