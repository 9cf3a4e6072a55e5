# cython: language_level=3
"""Python lists of floats and ints as float64 arrays, in one C pass.

Private; ``_validate`` calls it first. Only exact ``float`` and ``int``
items are taken (not bool, a subclass of int, nor numpy scalars): for those
the answer is what ``float(item)`` gives, and no item can be a bool, so the
bool check is not needed. Anything else returns None and the general path
(``struct``, then numpy) converts the list and names a bad item.
"""

import numpy as np

from cpython.long cimport PyLong_AsDouble


def floats_of(x):
    """``x`` (a list or tuple) as a float64 array, or None when an item is
    not an exact float or int, or an int beyond float64.

    >>> floats_of([1, 2.5]).tolist(), floats_of([True]), floats_of([10**400])
    ([1.0, 2.5], None, None)
    """
    cdef list items = x if type(x) is list else list(x)
    cdef Py_ssize_t i, n = len(items)
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] o = out
    for i in range(n):
        item = items[i]
        if type(item) is float:
            o[i] = <double>item
        elif type(item) is int:
            try:
                o[i] = PyLong_AsDouble(item)
            except OverflowError:
                return None
        else:
            return None
    return out
