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


cdef struct Flip:
    # A subset of one list's items, as a change to the break solution.
    double dw       # its weight change
    double dv       # its value change
    uint32_t bits   # its items (bit i: the list's item i)


cdef inline Py_ssize_t _subsets(const double* dw, const double* dv, Py_ssize_t m,
                                Flip* out, Flip* tmp) noexcept nogil:
    """Every subset of m items (weight changes ``dw``, value changes ``dv``)
    into ``out`` by ascending weight change: the list so far merged with
    itself shifted by the next item, 2^m entries. ``tmp``: as large."""
    cdef Py_ssize_t size = 1, i, a, b, o
    cdef Flip* cur = out
    cdef Flip* nxt = tmp
    cdef Flip* t
    cur[0].dw = 0.0
    cur[0].dv = 0.0
    cur[0].bits = 0
    for i in range(m):
        a = b = o = 0
        while a < size or b < size:
            if b == size or (a < size and cur[a].dw <= cur[b].dw + dw[i]):
                nxt[o] = cur[a]
                a += 1
            else:
                nxt[o].dw = cur[b].dw + dw[i]
                nxt[o].dv = cur[b].dv + dv[i]
                nxt[o].bits = cur[b].bits | (<uint32_t>1 << i)
                b += 1
            o += 1
        size *= 2
        t = cur
        cur = nxt
        nxt = t
    if cur != out:
        memcpy(out, cur, size * sizeof(Flip))
    return size


cdef inline bint _partner(const Flip* A, Py_ssize_t na, const Flip* B, Py_ssize_t nb,
                          Py_ssize_t* best, double room, double need,
                          Py_ssize_t* ia, Py_ssize_t* ib) noexcept nogil:
    """A pair with A[a].dw + B[b].dw <= room and A[a].dv + B[b].dv >= need,
    into ia, ib. Both lists ascend in dw, so the room A[a] leaves for B only
    shrinks along A; ``best[i]`` is filled here with the index of the largest
    dv among B[0..i]."""
    cdef Py_ssize_t a, pb = nb - 1, i
    best[0] = 0
    for i in range(1, nb):
        best[i] = i if B[i].dv > B[best[i - 1]].dv else best[i - 1]
    for a in range(na):
        while pb >= 0 and B[pb].dw > room - A[a].dw:
            pb -= 1
        if pb < 0:
            return False
        if A[a].dv + B[best[pb]].dv >= need:
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


cdef inline Py_ssize_t two_lists_bytes(Py_ssize_t h) noexcept nogil:
    """The workspace ``two_lists`` needs for half size h: both lists and
    their merge buffers, and the second list's running maxima."""
    return (4 << h) * sizeof(Flip) + (1 << h) * sizeof(Py_ssize_t)


cdef inline int two_lists(const double* w, const double* v, Py_ssize_t n, double c, double goal,
                          Py_ssize_t h, uint8_t* x, void* work) noexcept nogil:
    """Whether a set that differs from the break solution only on the 2h
    items nearest the break (h <= TWO_LISTS_MAX_HALF) fits ``c`` and reaches
    ``goal``: 1 with it in ``x``, 0 when none does (or none was proved to:
    the set found is summed again before it is returned). With integer
    weights and values whose sums stay below 2**53 no sum rounds, so none is
    missed. ``work``: ``two_lists_bytes(h)`` bytes, reused from call to call
    (fresh memory would cost its page faults each time)."""
    cdef Py_ssize_t b = 0, lo, m, ma, mb, i, q, ia = 0, ib = 0
    cdef double W = 0.0, V = 0.0, sgn
    cdef double dwa[TWO_LISTS_MAX_HALF]
    cdef double dva[TWO_LISTS_MAX_HALF]
    cdef double dwb[TWO_LISTS_MAX_HALF]
    cdef double dvb[TWO_LISTS_MAX_HALF]
    cdef Flip* buf
    cdef Py_ssize_t* best
    cdef bint found
    while b < n and W + w[b] <= c:
        W += w[b]
        V += v[b]
        b += 1
    lo = b - h if b > h else 0
    m = (b + h if b + h < n else n) - lo
    ma = (m + 1) // 2  # items lo, lo + 2, ... in list A; lo + 1, lo + 3, ... in B
    mb = m // 2
    for i in range(m):
        q = lo + i
        sgn = -1.0 if q < b else 1.0  # before the break: taken out; from it on: put in
        if i % 2 == 0:
            dwa[i // 2], dva[i // 2] = sgn * w[q], sgn * v[q]
        else:
            dwb[i // 2], dvb[i // 2] = sgn * w[q], sgn * v[q]
    buf = <Flip*>work
    best = <Py_ssize_t*>(buf + (2 << ma) + (2 << mb))
    _subsets(dwa, dva, ma, buf, buf + (1 << ma))
    _subsets(dwb, dvb, mb, buf + (2 << ma), buf + (2 << ma) + (1 << mb))
    found = _partner(buf, 1 << ma, buf + (2 << ma), 1 << mb, best, c - W, goal - V, &ia, &ib)
    if found:
        for q in range(n):
            x[q] = q < b
        for i in range(ma):
            if buf[ia].bits >> i & 1:
                x[lo + 2 * i] ^= 1
        for i in range(mb):
            if buf[(2 << ma) + ib].bits >> i & 1:
                x[lo + 2 * i + 1] ^= 1
        found = _fits(w, v, n, c, goal, x)
    return 1 if found else 0
