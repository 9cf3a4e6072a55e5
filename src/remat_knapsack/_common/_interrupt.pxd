# Ctrl-C from inside kernels that run without the GIL.
#
# A long nogil loop never returns to the interpreter, so Python's SIGINT
# handler only sets a flag. Call ``interrupted()`` every CHECK_EVERY units of
# work (cell updates, merged states): it takes the GIL, runs the pending
# signal handlers, and returns True when one raised (KeyboardInterrupt is then
# the current exception). The caller frees what it holds and returns its
# INTERRUPTED code; the ``def`` wrapper then raises with ``raise_pending()``.
# PyErr_CheckSignals is a no-op off the main thread, so worker threads never
# see an interrupt.

cdef extern from "Python.h":
    # Declared here without Cython's ``except -1`` so that the exception the
    # handler sets stays pending instead of being reported as unraisable.
    int PyErr_CheckSignals() noexcept
    void* PyErr_Occurred() noexcept

# Units of work between two checks: 2**20 merged states or cells is at most
# ~25 ms of memory-bound work here, well below the 0.1 s the contract allows.
cdef enum:
    CHECK_EVERY = 1 << 20


cdef inline bint interrupted() noexcept nogil:
    with gil:
        return PyErr_CheckSignals() != 0


cdef inline int raise_pending() except -1:
    # Propagate the exception the signal handler set (KeyboardInterrupt);
    # returns 0 when none is pending.
    return -1 if PyErr_Occurred() != NULL else 0
