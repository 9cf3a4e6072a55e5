# cython: language_level=3
"""The canonical set by one forward Pareto DP in index order.

Private: the fallback of ``_sparse``'s canonical pass, for item sets where
proving items needed one decide run at a time costs too much (Pisinger's
circle items: many sets within a few units of OPT, so each run that must
exhaust its search keeps millions of states).

Items 0..m-1 in index order, capacity ``cap``, and ``target``: a value
some set reaches (OPT of these items). L_i, the Pareto list of (weight,
value) of subsets of items < i, is kept only where a state can still
complete to ``target``: a state is dropped when V + LP(items >= i, cap - W)
cannot reach it (Dantzig's bound of the suffix; its items in efficiency
order are filtered from one order sorted once, and one pointer walks them
as the states' weights grow). Every state that completes to a set reaching
``target`` survives, so dp_knapsack's backtrack runs on the lists: from the
last item down, item i is left out iff L_i holds a state within the
capacity left that reaches the value left. Memory: the lists are stored at
checkpoints every B = sqrt(m) items, and the backward pass recomputes one
segment of B lists at a time (2x the forward work).

Time O(m^2 + states) (the suffix orders, and the merges); memory O(m +
sqrt(m) max |L_i|). The states of one list are 16 bytes each.

>>> import numpy as np
>>> code, x = canonical(np.array([2.0, 3.0, 5.0]), np.array([2.0, 3.0, 5.0]), 5.0, 5.0, True, 0.0)
>>> code, x.tolist()  # {0, 1} and {2} both reach 5: the backtrack keeps the lower items
(0, [1, 1, 0])
"""

import numpy as np

from libc.math cimport fabs, floor, sqrt
from libc.stdlib cimport calloc, free, malloc, qsort
from libc.string cimport memcpy, memset

from ._interrupt cimport CHECK_EVERY, interrupted, raise_pending
from ._realloc cimport grow

cdef double ABS_SLACK = 1e-9   # absolute part of the bound's allowance
cdef double REL_LP = 1e-13     # per unit of the values' total


cdef struct Frame:
    # The fixed question and the scratch of the suffix bound.
    const double* w
    const double* v
    Py_ssize_t m
    double cap
    double target
    int integral
    double tol
    double slack             # rounding allowance of a state's bound
    Py_ssize_t* eo           # the items by efficiency, descending (m)
    double* cw               # the suffix's items in that order: prefix sums of weights (m + 1),
    double* cv               # of values (m + 1),
    Py_ssize_t* ci           # and the items themselves (m)
    Py_ssize_t nq            # how many items the suffix holds
    double* W                # two merge buffers of ``room`` states each
    double* V
    double* W2
    double* V2
    Py_ssize_t room
    Py_ssize_t held          # states stored (checkpoints, a segment, the merge buffers)
    Py_ssize_t max_states
    Py_ssize_t work          # states and items touched (against the budget)
    Py_ssize_t ticks
    bint stop


cdef struct Stored:
    double* W
    double* V
    Py_ssize_t n


cdef struct Eff:
    double e
    Py_ssize_t i


cdef int _by_eff_desc(const void* a, const void* b) noexcept nogil:
    cdef const Eff* x = <const Eff*>a
    cdef const Eff* y = <const Eff*>b
    if x.e != y.e:
        return -1 if x.e > y.e else 1
    return (x.i > y.i) - (x.i < y.i)


cdef void _suffix(Frame* f, Py_ssize_t i) noexcept nogil:
    """The items >= i in efficiency order, with prefix sums: O(m)."""
    cdef Py_ssize_t p, q = 0, it
    f.cw[0] = 0
    f.cv[0] = 0
    for p in range(f.m):
        it = f.eo[p]
        if it >= i:
            f.ci[q] = it
            f.cw[q + 1] = f.cw[q] + f.w[it]
            f.cv[q + 1] = f.cv[q] + f.v[it]
            q += 1
    f.nq = q
    f.work += f.m


