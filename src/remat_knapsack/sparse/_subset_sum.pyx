# cython: language_level=3
"""Subset-sum items: dp_knapsack's set in one pass, when some subset fills the capacity.

Private; ``_solver._subset_sum_items`` is its Python face. When every value is its
weight (after both are divided by their greatest common divisors: values
proportional to the weights), a set is worth what it weighs, so a set that
weighs exactly c is optimal, and ``dp_knapsack``'s backtrack (from the highest
index down, item i is left out whenever the items below it can still reach
the target) asks only one kind of question: do some of the items 0..i-1 sum
to exactly t? Any sum between t and the room left would beat the optimum.

Written with the prefix sums S_k = w_0 + ... + w_(k-1) and the *excess*
e = S_k - c of a prefix over the capacity:

1. The least prefix k that reaches c is the least k with S_k >= c whose
   first k items hold a subset summing to e_k = S_k - c (the items left out of
   it). Every item from k up is left out (the prefix below it already reaches
   c) and item k - 1 is kept (the one below it does not).
2. Down from i = k - 2, with e the excess still to shed: item i is left out
   when w_i <= e and some of items 0..i-1 sum to e - w_i (then e -= w_i), and
   kept otherwise. A set of items 0..i summing to e exists at every step (it
   holds i, or it lies below i), so e reaches 0, and every item below that is
   kept.

Each question is a bit set of the sums 0..y (y the sum asked), filled item by
item in index order with the items no heavier than y, that stops as soon as y
is reached (``_reaches``; Bellman's recursion, word-parallel: Pisinger,
"Dynamic programming on the word RAM", Algorithmica 35, 2003). On dense
weights y is reached after a few dozen items, so a question costs O(i) for
the scan plus a few dozen passes over y / 64 words: a solve costs O(n) and a
handful of questions (the prefix sums, the scan down, and the questions). A
"no" is exact: every item that could take part was added. Weights that
leave a question of more than ``max_words`` words, or questions costing more
than ``budget`` word operations in all, return ``UNSETTLED``, as does a
capacity no subset fills.

Then, when the sums of every prefix fit in memory ((n + 1) (c / 64 + 1)
words), ``canonical_subset_sum_layers`` builds them all (Bellman's
recursion, one layer per item) and reads OPT, the largest sum within c, and
dp_knapsack's set straight off them: O(n c / 64), where a Pareto state list
of subset sums keeps a state per distinct sum (up to min(2**n, c)). Beyond
that, the general path decides.
"""

from libc.stdint cimport uint8_t, uint64_t
from libc.stdlib cimport free, malloc, realloc

from ._subset_bits cimport _bit, _shift_or, bits_words, or_shifted_in_place

cdef enum:  # the result codes
    RESULT_UNSETTLED = 0
    RESULT_SETTLED = 1
    RESULT_OTHER_VALUES = 2

#: Result codes: the set is dp_knapsack's; or not settled here (the layers
#: may, or the general path); or a value is not its weight (the general path).
SETTLED = RESULT_SETTLED
UNSETTLED = RESULT_UNSETTLED
OTHER_VALUES = RESULT_OTHER_VALUES

# ``_reaches``' answers
cdef enum:
    REACH_NO = 0
    REACH_YES = 1
    REACH_OVER = -1  # over ``max_words`` or the work budget


cdef struct Questions:
    const double* w         # the weights, in index order (integers, sums below 2**53)
    uint64_t* bits          # one bit set: the sums 0..y reached so far
    Py_ssize_t words_held   # words allocated for ``bits`` (grown as questions need)
    Py_ssize_t max_words    # the most words a question may use
    Py_ssize_t work         # word operations (and items scanned / 64) spent so far
    Py_ssize_t budget       # the most ``work`` may reach
    Py_ssize_t asked        # questions asked


cdef int _reaches(Questions* q, Py_ssize_t i, Py_ssize_t y) noexcept nogil:
    """Whether some of items 0..i-1 sum to exactly y (y >= 0)."""
    if y == 0:
        return REACH_YES
    cdef Py_ssize_t words = bits_words(y), j, wj, top, scanned = 0
    cdef Py_ssize_t total = 0  # the sum of the items added: no sum above it is reached yet
    cdef uint64_t* grown
    if words > q.max_words:
        return REACH_OVER
    if words > q.words_held:
        grown = <uint64_t*>realloc(q.bits, words * sizeof(uint64_t))
        if grown == NULL:
            return REACH_OVER
        q.bits, q.words_held = grown, words
    q.asked += 1
    for j in range(words):
        q.bits[j] = 0
    q.bits[0] = 1  # the empty set
    for j in range(i):
        wj = <Py_ssize_t>q.w[j]
        scanned += 1
        if wj > y:
            continue
        total += wj
        top = bits_words(total if total < y else y)  # the words a sum can reach after this item
        or_shifted_in_place(q.bits, top, wj)
        q.work += top - (wj >> 6)
        if q.work + (scanned >> 6) > q.budget:
            return REACH_OVER
        if _bit(q.bits, y):
            q.work += scanned >> 6
            return REACH_YES
    q.work += scanned >> 6
    return REACH_NO


