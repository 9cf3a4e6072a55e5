# cython: language_level=3
"""The positive part of a double, without a branch.

Sums of max(0, d) over items run through every reduced profit d, whose signs
fall at random: written as ``d if d > 0 else 0.0`` the compiler branches on
the sign, and a mispredicted branch costs more than the rest of the step
(about 3 ns an item against 1 at 10^4 items). ``positive_part`` computes the
same number with arithmetic alone.
"""

from libc.math cimport fabs


cdef inline double positive_part(double x) noexcept nogil:
    """max(x, 0.0) for finite |x| < 2**1023, exactly: for x > 0, x + |x| = 2x
    and its half are exact; otherwise x + |x| is +0.0. (The kernels' d are
    bounded by the value total, below 2**960.)"""
    return 0.5 * (x + fabs(x))
