# cython: language_level=3
"""The decide runs of ``_decide`` and their cheaper tries, as ``_canonical``
and ``_unique`` ask them (cimported; no GIL)."""

from ._pool cimport Pool
from ._scan_state cimport Scan


cdef void _run_counts(Scan* s, Py_ssize_t k, double kmax) noexcept nogil
cdef Py_ssize_t _query(Scan* s, Pool* pool, Py_ssize_t k) noexcept nogil
cdef Py_ssize_t _prefix_probe(Scan* s, Pool* pool, Py_ssize_t k) noexcept nogil
cdef bint _greedy_due(Scan* s) noexcept nogil
cdef Py_ssize_t _greedy_below(Scan* s, Py_ssize_t k) noexcept nogil
