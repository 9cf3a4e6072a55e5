# cython: language_level=3
"""Horowitz and Sahni's two lists, as a primal search before a decide run.

A decide run asks whether some set X of n items (in efficiency order) has
w(X) <= c and v(X) >= goal. Take the break solution (the items before the
break item b, the first that no longer fits) and the 2h items nearest the
break (h before b, h from b on). The sets that differ from the break
solution on those items only are 4^h. Split the items into two lists
(alternately), list every subset of each with its weight and value change,
sorted by weight change (built by merging, O(2^h)); one sweep then finds
for every subset of the first list the best partner in the second
(O(2^h)). So 4^h sets are searched in O(2^h) time and memory.

That answers the yes questions of items on one value line (strongly
correlated): their sets must fill the capacity exactly, and a decide run's
states double for about 2h steps before one does. A no from it proves
nothing; the run then decides.

Horowitz and Sahni, "Computing partitions with applications to the knapsack
problem", J. ACM 21 (1974).
"""

from libc.stdint cimport uint8_t, uint32_t
from libc.string cimport memcpy

cdef enum:
    TWO_LISTS_MAX_HALF = 16  # h at most: a list's subsets are bits of a uint32


cdef struct Flips:
    # Subsets of one list's items, as changes to the break solution, in
    # three arrays (the merge selects among them without branches).
    double* dw        # their weight changes
    double* dv        # their value changes
    uint32_t* bits    # their items (bit i: the list's item i)


cdef inline Py_ssize_t two_lists_bytes(Py_ssize_t h) noexcept nogil:
    """The workspace ``two_lists`` needs for half size h: two lists and
    their merge buffers, and the second list's running maxima."""
    return 4 * _list_bytes(1 << h) + sizeof(Py_ssize_t) * (1 << h)


cdef inline Py_ssize_t _list_bytes(Py_ssize_t cap) noexcept nogil:
    """One list of ``cap`` entries, rounded up to 8 bytes (the next one's
    doubles stay aligned)."""
    return ((sizeof(double) * 2 + sizeof(uint32_t)) * cap + 7) // 8 * 8


cdef inline char* _carve(Flips* f, char* p, Py_ssize_t cap) noexcept nogil:
    """Point ``f`` at ``cap`` entries from ``p``; returns the next free byte."""
    f.dw = <double*>p
    f.dv = f.dw + cap
    f.bits = <uint32_t*>(f.dv + cap)
    return p + _list_bytes(cap)


cdef inline void _subsets(const double* dw, const double* dv, Py_ssize_t m,
                          Flips* out, Flips* tmp) noexcept nogil:
    """Every subset of m items (weight changes ``dw``, value changes ``dv``)
    into ``out`` by ascending weight change: the list so far merged with
    itself shifted by the next item, 2^m entries. ``tmp``: as large."""
    cdef Py_ssize_t size = 1, i, a, b, o, src
    cdef Flips cur = out[0], nxt = tmp[0]
    cdef double d, e
    cdef double add_w[2]  # by tx: what the entry taken adds (the shifted side's item, or nothing)
    cdef double add_v[2]
    cdef uint32_t add_b[2]
    cdef uint32_t bit
    cdef int tx
    cur.dw[0] = cur.dv[0] = 0.0
    cur.bits[0] = 0
    for i in range(m):
        d, e, bit = dw[i], dv[i], <uint32_t>1 << i
        add_w[0], add_w[1], add_v[0], add_v[1], add_b[0], add_b[1] = d, 0.0, e, 0.0, bit, 0
        a = b = o = 0
        while a < size and b < size:  # which side comes next is a coin toss: an index select, no jump
            tx = cur.dw[a] <= cur.dw[b] + d
            src = a if tx else b
            nxt.dw[o] = cur.dw[src] + add_w[tx]
            nxt.dv[o] = cur.dv[src] + add_v[tx]
            nxt.bits[o] = cur.bits[src] | add_b[tx]
            a += tx
            b += 1 - tx
            o += 1
        while a < size:
            nxt.dw[o], nxt.dv[o], nxt.bits[o] = cur.dw[a], cur.dv[a], cur.bits[a]
            a += 1
            o += 1
        while b < size:
            nxt.dw[o], nxt.dv[o], nxt.bits[o] = cur.dw[b] + d, cur.dv[b] + e, cur.bits[b] | bit
            b += 1
            o += 1
        size *= 2
        cur, nxt = nxt, cur
    if cur.dw != out.dw:
        memcpy(out.dw, cur.dw, size * sizeof(double))
        memcpy(out.dv, cur.dv, size * sizeof(double))
        memcpy(out.bits, cur.bits, size * sizeof(uint32_t))


cdef inline bint _partner(const Flips* A, Py_ssize_t na, const Flips* B, Py_ssize_t nb,
                          Py_ssize_t* best, double room, double need,
                          Py_ssize_t* ia, Py_ssize_t* ib) noexcept nogil:
    """A pair with A.dw[a] + B.dw[b] <= room and A.dv[a] + B.dv[b] >= need,
    into ia, ib. Both lists ascend in dw, so the room A's entry leaves for
    B only shrinks along A; ``best[i]`` is filled here with the index of the
    largest dv among B's first i + 1."""
    cdef Py_ssize_t a, pb = nb - 1, i
    best[0] = 0
    for i in range(1, nb):
        best[i] = i if B.dv[i] > B.dv[best[i - 1]] else best[i - 1]
    for a in range(na):
        while pb >= 0 and B.dw[pb] > room - A.dw[a]:
            pb -= 1
        if pb < 0:
            return False
        if A.dv[a] + B.dv[best[pb]] >= need:
            ia[0] = a
            ib[0] = best[pb]
            return True
    return False


