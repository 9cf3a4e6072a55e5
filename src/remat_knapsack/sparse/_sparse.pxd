# cython: language_level=3
"""What the canonical pass takes from ``_sparse``: one solve's ``Workspace``
(its pool and count multipliers, which its runs share) and ``_raise`` (a
negative result code as its exception). The pool, the card and the result
codes themselves are ``_pool.pxd``'s; the runs are ``_expand``'s.
"""

from ._pool cimport Card, Pool


cdef _raise(Py_ssize_t r, Pool pool)


cdef class Workspace:
    cdef Pool pool
    cdef Card card
    cdef object topv_a