cdef Py_ssize_t _prune(Frame* f, double* W, double* V, Py_ssize_t n) noexcept nogil:
    """Keep the states (ascending W) whose value plus the suffix's Dantzig
    bound within cap - W can reach the target; in place. The suffix must be
    ready (``_suffix``). One pointer: as W grows the room left shrinks."""
    cdef Py_ssize_t s, out = 0, p = f.nq, it
    cdef double room, ub
    for s in range(n):
        room = f.cap - W[s]
        while p > 0 and f.cw[p] > room:
            p -= 1
        ub = V[s] + f.cv[p]
        if p < f.nq:
            it = f.ci[p]
            ub += (room - f.cw[p]) * (f.v[it] / f.w[it])
        ub += f.slack
        if f.integral:
            ub = floor(ub)
        if ub >= f.target - f.tol:
            W[out] = W[s]
            V[out] = V[s]
            out += 1
    return out


cdef Py_ssize_t _step(Frame* f, const double* W, const double* V, Py_ssize_t n, Py_ssize_t i,
                      double* W2, double* V2) noexcept nogil:
    """L_{i+1} from L_i (``W``, ``V``, n states): the states without item i
    and with it (within cap) merged by weight, dominated ones dropped, then
    pruned against the suffix i + 1. Returns its length."""
    cdef Py_ssize_t a = 0, b = 0, out = 0
    cdef double wi = f.w[i], vi = f.v[i], Wx, Vx, best = -1.0
    cdef bint take_a
    while a < n or b < n:
        if b >= n or W[b] + wi > f.cap:
            if a >= n:
                break
            take_a = True
        elif a >= n:
            take_a = False
        else:
            take_a = W[a] < W[b] + wi or (W[a] == W[b] + wi and V[a] >= V[b] + vi)
        if take_a:
            Wx = W[a]
            Vx = V[a]
            a += 1
        else:
            Wx = W[b] + wi
            Vx = V[b] + vi
            b += 1
        if Vx > best:  # values strictly increase along the list
            best = Vx
            W2[out] = Wx
            V2[out] = Vx
            out += 1
    f.work += a + b
    _suffix(f, i + 1)
    return _prune(f, W2, V2, out)


cdef int _room(Frame* f, Py_ssize_t need) noexcept nogil:
    """Merge buffers for ``need`` states (doubling), within the state limit.
    -1 when over it or when malloc fails."""
    cdef Py_ssize_t r = f.room if f.room > 0 else 64
    cdef size_t r8
    if need <= f.room:
        return 0
    while r < need:
        r *= 2
    if f.held + 2 * (r - f.room) > f.max_states:
        return -1
    r8 = r * sizeof(double)
    if (grow(<void**>&f.W, r8) < 0 or grow(<void**>&f.V, r8) < 0
            or grow(<void**>&f.W2, r8) < 0 or grow(<void**>&f.V2, r8) < 0):
        return -1
    f.held += 2 * (r - f.room)
    f.room = r
    return 0


cdef int _store(Frame* f, Stored* s, const double* W, const double* V, Py_ssize_t n) noexcept nogil:
    """A copy of a list, counted against the state limit. -1 when over it."""
    if f.held + n > f.max_states:
        return -1
    s.W = <double*>malloc((n if n > 0 else 1) * sizeof(double))
    s.V = <double*>malloc((n if n > 0 else 1) * sizeof(double))
    if s.W == NULL or s.V == NULL:
        return -1
    s.n = n
    f.held += n
    memcpy(s.W, W, n * sizeof(double))
    memcpy(s.V, V, n * sizeof(double))
    return 0


cdef void _drop(Frame* f, Stored* s, Py_ssize_t k) noexcept nogil:
    """Free k stored lists (calloc'd: unused ones are NULL)."""
    cdef Py_ssize_t i
    for i in range(k):
        f.held -= s[i].n
        free(s[i].W)
        free(s[i].V)
        s[i].W = s[i].V = NULL
        s[i].n = 0


