"""The exact core: a solve whose time and memory do not grow with the capacity W.

``_solver`` is the Python orchestration (validation already done by
:mod:`remat_knapsack.api`): gcd division, the Lagrangian reduction, the core
runs, the count path and the canonical pass. It drives compiled kernels that sit
beside it:

* ``_sparse`` (with ``_sparse.pxd``): Pareto state lists, the core run and the
  decision runs;
* ``_canonical``: the pass that turns an optimum into ``dp_knapsack``'s own set;
* ``_subset_sum``: that set in one pass on items whose values are their
  weights, when some subset fills the capacity;
* ``_fixing``: fixing items by bounds in compensated sums;
* ``_split``: the split around the break item and the core it leaves
  (behind ``_core``);
* ``_fit``: the cardinality multipliers' line and count term, and the quick
  test of ``_lines``;
* ``_front``: grouped (few-type) Pareto dynamic programming;
* ``_order``: orders of packed integer keys.

Python helpers: ``_core`` (the core around the break item), ``_real``
(``scale=None``: exact real budgets), ``_types`` (instances of few item types),
``_lift`` and ``_lines`` (count bounds), ``_states`` (the bytes a state takes).
The ``.pxd`` files hold the kernels' shared pieces: selection (``_select``),
radix sort (``_radix``), pairing (``_pairs``), block sums (``_blocks``),
count windows and fills, subset-sum bit sets, two-list search and the
branch-free positive part (``_positive``).

May import: :mod:`remat_knapsack._common`, :mod:`remat_knapsack.errors`, numpy.

>>> from remat_knapsack.sparse import solve_sparse, sparse_bytes
"""

from ._solver import STATE_BYTES, solve_sparse, sparse_bytes

__all__ = ["STATE_BYTES", "solve_sparse", "sparse_bytes"]
