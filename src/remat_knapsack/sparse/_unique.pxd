# cython: language_level=3
"""The uniqueness runs of ``_unique`` as ``_canonical`` asks them (cimported;
no GIL), and their schedule's set-up."""

from ._pool cimport Pool
from ._scan_state cimport Scan


cdef Py_ssize_t _try_unique(Scan* s, Pool* pool, Py_ssize_t k) noexcept nogil
cdef void unique_setup(Scan* s, const Pool* pool) noexcept nogil