def canonical_subset_sum(const double[::1] w, const double[::1] v, double c, uint8_t[::1] sel,
                         Py_ssize_t max_words, Py_ssize_t budget):
    """dp_knapsack's set of items (w, v) when every value is its weight
    (positive integers in float64, sums below 2**53) and some subset weighs
    exactly c: the items into ``sel`` (n zeroed bytes, 1 for the chosen
    ones). Returns (``SETTLED`` or ``UNSETTLED``, questions asked, word
    operations, the most words its bit set held); ``sel`` is left as it was
    when unsettled. ``OTHER_VALUES`` at once when a value is not its weight
    (the first such item ends the check)."""
    cdef Py_ssize_t n = w.shape[0], k = 0, i
    if v.shape[0] != n:
        raise ValueError(f"v has {v.shape[0]} items, w {n}")
    for i in range(n):
        if v[i] != w[i]:
            return RESULT_OTHER_VALUES, 0, 0, 0
    cdef double s = 0.0
    cdef int answer = REACH_NO, code = RESULT_UNSETTLED
    cdef Questions q
    q.w = &w[0] if n else NULL
    q.max_words = max_words
    q.work = 0
    q.budget = budget
    q.asked = 0
    q.bits = NULL
    q.words_held = 0
    with nogil:
        while k < n and s < c:  # the first prefix that weighs c or more
            s += w[k]
            k += 1
        while s >= c:  # 1. the least prefix with a subset weighing c
            answer = _reaches(&q, k, <Py_ssize_t>(s - c))
            if answer != REACH_NO or k == n:
                break
            s += w[k]
            k += 1
        if answer == REACH_YES:
            code = _scan_down(&q, k, <Py_ssize_t>(s - c), sel)
    free(q.bits)
    return code, q.asked, q.work, q.words_held


cdef int _scan_down(Questions* q, Py_ssize_t k, Py_ssize_t e, uint8_t[::1] sel) noexcept nogil:
    """Step 2 of the module docs, for the least prefix k with excess e; the
    items kept into ``sel``, which is left zeroed unless it returns ``SETTLED``."""
    cdef Py_ssize_t i = k - 2, j, wi
    cdef int answer
    # The items left out below k - 1, marked 2 in ``sel`` first; 1 is set only once settled.
    while i >= 0 and e > 0:
        wi = <Py_ssize_t>q.w[i]
        if wi <= e:
            answer = _reaches(q, i, e - wi)
            if answer == REACH_OVER:
                for j in range(i + 1, k - 1):
                    sel[j] = 0
                return RESULT_UNSETTLED
            if answer == REACH_YES:
                sel[i] = 2
                e -= wi
        i -= 1
    for j in range(k):  # up to k - 1, which is kept
        sel[j] = 1 if sel[j] == 0 else 0
    return RESULT_SETTLED


def canonical_subset_sum_layers(const double[::1] w, double c, uint8_t[::1] sel, Py_ssize_t max_words):
    """dp_knapsack's set of items whose values are their weights (positive
    integers in float64, c an integer below 2**53) by every prefix's sums:
    layer i holds the sums 0..c the first i items reach, OPT is the largest
    sum of the last, and from the top item i is left out when layer i holds
    the target (else kept, the target less w_i, which layer i then holds).
    O(n c / 64) time and memory, whether or not a subset fills c: for the
    instances the questions above leave unsettled, when the n + 1 layers fit
    in ``max_words`` words. Returns (``SETTLED``, OPT, words held) with the
    set in ``sel`` (n zeroed bytes), or (``UNSETTLED``, 0, 0) when they do not fit."""
    cdef Py_ssize_t n = w.shape[0], i, t, opt = 0, words = bits_words(<Py_ssize_t>c)
    cdef uint64_t* layers
    if c < 0 or n + 1 > max_words // words:
        return RESULT_UNSETTLED, 0, 0
    layers = <uint64_t*>malloc((n + 1) * words * sizeof(uint64_t))
    if layers == NULL:
        return RESULT_UNSETTLED, 0, 0
    with nogil:
        for i in range(words):
            layers[i] = 0
        layers[0] = 1  # the empty set
        for i in range(n):
            _shift_or(layers + i * words, layers + (i + 1) * words, words, <Py_ssize_t>w[i])
        t = _highest_up_to(layers + n * words, <Py_ssize_t>c)
        opt = t
        for i in range(n - 1, -1, -1):
            if not _bit(layers + i * words, t):  # the items below do not reach t: i is kept
                sel[i] = 1
                t -= <Py_ssize_t>w[i]
    free(layers)
    return RESULT_SETTLED, opt, (n + 1) * words


cdef Py_ssize_t _highest_up_to(const uint64_t* layer, Py_ssize_t c) noexcept nogil:
    """The largest sum <= c the layer holds (it holds 0)."""
    cdef Py_ssize_t q = c >> 6, b
    cdef uint64_t word = layer[q]
    if (c & 63) < 63:
        word &= (<uint64_t>1 << ((c & 63) + 1)) - 1
    while word == 0:
        q -= 1
        word = layer[q]
    b = 63
    while not (word >> b) & 1:
        b -= 1
    return (q << 6) + b
