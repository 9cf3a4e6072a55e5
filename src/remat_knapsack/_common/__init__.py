"""Foundations every solver shares.

Holds:

* ``_validate``: the input contract (``validate``, ``Items``, ``Problem``): memory,
  runtimes and budget checked and converted, errors naming the bad index;
* ``_lists`` (compiled): Python sequences to float64 in one pass;
* ``_checks`` (compiled): the extremes and the quantised weights of the
  checked arrays, a pass each;
* ``_fsum`` over ``_exact_sum`` (compiled): correctly rounded sums;
* ``_grid``: common power-of-two grids that make real weights exact integers;
* ``_memory``: the bytes a solve may take, and what the machine has;
* ``_heap`` (compiled): glibc heap padding kept between solves;
* ``_io``: instance files (JSON and JSON lines) read and checked;
* ``_interrupt.pxd``, ``_realloc.pxd``: the Ctrl-C check and array growth that
  every kernel cimports.

May import: numpy and :mod:`remat_knapsack.errors`. Nothing else of the package
imports into here, so every other subpackage can import from it.
"""
