"""The memory/runtime trade-off curve: every Pareto-optimal plan in one pass.

``_curve`` holds :func:`frontier` and :class:`Frontier` (the curve, its knee, and
the plan at any budget); the compiled ``_frontier`` kernel builds the exact
Pareto front of (weight, value) states.

May import: :mod:`remat_knapsack._common`, :mod:`remat_knapsack.errors`, and
:mod:`remat_knapsack.api` (inside functions, to re-solve one budget),
:mod:`remat_knapsack.sparse._exact` (which integer runtimes need exact sums), numpy.
"""

from ._curve import Frontier, frontier

__all__ = ["Frontier", "frontier"]
