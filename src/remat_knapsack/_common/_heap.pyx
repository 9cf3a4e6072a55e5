# cython: language_level=3
"""Keep the heap's freed memory for reuse by the next solve (glibc only).

A solve at n = 10^5 allocates and frees some tens of MiB of numpy
temporaries. glibc returns freed memory at the top of the heap to the system
once more than ``M_TOP_PAD`` (128 KiB) of it is free, so the next temporary
faults its pages in again; on this project's machine a minor fault costs
about 3 us (docs/algorithms.md). ``keep_for(n)`` raises ``M_TOP_PAD`` to
``PER_ITEM`` bytes an item (at most ``MAX_PAD``), never lowering it, so freed
memory stays for the next temporary and the next solve.

Setting any of glibc's parameters turns off its dynamic mmap threshold (the
threshold that rises to the largest block freed, up to 32 MiB); left where
it stood, every array above it would be mapped and faulted in anew. So
``keep_for`` also sets that threshold to where the dynamic one ends,
``MMAP_THRESHOLD`` (32 MiB): arrays below it come from the heap.

The price is memory: freed memory kept in the heap cannot always hold the
next, larger array, so the peak rises, and what stays resident between
solves is at most the padding, of pages a solve touched (measured in
docs/algorithms.md). ``solve`` asks for it only when no ``memory_limit`` is
given (a padding set by an earlier solve stays). Nothing changes when the
C library is not glibc, when ``REMAT_KNAPSACK_HEAP_PAD=0`` is set, or when
the user set glibc's own (``MALLOC_TOP_PAD_``, ``MALLOC_MMAP_THRESHOLD_``,
``glibc.malloc.top_pad`` or ``glibc.malloc.mmap_threshold`` in
``GLIBC_TUNABLES``).
"""

import os
import threading

cdef extern from *:
    """
    #if defined(__GLIBC__)
    #include <malloc.h>
    static int rk_set_top_pad(int n) { return mallopt(M_TOP_PAD, n); }
    static int rk_set_mmap_threshold(int n) { return mallopt(M_MMAP_THRESHOLD, n); }
    #define RK_HAVE_TOP_PAD 1
    #else
    static int rk_set_top_pad(int n) { (void)n; return 0; }
    static int rk_set_mmap_threshold(int n) { (void)n; return 0; }
    #define RK_HAVE_TOP_PAD 0
    #endif
    """
    int rk_set_top_pad(int n) nogil
    int rk_set_mmap_threshold(int n) nogil
    int RK_HAVE_TOP_PAD

#: Bytes of padding a solve asks for per item: about what one touches at n = 10^5.
PER_ITEM = 512
#: At most this much freed memory is kept.
MAX_PAD = 64 << 20
#: glibc's own ``M_TOP_PAD`` (``mallopt(3)``).
DEFAULT_PAD = 128 << 10
#: Where glibc's dynamic mmap threshold stops rising on 64-bit systems (``mallopt(3)``).
MMAP_THRESHOLD = 32 << 20


def _user_chose() -> bool:
    """The user turned the padding off, or set glibc's heap parameters themselves."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    return (os.environ.get("REMAT_KNAPSACK_HEAP_PAD") == "0"
            or "MALLOC_TOP_PAD_" in os.environ or "MALLOC_MMAP_THRESHOLD_" in os.environ
            or "glibc.malloc.top_pad" in tunables or "glibc.malloc.mmap_threshold" in tunables)


ENABLED = bool(RK_HAVE_TOP_PAD) and not _user_chose()
_lock = threading.Lock()
_pad = DEFAULT_PAD  # the padding set so far


def keep_for(Py_ssize_t n_items) -> int:
    """Raise the heap's padding to ``PER_ITEM * n_items`` bytes (at most
    ``MAX_PAD``) if it is below; returns the padding now set (``DEFAULT_PAD``
    when disabled)."""
    global _pad
    want = min(PER_ITEM * n_items, MAX_PAD)
    if ENABLED and want > _pad:
        with _lock:
            # the threshold once, with the first padding (_pad still glibc's)
            fixed = _pad > DEFAULT_PAD or rk_set_mmap_threshold(MMAP_THRESHOLD)
            if want > _pad and fixed and rk_set_top_pad(want):
                _pad = want
    return _pad
