# cython: language_level=3
"""Positions of non-negative doubles in ascending order, by an LSD radix sort.

Keys: the values themselves as unsigned integers when every value is an
integer below 2**53 (the kernels' weights), else their IEEE-754 bit
patterns, which for doubles >= 0 grow with the value. One pass counts the
bytes below the highest one set in any key; then one stable scatter pass
per byte in which the keys differ (two for weights below 65,536). When the
keys leave room for the position in their low bits (integer weights below
2**(64 - log2 n)) each pass scatters one packed array, else the key and
its position apart: the passes are bound by their scattered writes, and
packing halves them. O(n) a pass; ties keep ascending position. Far cheaper than ``qsort``'s
comparison callbacks (a merge sort in glibc) at 10^4 items and more.
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


cdef inline void _digit_counts(const uint64_t* key, Py_ssize_t n, int shift, Py_ssize_t nbytes,
                               Py_ssize_t count[8][256]) noexcept nogil:
    """count[d][b]: keys whose byte d (from bit ``shift``) is b."""
    cdef Py_ssize_t i, d
    memset(count, 0, 8 * 256 * sizeof(Py_ssize_t))
    for i in range(n):
        for d in range(nbytes):
            count[d][(key[i] >> (shift + 8 * d)) & 255] += 1


cdef inline bint _offsets(Py_ssize_t* count, Py_ssize_t n) noexcept nogil:
    """A byte's counts into bucket starts; False when one bucket holds every
    key (the pass would change nothing)."""
    cdef Py_ssize_t b, c, total = 0
    for b in range(256):
        if count[b] == n:
            return False
        c = count[b]
        count[b] = total
        total += c
    return True


cdef inline void _sort_packed(uint64_t* key, uint64_t* key2, Py_ssize_t n, int pbits, Py_ssize_t nbytes,
                              Py_ssize_t* out) noexcept nogil:
    """Keys below 2**(64 - pbits) with the position in their low ``pbits``
    bits: one array to scatter a pass (half the writes of key and position
    apart); the passes read the bytes above the position."""
    cdef Py_ssize_t count[8][256]
    cdef Py_ssize_t i, d, b
    cdef uint64_t* t
    for i in range(n):
        key[i] = (key[i] << pbits) | <uint64_t>i
    _digit_counts(key, n, pbits, nbytes, count)
    for d in range(nbytes):
        if not _offsets(count[d], n):
            continue
        for i in range(n):
            b = (key[i] >> (pbits + 8 * d)) & 255
            key2[count[d][b]] = key[i]
            count[d][b] += 1
        t = key
        key = key2
        key2 = t
    for i in range(n):
        out[i] = <Py_ssize_t>(key[i] & ((<uint64_t>1 << pbits) - 1))


cdef inline void _sort_pairs(uint64_t* key, uint64_t* key2, Py_ssize_t* pos2, Py_ssize_t n, Py_ssize_t nbytes,
                             Py_ssize_t* out) noexcept nogil:
    """Any 64-bit keys: each pass scatters the key and its position."""
    cdef Py_ssize_t count[8][256]
    cdef Py_ssize_t i, d, b
    cdef Py_ssize_t* pos = out
    cdef uint64_t* t
    cdef Py_ssize_t* tp
    for i in range(n):
        pos[i] = i
    _digit_counts(key, n, 0, nbytes, count)
    for d in range(nbytes):
        if not _offsets(count[d], n):
            continue
        for i in range(n):
            b = (key[i] >> (8 * d)) & 255
            key2[count[d][b]] = key[i]
            pos2[count[d][b]] = pos[i]
            count[d][b] += 1
        t = key
        key = key2
        key2 = t
        tp = pos
        pos = pos2
        pos2 = tp
    if pos != out:
        memcpy(out, pos, n * sizeof(Py_ssize_t))


cdef inline int sort_ascending(const double* x, Py_ssize_t n, Py_ssize_t* out) noexcept nogil:
    """``out`` = the positions 0..n-1 of ``x`` (all >= 0) by ascending value,
    ties by position. Returns 0, or -1 if out of memory."""
    cdef uint64_t* key = <uint64_t*>malloc(n * sizeof(uint64_t) + 8)
    cdef uint64_t* key2 = <uint64_t*>malloc(n * sizeof(uint64_t) + 8)
    cdef Py_ssize_t* pos2 = NULL
    cdef Py_ssize_t nbytes = 0
    cdef int pbits = 1
    cdef uint64_t bits
    if key == NULL or key2 == NULL:
        free(key)
        free(key2)
        return -1
    bits = _keys(x, n, key)
    while nbytes < 8 and bits >> (8 * nbytes):  # bytes above these are 0 in every key
        nbytes += 1
    while pbits < 63 and (<uint64_t>1 << pbits) < <uint64_t>n:
        pbits += 1
    if bits >> (64 - pbits) == 0:  # room for the position below the key
        _sort_packed(key, key2, n, pbits, nbytes, out)
    else:
        pos2 = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t) + 8)
        if pos2 == NULL:
            free(key)
            free(key2)
            return -1
        _sort_pairs(key, key2, pos2, n, nbytes, out)
    free(key)
    free(key2)
    free(pos2)
    return 0
