# cython: language_level=3
"""The swap window of a count: which items every set of exactly k items
within c holds, and which none does, by weight alone.

Let A be the k lightest items (weight L_k, slack s = c - L_k >= 0), w_(k)
the heaviest of them and w_(k+1) the lightest item outside. Every k-set is
A with r items X taken out and r items Y put in, and it fits when
w(Y) - w(X) <= s. Pair X with Y: every pair costs w_y - w_x >= w_(k+1) -
w_(k) >= 0, so each pair alone costs at most s. Hence an item lighter than
w_(k+1) - s is in every k-set (it is in A and cannot leave), and one
heavier than w_(k) + s is in none. With a small slack (the count is the
most items that fit) that fixes all but the items near the k-th weight,
and the count bound of what is left is nearly exact where the LP's is not
(Pisinger's circle items; docs/algorithms.md). The same distances to a
pivot weight as in ``_count_fill.pxd``.

Weights: integers below 2**53 in total (exact sums and comparisons).
"""

cdef enum:
    WINDOW_NONE = 0     # the window fixes no item
    WINDOW_FIXES = 1    # it fixes some
    WINDOW_EMPTY = 2    # no k-set fits (the k lightest exceed c)


cdef struct Window:
    double lo     # an item lighter than this is in every k-set
    double hi     # an item heavier than this is in none
    Py_ssize_t n_in, n_out


cdef inline int count_window(const double* w, Py_ssize_t n, double c, Py_ssize_t k,
                             const Py_ssize_t* by_w, Window* win) noexcept nogil:
    """The window of count k (1 <= k < n) within c into ``win``; ``by_w``:
    the items by ascending weight. Returns WINDOW_FIXES, WINDOW_NONE or
    WINDOW_EMPTY. O(n)."""
    cdef Py_ssize_t q
    cdef double light = 0.0
    for q in range(k):
        light += w[by_w[q]]
    return window_of_lightest(w, n, c, light, w[by_w[k - 1]], w[by_w[k]], win)


cdef inline int window_of_lightest(const double* w, Py_ssize_t n, double c, double light, double wk,
                                   double wk1, Window* win) noexcept nogil:
    """``count_window`` given the weight of the k lightest items (``light``)
    and the k-th and (k+1)-th smallest weights (``_select.lightest_k``)."""
    cdef Py_ssize_t q
    cdef double slack = c - light
    if slack < 0:
        return WINDOW_EMPTY
    win.lo = wk1 - slack
    win.hi = wk + slack
    win.n_in = win.n_out = 0
    for q in range(n):
        if w[q] < win.lo:
            win.n_in += 1
        elif w[q] > win.hi:
            win.n_out += 1
    return WINDOW_FIXES if win.n_in + win.n_out > 0 else WINDOW_NONE
