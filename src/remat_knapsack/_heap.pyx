# cython: language_level=3
"""Keep the heap's freed memory for reuse by the next solve (glibc only).

A solve at n = 10^5 allocates and frees some tens of MiB of numpy
temporaries. glibc returns freed memory at the top of the heap to the system
once more than 128 KiB of it is free (``M_TOP_PAD``), so the next temporary
faults its pages in again; on this project's machine a minor fault costs
about 3 us, and a solve at n = 10^5 took about 4,000 of them (docs/sparse.md).
``keep_for(n)`` raises ``M_TOP_PAD`` to ``PER_ITEM`` bytes an item (at most
``MAX_PAD``), never lowering it: freed memory then stays for the next
temporary and the next solve. The price is memory: freed memory kept in
the heap cannot always hold the next, larger array, so the peak rises (a
single solve of ``paper(250_000)``: 43 MiB against 35 MiB), and what stays
resident between solves is at most the padding, of pages a solve touched.
``solve`` therefore asks for it only when no ``memory_limit`` is given.

Nothing changes when the C library is not glibc, or when the user chose the
padding (``MALLOC_TOP_PAD_`` or ``glibc.malloc.top_pad`` in
``GLIBC_TUNABLES``).
"""

import os
import threading

cdef extern from *:
    """
    #if defined(__GLIBC__)
    #include <malloc.h>
    static int rk_set_top_pad(int n) { return mallopt(M_TOP_PAD, n); }
    #define RK_HAVE_TOP_PAD 1
    #else
    static int rk_set_top_pad(int n) { (void)n; return 0; }
    #define RK_HAVE_TOP_PAD 0
    #endif
    """
    int rk_set_top_pad(int n) nogil
    int RK_HAVE_TOP_PAD

#: Bytes of padding a solve asks for per item: about what one touches at n = 10^5.
PER_ITEM = 512
#: At most this much freed memory is kept.
MAX_PAD = 64 << 20
#: glibc's own ``M_TOP_PAD`` (``mallopt(3)``).
DEFAULT_PAD = 128 << 10


def _user_chose() -> bool:
    return "MALLOC_TOP_PAD_" in os.environ or "glibc.malloc.top_pad" in os.environ.get("GLIBC_TUNABLES", "")


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
            if want > _pad and rk_set_top_pad(want):
                _pad = want
    return _pad
