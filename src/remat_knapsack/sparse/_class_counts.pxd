# cython: language_level=3
"""The class-count bound of the items below a position, compiled.

``_lines.Below`` in C, for the canonical pass, which asks it before each
decide run (multiple strongly correlated items, n=10^4: 30 times a solve,
in numpy about half the solve's time). Every item lies on one of at most
two parallel lines q v = p w + e_t; a set of a_t items of class t within a
capacity j is worth at most (p min(j, its heaviest a_t items) + sum_t e_t
a_t) / q (a class below its line counts e_t = 0), and its lightest a_t
items must fit. The maximum over count pairs, for the items at positions
below k: per class the weights of those items, ascending, and their prefix
sums; for each count a of the first class the most items b of the second
that still fit, which only falls as a grows (two pointers). O(n) a
question, no sort: each class is sorted by weight once.

Exact: ``_lines`` forms the lines only when every sum involved is an
integer below 2**53, so these float64 sums and products are exact.
"""

from libc.math cimport floor


cdef struct ClassCounts:
    Py_ssize_t classes       # 1 or 2
    const double* w[2]       # each class's weights, ascending
    const Py_ssize_t* pos[2]  # ... and their items' positions
    Py_ssize_t n[2]          # ... how many
    double* pre[2]           # scratch, n[t] + 1 each: prefix sums of a question's weights
    double e[2]              # each class's level, or 0 when it is negative
    double p                 # the lines' slope p / q
    double q


cdef inline Py_ssize_t cc_gather(ClassCounts* cc, Py_ssize_t t, Py_ssize_t k) noexcept nogil:
    """Prefix sums (cc.pre[t]) of class t's weights at positions below k,
    ascending. Returns how many there are."""
    cdef Py_ssize_t i, m = 0
    cdef double acc = 0.0
    cc.pre[t][0] = 0.0
    for i in range(cc.n[t]):
        if cc.pos[t][i] < k:
            acc += cc.w[t][i]
            m += 1
            cc.pre[t][m] = acc
    return m


cdef inline double cc_bound(ClassCounts* cc, Py_ssize_t k, double j) noexcept nogil:
    """floor(max (p min(cap, heaviest) + e_0 a + e_1 b) / q) over the count
    pairs (a, b) whose lightest items fit cap = floor(j), for the items at
    positions below k (``_lines._best``)."""
    cdef double cap = floor(j), best = 0.0, fill, val
    cdef Py_ssize_t m0 = cc_gather(cc, 0, k), m1 = 0, a, b = 0
    cdef const double* P0 = cc.pre[0]
    cdef const double* P1 = cc.pre[1]
    if cc.classes == 2:
        m1 = cc_gather(cc, 1, k)
        while b < m1 and P1[b + 1] <= cap:
            b += 1
    a = 0
    while a <= m0 and P0[a] <= cap:
        if cc.classes == 2:
            while b > 0 and P0[a] + P1[b] > cap:
                b -= 1
            fill = P0[m0] - P0[m0 - a] + P1[m1] - P1[m1 - b]
        else:
            fill = P0[m0] - P0[m0 - a]
        val = cc.p * (fill if fill < cap else cap) + cc.e[0] * a + (cc.e[1] * b if cc.classes == 2 else 0.0)
        if val > best:
            best = val
        a += 1
    return <double>(<long long>best // <long long>cc.q)  # integers below 2**53: exact, and best >= 0
