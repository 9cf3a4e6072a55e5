# cython: language_level=3
"""The bounds of ``_prefix_bounds`` on the free items below a witness item
that the rest of the canonical pass asks (cimported; no GIL)."""

from ._scan_state cimport Scan


cdef void _sums_below(Scan* s, Py_ssize_t k) noexcept nogil
cdef double _root_bound(Scan* s, Py_ssize_t k) noexcept nogil
cdef bint _lp_keep(Scan* s, Py_ssize_t k) noexcept nogil
cdef Py_ssize_t _shortest_prefix(const Scan* s, Py_ssize_t k) noexcept nogil
