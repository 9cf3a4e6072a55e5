# cython: language_level=3
"""The runs of ``_expand`` as the other kernel modules call them (cimported;
each releases the GIL): ``_core`` (one run of the expanding core),
``_windowed`` (a count run on what its count's swap window leaves free) and
``avoid_windowed`` (an avoid-mode decide run on the same). Their result codes
and the ``Pool``/``Card`` they take are ``_pool.pxd``'s.
"""

from libc.stdint cimport uint8_t

from ._pool cimport Card, Pool


cdef Py_ssize_t _core(const double* w, const double* v, Py_ssize_t n, double c,
                      int decide, double goal, int integral, double tol,
                      Pool* pool, const Card* card, uint8_t* x, double* zout,
                      Py_ssize_t* bout) noexcept nogil

cdef Py_ssize_t _windowed(const double* w, const double* v, Py_ssize_t n, double c,
                          int decide, double goal, int integral, double tol,
                          Pool* pool, const Card* card, const Py_ssize_t* by_weight, uint8_t* x,
                          double* zout) noexcept nogil

cdef Py_ssize_t avoid_windowed(const double* w, const double* v, Py_ssize_t n, double c, double goal,
                               double tol, Pool* pool, const Card* card, const Py_ssize_t* by_weight,
                               const uint8_t* avoid, const Py_ssize_t* twin, uint8_t* x) noexcept nogil
