# cython: language_level=3
"""Subset sums as bit sets, for the canonical pass's questions on subset-sum items.

Whether some of n items with integer weights w_i has a sum in [lo, hi]:
the sums the first i items reach form a bit set over 0..hi,
S_i = S_{i-1} | (S_{i-1} << w_i), 64 sums a machine word. Bellman's
recursion, word-parallel (Pisinger, "Dynamic programming on the word RAM",
Algorithmica 35, 2003): O(n hi / 64) time, and O(n hi / 64) memory for the
n + 1 layers kept, from which the set found is read back. A state-list run
that must prove no sum lies in the range lists every reachable sum, one
state each, at every step.

Sums above hi never come back below it, so the bits above hi in the last
word are left as they fall.
"""

from libc.stdint cimport uint8_t, uint64_t


cdef inline Py_ssize_t bits_words(Py_ssize_t hi) noexcept nogil:
    """Words in one layer: the sums 0..hi."""
    return hi // 64 + 1


cdef inline bint _bit(const uint64_t* layer, Py_ssize_t t) noexcept nogil:
    return (layer[t >> 6] >> (t & 63)) & 1


cdef inline void _shift_or(const uint64_t* src, uint64_t* dst, Py_ssize_t words,
                           Py_ssize_t shift) noexcept nogil:
    """dst = src | (src << shift) over ``words`` words (what falls off the top
    is lost), in one pass."""
    cdef Py_ssize_t q = shift >> 6, i
    cdef int r = shift & 63
    for i in range(min(q, words)):
        dst[i] = src[i]
    if q >= words:
        return
    if r == 0:
        for i in range(q, words):
            dst[i] = src[i] | src[i - q]
        return
    dst[q] = src[q] | (src[0] << r)
    for i in range(q + 1, words):
        dst[i] = src[i] | (src[i - q] << r) | (src[i - q - 1] >> (64 - r))


cdef inline void _or_shifted(const uint64_t* src, uint64_t* dst, Py_ssize_t words,
                             Py_ssize_t shift) noexcept nogil:
    """dst |= src << shift over ``words`` words (what falls off the top is
    lost): ``_shift_or`` into another layer."""
    cdef Py_ssize_t q = shift >> 6, i
    cdef int r = shift & 63
    if q >= words:
        return
    if r == 0:
        for i in range(q, words):
            dst[i] |= src[i - q]
        return
    dst[q] |= src[0] << r
    for i in range(q + 1, words):
        dst[i] |= (src[i - q] << r) | (src[i - q - 1] >> (64 - r))


cdef inline void or_shifted_in_place(uint64_t* layer, Py_ssize_t words,
                                     Py_ssize_t shift) noexcept nogil:
    """layer |= layer << shift over ``words`` words, in place (what falls off
    the top is lost): the words go from the top down, so each reads words the
    pass has not changed yet and an item is added once."""
    cdef Py_ssize_t q = shift >> 6, i
    cdef int r = shift & 63
    if q >= words:
        return
    if r == 0:
        for i in range(words - 1, q - 1, -1):
            layer[i] |= layer[i - q]
        return
    for i in range(words - 1, q, -1):
        layer[i] |= (layer[i - q] << r) | (layer[i - q - 1] >> (64 - r))
    layer[q] |= layer[0] << r


cdef inline Py_ssize_t _in_range(const uint64_t* layer, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """The least sum in [lo, hi] the layer holds, or -1: a word at a time,
    the end words masked to the range."""
    cdef Py_ssize_t q, t
    cdef uint64_t word
    for q in range(lo >> 6, (hi >> 6) + 1):
        word = layer[q]
        if q == lo >> 6:
            word &= ~<uint64_t>0 << (lo & 63)
        if q == hi >> 6 and (hi & 63) < 63:
            word &= (<uint64_t>1 << ((hi & 63) + 1)) - 1
        if word:
            t = 0
            while not (word >> t) & 1:
                t += 1
            return (q << 6) + t
    return -1


cdef inline int subset_sum_bits(const double* w, Py_ssize_t n, Py_ssize_t lo, Py_ssize_t hi,
                                uint64_t* layers, uint8_t* x) noexcept nogil:
    """Whether some of the n items (integer weights ``w``, none negative)
    sum to a value in [lo, hi] (0 <= lo <= hi): 1 with that set in ``x``
    (the least such sum after the fewest items), else 0. ``layers``:
    (n + 1) * bits_words(hi) words."""
    cdef Py_ssize_t L = bits_words(hi), i, f, t
    for i in range(L):
        layers[i] = 0
    layers[0] = 1  # the empty set
    t = _in_range(layers, lo, hi)
    i = 0
    while t < 0 and i < n:
        _shift_or(layers + i * L, layers + (i + 1) * L, L, <Py_ssize_t>w[i])
        i += 1
        t = _in_range(layers + i * L, lo, hi)
    if t < 0:
        return 0
    f = i
    for i in range(n):
        x[i] = 0
    for i in range(f, 0, -1):  # back through the layers: an item is in when its sum was not reached without it
        if not _bit(layers + (i - 1) * L, t):
            x[i - 1] = 1
            t -= <Py_ssize_t>w[i - 1]
    return 1