cdef inline bint _fits(const double* w, const double* v, Py_ssize_t n, double c, double goal,
                       const uint8_t* x) noexcept nogil:
    """Whether the set ``x`` fits ``c`` and reaches ``goal``, summed afresh
    (the lists' sums were formed in another order)."""
    cdef Py_ssize_t q
    cdef double tw = 0.0, tv = 0.0
    for q in range(n):
        if x[q]:
            tw += w[q]
            tv += v[q]
    return tw <= c and tv >= goal


cdef inline Py_ssize_t _lists_items(Py_ssize_t n, Py_ssize_t b, Py_ssize_t h, Py_ssize_t spread,
                                    Py_ssize_t* pos) noexcept nogil:
    """The items of the two lists, ascending, into ``pos``: on either side
    of the break item b the h - spread nearest it, and ``spread`` more
    spaced evenly over the rest of that side, its ends included (fewer where
    a side has fewer items). Returns their count, at most 2h."""
    cdef Py_ssize_t near = h - spread, m = 0, i, q, last = -1
    cdef Py_ssize_t lo = b - near if b > near else 0, hi = b + near if b + near < n else n
    for i in range(spread):  # over 0..lo-1
        q = i * (lo - 1) // (spread - 1) if spread > 1 else 0
        if last < q < lo:
            pos[m] = last = q
            m += 1
    for q in range(lo, hi):
        pos[m] = q
        m += 1
    last = hi - 1
    for i in range(spread):  # over hi..n-1
        q = hi + i * (n - 1 - hi) // (spread - 1) if spread > 1 else hi
        if last < q < n:
            pos[m] = last = q
            m += 1
    return m


cdef inline bint _search(const double* w, const double* v, Py_ssize_t b, double room, double need,
                         const Py_ssize_t* pos, Py_ssize_t m, void* work, Py_ssize_t h,
                         uint32_t* bits) noexcept nogil:
    """The two-list search over the items ``pos`` (m <= 2h of them): whether
    some of them flipped (taken out before the break b, put in from it on)
    change the break solution by at most ``room`` in weight and at least
    ``need`` in value; ``bits`` gets the flips (bit i: item pos[i])."""
    cdef Py_ssize_t ma = (m + 1) // 2, mb = m // 2, i, q, ia = 0, ib = 0
    cdef double sgn
    cdef double dwa[TWO_LISTS_MAX_HALF]
    cdef double dva[TWO_LISTS_MAX_HALF]
    cdef double dwb[TWO_LISTS_MAX_HALF]
    cdef double dvb[TWO_LISTS_MAX_HALF]
    cdef Flips A, At, B, Bt
    cdef char* p = <char*>work
    p = _carve(&A, p, 1 << h)
    p = _carve(&At, p, 1 << h)
    p = _carve(&B, p, 1 << h)
    p = _carve(&Bt, p, 1 << h)
    for i in range(m):  # items pos[0], pos[2], ... in list A; pos[1], pos[3], ... in B
        q = pos[i]
        sgn = -1.0 if q < b else 1.0
        if i % 2 == 0:
            dwa[i // 2], dva[i // 2] = sgn * w[q], sgn * v[q]
        else:
            dwb[i // 2], dvb[i // 2] = sgn * w[q], sgn * v[q]
    _subsets(dwa, dva, ma, &A, &At)
    _subsets(dwb, dvb, mb, &B, &Bt)
    if not _partner(&A, 1 << ma, &B, 1 << mb, <Py_ssize_t*>p, room, need, &ia, &ib):
        return False
    bits[0] = 0
    for i in range(m):
        if (A.bits[ia] >> (i // 2) if i % 2 == 0 else B.bits[ib] >> (i // 2)) & 1:
            bits[0] |= <uint32_t>1 << i
    return True


cdef inline int two_lists(const double* w, const double* v, Py_ssize_t n, double c, double goal,
                          Py_ssize_t h, Py_ssize_t tries, uint8_t* x, void* work) noexcept nogil:
    """Whether a set that differs from the break solution only on 2h items
    (h <= TWO_LISTS_MAX_HALF) fits ``c`` and reaches ``goal``: 1 with it in
    ``x``, 0 when none was found (the set found is summed again before it is
    returned). The first of ``tries`` searches takes the 2h items nearest
    the break; the others take h/4, then h/2 of them on either side spaced
    out instead (larger flips, where the nearest cannot close the gap). With
    integer weights and values whose sums stay below 2**53 no sum rounds, so
    none is missed. ``work``: ``two_lists_bytes(h)`` bytes, reused from call
    to call (fresh memory would cost its page faults each time)."""
    cdef Py_ssize_t b = 0, m, i, t
    cdef Py_ssize_t pos[2 * TWO_LISTS_MAX_HALF]
    cdef double W = 0.0, V = 0.0
    cdef uint32_t bits = 0
    cdef bint found = False
    h = min(max(h, 0), <Py_ssize_t>TWO_LISTS_MAX_HALF)  # the workspace and ``pos`` hold no more
    tries = min(max(tries, 1), 3)  # spreads 0, h/4, h/2: at most h a side
    while b < n and W + w[b] <= c:
        W += w[b]
        V += v[b]
        b += 1
    for t in range(tries):
        m = _lists_items(n, b, h, (h * t) // 4, pos)
        found = _search(w, v, b, c - W, goal - V, pos, m, work, h, &bits)
        if found:
            break
    if not found:
        return 0
    for i in range(n):
        x[i] = i < b
    for i in range(m):
        if bits >> i & 1:
            x[pos[i]] ^= 1
    return 1 if _fits(w, v, n, c, goal, x) else 0