cdef double _best_within(const Stored* s, double j) noexcept nogil:
    """The largest value of a state of weight <= j (-1 if none): values
    increase with weight, so it is the last such state (binary search)."""
    cdef Py_ssize_t lo = 0, hi = s.n, mid
    while lo < hi:
        mid = (lo + hi) // 2
        if s.W[mid] <= j:
            lo = mid + 1
        else:
            hi = mid
    return s.V[lo - 1] if lo > 0 else -1.0


cdef Py_ssize_t _advance(Frame* f, const Stored* start, Py_ssize_t i0, Py_ssize_t i1,
                         Stored* keep, Py_ssize_t budget) noexcept nogil:
    """From L_{i0} (``start``) compute L_{i0+1} .. L_{i1}; keep[i - i0 - 1]
    gets L_i when ``keep`` is not NULL, else only L_{i1} is kept in ``f.W``.
    Returns the length of L_{i1}, or FWD_OVER / FWD_INTERRUPTED."""
    cdef Py_ssize_t i, n = start.n
    cdef double* t
    if _room(f, 2 * n + 2) < 0:
        return FWD_OVER
    memcpy(f.W, start.W, n * sizeof(double))
    memcpy(f.V, start.V, n * sizeof(double))
    for i in range(i0, i1):
        if _room(f, 2 * n + 2) < 0:
            return FWD_OVER
        n = _step(f, f.W, f.V, n, i, f.W2, f.V2)
        t = f.W
        f.W = f.W2
        f.W2 = t
        t = f.V
        f.V = f.V2
        f.V2 = t
        if keep != NULL and _store(f, &keep[i - i0], f.W, f.V, n) < 0:
            return FWD_OVER
        if f.work > budget:
            return FWD_OVER
        f.ticks += n + f.m
        if f.ticks >= CHECK_EVERY:
            f.ticks = 0
            if interrupted():
                f.stop = 1
                return FWD_INTERRUPTED
    return n


cdef int _setup(Frame* f, const double* w, const double* v, Py_ssize_t m, double cap, double target,
                int integral, double tol, Py_ssize_t max_states) noexcept nogil:
    """The frame: the items by efficiency (sorted once), the scratch arrays,
    the bound's allowance. -1 when malloc fails."""
    cdef Py_ssize_t i
    cdef double total = 0
    cdef Eff* e = <Eff*>malloc(m * sizeof(Eff))
    memset(f, 0, sizeof(Frame))
    f.w = w
    f.v = v
    f.m = m
    f.cap = cap
    f.target = target
    f.integral = integral
    f.tol = tol
    f.max_states = max_states
    f.eo = <Py_ssize_t*>malloc(m * sizeof(Py_ssize_t))
    f.ci = <Py_ssize_t*>malloc(m * sizeof(Py_ssize_t))
    f.cw = <double*>malloc((m + 1) * sizeof(double))
    f.cv = <double*>malloc((m + 1) * sizeof(double))
    if e == NULL or f.eo == NULL or f.ci == NULL or f.cw == NULL or f.cv == NULL:
        free(e)
        return -1
    for i in range(m):
        e[i].e = v[i] / w[i] if w[i] > 0 else 1e300
        e[i].i = i
        total += fabs(v[i])
    qsort(e, m, sizeof(Eff), _by_eff_desc)
    for i in range(m):
        f.eo[i] = e[i].i
    free(e)
    f.slack = ABS_SLACK + REL_LP * (fabs(target) + total)
    return 0


cdef void _teardown(Frame* f) noexcept nogil:
    free(f.eo)
    free(f.ci)
    free(f.cw)
    free(f.cv)
    free(f.W)
    free(f.V)
    free(f.W2)
    free(f.V2)


