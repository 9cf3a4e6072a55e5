# cython: language_level=3
"""Lower bounds by pairing DP states with one item outside the core.

Martello, Pisinger and Toth ("Dynamic programming and strong bounds for the
0-1 knapsack problem", Management Science 45, 1999) improve the incumbent of
an expanding-core DP by completing each state with one item the core has not
reached yet: a state that fits gains the most valuable item after the core
whose weight fits its slack; a state over the capacity sheds the least
valuable item before the core that is heavy enough. On subset-sum-like items
(subset sum, strongly correlated, profit ceiling, circle) a few thousand
states paired with n items reach the upper bound, where the DP alone needs
millions of states.

A pass is O(n + states): the run's items are sorted by weight once (on first
use, a radix sort, O(n)); each pass filters them by core position, takes running
maxima (adds) or minima (removes) of their values, and sweeps the states,
which are sorted by weight, with one pointer.
"""

from libc.math cimport INFINITY
from libc.stdint cimport int32_t
from libc.stdlib cimport free, malloc

from ._radix cimport sort_ascending


cdef struct Pairs:
    Py_ssize_t* byw      # the run's items by ascending weight (NULL until first used)
    double* key          # weights of the items eligible in this pass, ascending
    double* best         # best value among them: prefix max (adds), suffix min (removes)
    Py_ssize_t* arg      # the item holding best[m]
    Py_ssize_t last      # states at the last pass (the next waits for twice as many)


cdef struct Pair:
    Py_ssize_t state     # index of the paired state in the list
    Py_ssize_t item      # the item added (after the core) or removed (before it)
    double value         # the pair's value


cdef inline void pairs_init(Pairs* pr) noexcept nogil:
    pr.byw = NULL
    pr.key = NULL
    pr.best = NULL
    pr.arg = NULL
    pr.last = 0


cdef inline void pairs_free(Pairs* pr) noexcept nogil:
    free(pr.byw)
    free(pr.key)
    free(pr.best)
    free(pr.arg)
    pairs_init(pr)


cdef inline bint _ascending(const double* w, Py_ssize_t n) noexcept nogil:
    """Whether w[0..n) never falls (then it is its own stable sort)."""
    cdef Py_ssize_t i
    for i in range(1, n):
        if w[i] < w[i - 1]:
            return False
    return True


cdef inline int _pairs_setup(const double* w, Py_ssize_t n, Pairs* pr,
                             const Py_ssize_t* by_weight) noexcept nogil:
    """The items by weight: copied from ``by_weight`` when the caller has
    that order, the run order itself when its weights never fall (items in
    efficiency order on a line v = w + D, D > 0: strongly correlated), both
    O(n), else sorted (``_radix``); -1 if out of memory."""
    cdef Py_ssize_t i
    pr.byw = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    pr.key = <double*>malloc(n * sizeof(double))
    pr.best = <double*>malloc(n * sizeof(double))
    pr.arg = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    if pr.byw == NULL or pr.key == NULL or pr.best == NULL or pr.arg == NULL:
        return -1
    if by_weight != NULL:
        for i in range(n):
            pr.byw[i] = by_weight[i]
        return 0
    if _ascending(w, n):
        for i in range(n):
            pr.byw[i] = i
        return 0
    return sort_ascending(w, n, pr.byw)


cdef inline Py_ssize_t _pair_adds(const double* w, const double* v, Py_ssize_t n, double c,
                                  Py_ssize_t t, const double* W, const double* P, const int32_t* K,
                                  int32_t need, Py_ssize_t cnt, Pairs* pr, Pair* out) noexcept nogil:
    """Fitting states (W <= c) plus the best item j >= t with w_j <= c - W
    (only states whose K holds the bits ``need``). Improves ``out`` (best
    value so far); returns the number of states seen."""
    cdef Py_ssize_t m, j, na = 0, q, p
    for m in range(n):
        j = pr.byw[m]
        if j >= t:
            pr.key[na] = w[j]
            if na == 0 or v[j] > pr.best[na - 1]:
                pr.best[na] = v[j]
                pr.arg[na] = j
            else:
                pr.best[na] = pr.best[na - 1]
                pr.arg[na] = pr.arg[na - 1]
            na += 1
    p = na - 1
    q = 0
    while q < cnt and W[q] <= c and p >= 0:
        while p >= 0 and pr.key[p] > c - W[q]:
            p -= 1
        if p >= 0 and P[q] + pr.best[p] > out.value and (K[q] & need) == need:
            out.value = P[q] + pr.best[p]
            out.state = q
            out.item = pr.arg[p]
        q += 1
    return q


cdef inline void _pair_removes(const double* w, const double* v, Py_ssize_t n, double c,
                               Py_ssize_t s, const double* W, const double* P, const int32_t* K,
                               int32_t need, Py_ssize_t q0, Py_ssize_t cnt, Pairs* pr,
                               Pair* out) noexcept nogil:
    """States over the capacity (from ``q0``, ascending W) minus the least
    valuable item i <= s with w_i >= W - c (states as in ``_pair_adds``)."""
    cdef Py_ssize_t m, i, nr = 0, q, p
    for m in range(n):
        i = pr.byw[m]
        if i <= s:
            pr.key[nr] = w[i]
            nr += 1
    # Suffix minima, walking the same filtered order backwards.
    m = n - 1
    p = nr - 1
    while p >= 0:
        i = pr.byw[m]
        m -= 1
        if i > s:
            continue
        if p == nr - 1 or v[i] < pr.best[p + 1]:
            pr.best[p] = v[i]
            pr.arg[p] = i
        else:
            pr.best[p] = pr.best[p + 1]
            pr.arg[p] = pr.arg[p + 1]
        p -= 1
    p = 0
    for q in range(q0, cnt):
        if W[q] <= c:
            continue
        while p < nr and pr.key[p] < W[q] - c:
            p += 1
        if p >= nr:
            break
        if P[q] - pr.best[p] > out.value and (K[q] & need) == need:
            out.value = P[q] - pr.best[p]
            out.state = q
            out.item = pr.arg[p]


cdef inline int pair_pass(const double* w, const double* v, Py_ssize_t n, double c,
                          Py_ssize_t s, Py_ssize_t t, const double* W, const double* P,
                          const int32_t* K, int32_t need, Py_ssize_t cnt, Pairs* pr, Pair* out,
                          const Py_ssize_t* by_weight) noexcept nogil:
    """One pass over the states (sorted by weight) of a core holding items
    s+1 .. t-1: ``out`` gets the most valuable pair (``out.item`` -1 if no
    state has one) among the states whose K holds the bits ``need`` (0:
    all). ``by_weight``: the items by ascending weight, or NULL (then the
    first pass sorts them). Returns 0, or -1 if out of memory."""
    cdef Py_ssize_t q0
    out.value = -INFINITY
    out.item = -1
    out.state = -1
    if pr.byw == NULL and _pairs_setup(w, n, pr, by_weight) < 0:
        return -1
    pr.last = cnt
    q0 = _pair_adds(w, v, n, c, t, W, P, K, need, cnt, pr, out)
    if s >= 0:
        _pair_removes(w, v, n, c, s, W, P, K, need, q0, cnt, pr, out)
    return 0
