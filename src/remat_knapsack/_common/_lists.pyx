# cython: language_level=3
"""Python lists of floats and ints as float64 arrays, in one C pass, and
a solution's two index lists back, in another.

Private; ``_validate`` calls ``floats_of`` first. Only exact ``float`` and ``int``
items are taken (not bool, a subclass of int, nor numpy scalars): for those
the answer is what ``float(item)`` gives, and no item can be a bool, so the
bool check is not needed. Anything else returns None and the general path
(``struct``, then numpy) converts the list and names a bad item.
"""

import numpy as np

from cpython.list cimport PyList_New
from cpython.long cimport PyLong_AsDouble
from cpython.object cimport PyObject
from libc.stdint cimport uint8_t, uintptr_t


cdef extern from "Python.h":
    # as the C API has them: a reference stolen
    void _list_set "PyList_SET_ITEM"(PyObject* lst, Py_ssize_t i, PyObject* item)
    PyObject* _new_int "PyLong_FromSsize_t"(Py_ssize_t v)
    void _incref "Py_INCREF"(PyObject* o)
    ctypedef struct PyListObject:
        PyObject** ob_item  # the list's slots


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


def split_positions(const uint8_t[::1] mask, list shared):
    """(the positions where ``mask`` is set, those where it is not): two
    lists of ints, ascending, in one pass. The ints are ``shared``'s
    (``list(range(m))``, pointer copies, no int made) when it covers
    ``mask``, else new ones.

    >>> split_positions(bytearray([1, 0, 1]), [0, 1, 2])
    ([0, 2], [1])
    """
    cdef Py_ssize_t i, n = mask.shape[0], ones = 0
    for i in range(n):
        ones += mask[i] != 0
    cdef list yes = PyList_New(ones), no = PyList_New(n - ones)  # NULL slots, all filled below
    if len(shared) >= n:
        _share_positions(&mask[0] if n else NULL, n, (<PyListObject*>shared).ob_item,
                         (<PyListObject*>yes).ob_item, (<PyListObject*>no).ob_item)
        return yes, no
    cdef Py_ssize_t a = 0, b = 0
    cdef PyObject* item
    for i in range(n):
        item = _new_int(i)
        if item == NULL:
            raise MemoryError("split_positions")
        if mask[i]:
            _list_set(<PyObject*>yes, a, item)
            a += 1
        else:
            _list_set(<PyObject*>no, b, item)
            b += 1
    return yes, no


cdef void _share_positions(const uint8_t* mask, Py_ssize_t n, PyObject** shared, PyObject** yes,
                           PyObject** no) noexcept:
    """``split_positions``' loop over ``shared``'s ints: each one's reference
    goes to ``yes`` or ``no``, the slot chosen by a bit mask rather than a
    branch (the compiler turns a conditional choice back into one). A plan's
    mask has no pattern, and a branch on it mispredicts one item in two:
    2.2x the time of a sorted mask at 10^5 items. Holds the GIL: it changes
    reference counts."""
    cdef Py_ssize_t i
    cdef uintptr_t to_yes = <uintptr_t>yes, to_no = <uintptr_t>no, pick, slot
    for i in range(n):
        _incref(shared[i])
        pick = -<uintptr_t>(mask[i] != 0)  # every bit set when the item is saved
        slot = to_no ^ ((to_no ^ to_yes) & pick)
        (<PyObject**>slot)[0] = shared[i]
        to_yes += pick & sizeof(PyObject*)
        to_no += ~pick & sizeof(PyObject*)
