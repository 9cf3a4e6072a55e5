"""The exact core: a solve whose time and memory do not grow with the capacity W.

``_solver`` is the Python orchestration (validation already done by
:mod:`remat_knapsack.api`): gcd division, the Lagrangian reduction, the core
runs, the count path and the canonical pass. It drives compiled kernels that sit
beside it:

* ``_sparse`` (with ``_sparse.pxd``): one solve's ``Workspace`` (OPT, the
  count path's bounds and runs) and the orchestration's one-pass helpers;
* ``_expand`` (with ``_expand.pxd``): the expanding-core run over Pareto
  state lists, in optimise, decide, count and avoid mode, and the count runs
  on what a count's swap window leaves free;
* ``_canonical``: the pass that turns an optimum into ``dp_knapsack``'s own
  set, with the questions it asks below a witness item: ``_prefix_bounds``
  (bounds of the items below it), ``_fills`` (fills, the complement and the
  two-list search on items on a line), ``_decide`` (decide runs and their
  cheaper tries) and ``_unique`` (uniqueness runs);
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
``_lift`` and ``_lines`` (count bounds), ``_states`` (the bytes a state takes),
``_values`` (values on their exact grid, the tie tolerance off it).
The ``.pxd`` files hold the kernels' shared pieces: what every run shares
(``_pool``: result codes, the state pool, the card, rounding allowances), one
run's record and set-up (``_run``), one core step (``_step``), the count bound
(``_count_bound``), a count window's free items (``_window_items``), the
canonical pass's record (``_scan_state``), selection (``_select``), radix sort
(``_radix``), pairing (``_pairs``), block sums (``_blocks``), count windows
and fills, subset-sum bit sets, two-list search and the branch-free positive
part (``_positive``).

May import: :mod:`remat_knapsack._common`, :mod:`remat_knapsack.errors`, numpy.

>>> from remat_knapsack.sparse import solve_sparse, sparse_bytes
"""

from ._solver import STATE_BYTES, solve_sparse, sparse_bytes

__all__ = ["STATE_BYTES", "solve_sparse", "sparse_bytes"]
