"""Dense dynamic programming over every capacity 0..W: ``dp`` and ``hirschberg``.

``_solver`` checks the memory a solve needs (raising ``SolverMemoryError`` before
it allocates) and dispatches to the compiled ``_dense`` kernels (C in
``_dense_kernels.h``): the full table with bit-packed choices, and the
sliding-window Hirschberg recursion in O(W + n) memory, both over float64 rows.
``_bounds`` (with ``_fenwick.pxd``) gives the capacity intervals an optimal path
can use, so the kernels skip the rest.

May import: :mod:`remat_knapsack._common`, :mod:`remat_knapsack.errors`,
:mod:`remat_knapsack.greedy`, :mod:`remat_knapsack.sparse._exact` (exact integer
runtimes beyond 2**53) and its state accounting, :mod:`remat_knapsack.sparse._solver`
(the optimum as the lower bound that prunes ``hirschberg``'s passes), numpy.
"""

from ._solver import dp_bytes, hirschberg_bytes, solve_dp, solve_hirschberg

__all__ = ["dp_bytes", "hirschberg_bytes", "solve_dp", "solve_hirschberg"]
