# cython: language_level=3
"""Positions of non-negative doubles in ascending order, by an LSD radix sort.

Keys: the values themselves as unsigned integers when every value is an
integer below 2**53 (the kernels' weights), else their IEEE-754 bit
patterns, which for doubles >= 0 grow with the value. One pass counts the
bytes below the highest one set in any key; then one stable scatter pass
per byte in which the keys differ (two for weights below 65,536). O(n) a pass; ties keep ascending
position. Far cheaper than ``qsort``'s comparison callbacks (a merge sort
in glibc) at 10^4 items and more.
"""

from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset


cdef inline uint64_t _keys(const double* x, Py_ssize_t n, uint64_t* key) noexcept nogil:
    """Integer keys if every value is an integer below 2**53, else bit
    patterns. Returns the keys' bitwise or (their bytes that can be non-zero)."""
    cdef Py_ssize_t i
    cdef uint64_t bits = 0
    for i in range(n):
        if not (x[i] < 9007199254740992.0 and x[i] == <double><uint64_t>x[i]):
            memcpy(key, x, n * sizeof(uint64_t))
            return _or_of(key, n)
        key[i] = <uint64_t>x[i]
        bits |= key[i]
    return bits


cdef inline uint64_t _or_of(const uint64_t* key, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint64_t bits = 0
    for i in range(n):
        bits |= key[i]
    return bits


cdef inline int sort_ascending(const double* x, Py_ssize_t n, Py_ssize_t* out) noexcept nogil:
    """``out`` = the positions 0..n-1 of ``x`` (all >= 0) by ascending value,
    ties by position. Returns 0, or -1 if out of memory."""
    cdef uint64_t* key = <uint64_t*>malloc(n * sizeof(uint64_t))
    cdef uint64_t* key2 = <uint64_t*>malloc(n * sizeof(uint64_t))
    cdef Py_ssize_t* pos2 = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    cdef Py_ssize_t* pos = out
    cdef Py_ssize_t count[8][256]
    cdef Py_ssize_t i, b, total, c, d, nbytes = 0
    cdef uint64_t bits
    if key == NULL or key2 == NULL or pos2 == NULL:
        free(key)
        free(key2)
        free(pos2)
        return -1
    bits = _keys(x, n, key)
    while nbytes < 8 and bits >> (8 * nbytes):  # bytes above these are 0 in every key
        nbytes += 1
    memset(count, 0, sizeof(count))
    for i in range(n):
        pos[i] = i
        for d in range(nbytes):
            count[d][(key[i] >> (8 * d)) & 255] += 1
    for d in range(nbytes):
        if n == 0 or count[d][(key[0] >> (8 * d)) & 255] == n:
            continue  # every key has this byte: the pass would change nothing
        total = 0
        for b in range(256):
            c = count[d][b]
            count[d][b] = total
            total += c
        for i in range(n):
            b = (key[i] >> (8 * d)) & 255
            key2[count[d][b]] = key[i]
            pos2[count[d][b]] = pos[i]
            count[d][b] += 1
        key, key2 = key2, key
        pos, pos2 = pos2, pos
    if pos != out:
        memcpy(out, pos, n * sizeof(Py_ssize_t))
        pos2 = pos  # the scratch buffer to free
    free(key)
    free(key2)
    free(pos2)
    return 0
