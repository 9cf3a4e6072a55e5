# Growing a malloc'd buffer in place, shared by the kernels.

from libc.stdlib cimport realloc


cdef inline int grow(void** p, size_t nbytes) noexcept nogil:
    """realloc ``p[0]`` to ``nbytes``; on failure leave it as it was (still
    owned by the caller) and return -1."""
    cdef void* q = realloc(p[0], nbytes)
    if q == NULL:
        return -1
    p[0] = q
    return 0
