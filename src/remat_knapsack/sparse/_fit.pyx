# cython: language_level=3
"""The cardinality multipliers' line and count term, compiled.

Private; ``_solver._multipliers`` is its Python face and says what the
multipliers are for. ``line_fit`` fits v = lam w + mu0 to the items around
the break by least squares and says whether they lie on it;
``count_multiplier`` is mu, the k-th largest reduced profit v - lam w,
clamped at 0, with a count first that skips the selection when the clamp
wins. ``more_levels`` is ``_lines``' quick rejection: whether a few items,
spread over the arrays, already lie on more than two parallel lines. The first two are O(n) (the
selection expected O(n), ``_select.kth_largest``), ``more_levels`` O(m most)
on m items; numpy took a dozen calls and temporaries for the same, 0.02 ms
at 10^3 items.

The GIL is released in the passes.

>>> import numpy as np
>>> w = np.array([4.0, 3.0, 2.0, 1.0])
>>> line_fit(w, 2 * w + 5, 0, 4, 1e-9)  # on the line v = 2 w + 5
(2.0, 5.0, True)
>>> count_multiplier(w, np.array([9.0, 7.0, 6.0, 1.0]), 1.0, 2, True)  # d = 5, 4, 4, 0: the 2nd largest
4.0
>>> more_levels(w, np.array([9.0, 7.0, 6.0, 1.0]), 1.0, 1.0, 4, 2)  # v - w = 5, 4, 4, 0: three levels
True
"""

from libc.math cimport fabs
from libc.stdint cimport int64_t

from ._select cimport kth_largest

#: Integers below this are exact in float64 (and in int64).
cdef double EXACT_INT = 9007199254740992.0


cdef void _means(const double* x, const double* y, Py_ssize_t m, double* xm, double* ym) noexcept nogil:
    cdef Py_ssize_t i
    cdef double sx = 0.0, sy = 0.0
    for i in range(m):
        sx += x[i]
        sy += y[i]
    xm[0], ym[0] = sx / m, sy / m


cdef double _slope(const double* x, const double* y, Py_ssize_t m, double xm, double ym) noexcept nogil:
    """The least-squares slope through (x, y) about the means; 0 when the x do not vary."""
    cdef Py_ssize_t i
    cdef double sxx = 0.0, sxy = 0.0, dx
    for i in range(m):
        dx = x[i] - xm
        sxx += dx * dx
        sxy += dx * (y[i] - ym)
    return sxy / sxx if sxx > 0 else 0.0


cdef bint _on_line(const double* x, const double* y, Py_ssize_t m, double lam, double mu,
                   double tol) noexcept nogil:
    """Whether every |y - lam x - mu| is within ``tol`` times the largest |y|."""
    cdef Py_ssize_t i
    cdef double off = 0.0, top = 0.0
    for i in range(m):
        off = max(off, fabs(y[i] - lam * x[i] - mu))
        top = max(top, fabs(y[i]))
    return off <= tol * top


def line_fit(const double[::1] ws, const double[::1] vs, Py_ssize_t lo, Py_ssize_t hi, double tol):
    """(lam, mu0, whether those items lie on the line) of the least-squares
    line v = lam w + mu0 through the items lo..hi - 1; (0, 0, False) when
    its slope is not positive (no line to count by)."""
    cdef Py_ssize_t m = hi - lo
    cdef double xm = 0.0, ym = 0.0, lam = 0.0, mu0 = 0.0
    cdef bint on = False
    if not (0 <= lo < hi <= ws.shape[0]) or vs.shape[0] != ws.shape[0]:
        raise ValueError(f"line_fit: need 0 <= lo < hi <= {ws.shape[0]} over equal arrays, got {lo}, {hi}")
    with nogil:
        _means(&ws[lo], &vs[lo], m, &xm, &ym)
        lam = _slope(&ws[lo], &vs[lo], m, xm, ym)
        if lam > 0:
            mu0 = ym - lam * xm
            on = _on_line(&ws[lo], &vs[lo], m, lam, mu0, tol)
    if not (lam > 0):
        return 0.0, 0.0, False
    return lam, mu0, on


cdef Py_ssize_t _count_reduced(const double* w, const double* v, Py_ssize_t n, double lam, bint positive,
                               double* d) noexcept nogil:
    """d = v - lam w into ``d``; returns how many are > 0 (``positive``) or >= 0."""
    cdef Py_ssize_t i, count = 0
    for i in range(n):
        d[i] = v[i] - lam * w[i]
        count += (d[i] > 0) if positive else (d[i] >= 0)
    return count


