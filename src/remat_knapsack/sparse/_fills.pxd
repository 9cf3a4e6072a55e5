# cython: language_level=3
"""The questions of ``_fills`` (items on a line: fills, the complement, the
two-list search) as the rest of the canonical pass asks them (cimported; no
GIL), and this module's part of a pass's set-up."""

from ._pool cimport Pool
from ._scan_state cimport Scan


cdef Py_ssize_t _fill_question(Scan* s, Pool* pool, Py_ssize_t k) noexcept nogil
cdef Py_ssize_t _complement(Scan* s, Pool* pool, Py_ssize_t k, Py_ssize_t top) noexcept nogil
cdef Py_ssize_t _least_prefix(Scan* s, Pool* pool, Py_ssize_t k) noexcept nogil
cdef bint _two_lists_found(Scan* s, Py_ssize_t nsub, double cap, double goal, bint line) noexcept nogil
cdef list fills_setup(Scan* s, const Pool* pool, const double* fw, const double* fv)