cdef Py_ssize_t _backtrack(Frame* f, Stored* ck, Py_ssize_t nck, Py_ssize_t B, Stored* seg,
                           Py_ssize_t budget, unsigned char* x) noexcept nogil:
    """dp_knapsack's backtrack over the lists, one segment of B at a time
    from the last: item i is left out iff L_i reaches the value left within
    the capacity left. FWD_OVER if the lists are inconsistent with the target
    (it was not reachable)."""
    cdef Py_ssize_t c, s0, s1, i, r
    cdef double j = f.cap, tgt = f.target
    cdef const Stored* L
    for c in range(nck - 1, -1, -1):
        s0 = c * B
        s1 = s0 + B if s0 + B < f.m else f.m
        r = _advance(f, &ck[c], s0, s1 - 1, seg, budget)
        if r < 0:
            _drop(f, seg, B)
            return r
        for i in range(s1 - 1, s0 - 1, -1):
            L = &ck[c] if i == s0 else &seg[i - s0 - 1]
            if _best_within(L, j) >= tgt - f.tol:
                x[i] = 0
            else:
                x[i] = 1
                j -= f.w[i]
                tgt -= f.v[i]
        _drop(f, seg, B)
    if j < 0 or tgt > f.tol + f.slack:
        return FWD_OVER
    return FWD_DONE


cdef Py_ssize_t forward_canonical(const double* w, const double* v, Py_ssize_t m, double cap,
                                  double target, int integral, double tol, Py_ssize_t budget,
                                  Py_ssize_t max_states, Py_ssize_t* used,
                                  unsigned char* x) noexcept nogil:
    """dp_knapsack's set of items 0..m-1 within ``cap``, given ``target``,
    the best value they reach (OPT): ``x`` gets it. At most ``budget`` units
    of work (states merged, items scanned) and ``max_states`` states held,
    else FWD_OVER (``x`` then holds nothing useful). ``used`` gets the work done."""
    cdef Frame f
    cdef Py_ssize_t B, nck, c, n, res = FWD_OVER
    cdef Stored* ck = NULL
    cdef Stored* seg = NULL
    cdef double zero = 0
    cdef Stored first
    used[0] = 0
    if m == 0:
        return FWD_DONE
    if _setup(&f, w, v, m, cap, target, integral, tol, max_states) < 0:
        _teardown(&f)
        return FWD_OVER
    B = <Py_ssize_t>sqrt(<double>m) + 1
    nck = (m - 1) // B + 1  # checkpoints L_0, L_B, L_2B, ... (all < m)
    ck = <Stored*>calloc(nck, sizeof(Stored))
    seg = <Stored*>calloc(B, sizeof(Stored))
    first.W = &zero
    first.V = &zero
    first.n = 1
    if ck != NULL and seg != NULL and _store(&f, &ck[0], first.W, first.V, 1) == 0:
        res = FWD_DONE
        for c in range(1, nck):
            n = _advance(&f, &ck[c - 1], (c - 1) * B, c * B, NULL, budget)
            if n < 0 or _store(&f, &ck[c], f.W, f.V, n) < 0:
                res = n if n < 0 else FWD_OVER
                break
        if res == FWD_DONE:
            res = _backtrack(&f, ck, nck, B, seg, budget, x)
    used[0] = f.work
    if ck != NULL:
        _drop(&f, ck, nck)
    free(ck)
    free(seg)
    _teardown(&f)
    return res


def canonical(const double[::1] w, const double[::1] v, double cap, double target, bint integral,
              double tol, Py_ssize_t budget=1 << 60, Py_ssize_t max_states=1 << 40):
    """``forward_canonical`` on arrays, for tests: (result code, the set as
    a uint8 array; zeros unless the code is FWD_DONE = 0)."""
    cdef Py_ssize_t m = w.shape[0], used = 0, r
    x_a = np.zeros(m, dtype=np.uint8)
    cdef unsigned char[::1] x = x_a
    if m == 0:
        return 0, x_a
    with nogil:
        r = forward_canonical(&w[0], &v[0], m, cap, target, integral, tol, budget, max_states, &used, &x[0])
    if r == FWD_INTERRUPTED:
        raise_pending()
    if r != FWD_DONE:
        x_a[:] = 0
    return r, x_a