def count_multiplier(const double[::1] ws, const double[::1] vs, double lam, Py_ssize_t k, bint upper):
    """mu for count k: the k-th largest d = vs - lam ws, clamped at 0 from
    below (``upper``: k is the most items a set holds) or from above (k is
    the fewest that can reach the goal); 0 unless 0 < k < n."""
    cdef Py_ssize_t n = ws.shape[0], count = 0
    cdef double mu = 0.0
    if vs.shape[0] != n:
        raise ValueError(f"count_multiplier: {n} weights but {vs.shape[0]} values")
    if not (0 < k < n):
        return 0.0
    cdef double[::1] d = ws.copy()  # the reduced profits; the selection reorders them
    with nogil:
        count = _count_reduced(&ws[0], &vs[0], n, lam, upper, &d[0])
        # The k-th largest is > 0 exactly when k of them are (upper), < 0 when fewer than k are >= 0.
        if (count >= k) if upper else (count < k):
            mu = kth_largest(&d[0], n, k)
    return mu


cdef bint _more_levels(const double* w, const double* v, Py_ssize_t n, double p, double q, Py_ssize_t m,
                       Py_ssize_t most) noexcept nogil:
    """``more_levels`` on n items, 0 <= most <= 8."""
    cdef Py_ssize_t i, j, t, seen = 0
    cdef double e
    cdef double levels[8]
    m = min(m, n)
    for t in range(m):
        i = t * n // m  # m <= n: distinct positions, the first and last spans alike
        e = q * v[i] - p * w[i]
        for j in range(seen):
            if levels[j] == e:
                break
        else:
            if seen == most:
                return True
            levels[seen] = e
            seen += 1
    return False


def more_levels(const double[::1] w, const double[::1] v, double p, double q, Py_ssize_t m, Py_ssize_t most):
    """Whether m items spread evenly over the arrays (positions i n // m;
    every item when m >= n) take more than ``most`` distinct values of
    q v - p w: O(m most), no temporaries. Spread, not the first m: in
    efficiency order a class can sit at one end (profit ceiling items,
    v = 3 ceil(w / 3): the items with 3 | w, the third line, come last)."""
    if not (0 <= most <= 8):
        raise ValueError(f"more_levels: most must be in [0, 8], got {most}")
    if m < 0:
        raise ValueError(f"more_levels: m must be >= 0, got {m}")
    return _more_levels(&w[0] if w.shape[0] else NULL, &v[0] if v.shape[0] else NULL,
                        min(w.shape[0], v.shape[0]), p, q, m, most)


cdef int64_t _gcd(int64_t a, int64_t b) noexcept nogil:
    cdef int64_t t
    while b:
        t = a % b
        a = b
        b = t
    return a


def line_slopes(const double[::1] w, const double[::1] v, Py_ssize_t near, Py_ssize_t scan,
                Py_ssize_t probes, Py_ssize_t sample):
    """The slopes (p, q) in lowest terms, positive, of the lines through
    pairs of ``probes`` items of distinct weights taken from the ``scan``
    items at ``near`` - 1 on, in pair order, that leave the ``sample``
    items of ``more_levels`` on at most two parallel lines: the candidates
    of ``_lines.find_lines``, whose full check follows. Weights and values
    are read as integers (truncated); none when a probe's are 2**53 or more
    (no line could be exact there). O(scan probes + probes**2 sample)."""
    cdef Py_ssize_t n = min(w.shape[0], v.shape[0]), lo = max(0, near - 1), i, t, a, b, m = 0
    cdef Py_ssize_t idx[16]
    cdef int64_t dw, dv, g
    cdef bint seen
    if not 0 <= probes <= 16:
        raise ValueError(f"line_slopes: probes must be in [0, 16], got {probes}")
    out = []
    for i in range(lo, min(n, lo + scan)):
        if m == probes:
            break
        if not (fabs(w[i]) < EXACT_INT and fabs(v[i]) < EXACT_INT):
            return out
        seen = False
        for t in range(m):
            seen = seen or w[idx[t]] == w[i]
        if not seen:
            idx[m] = i
            m += 1
    for a in range(m):
        for b in range(a + 1, m):
            dw = <int64_t>w[idx[b]] - <int64_t>w[idx[a]]
            dv = <int64_t>v[idx[b]] - <int64_t>v[idx[a]]
            if dw == 0 or dv == 0 or (dw > 0) != (dv > 0):
                continue
            dw, dv = abs(dw), abs(dv)
            g = _gcd(dw, dv)
            if not _more_levels(&w[0], &v[0], n, <double>(dv // g), <double>(dw // g), sample, 2):
                out.append((dv // g, dw // g))
    return out
