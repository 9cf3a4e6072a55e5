"""Drop-in replacements for ``torch._functorch._activation_checkpointing.knapsack``.

Each function has PyTorch's signature and return convention::

    (memory: list[float], runtimes: list[float], max_memory: float)
        -> tuple[float, list[int], list[int]]

returning (runtime saved, saved indices, recomputable indices). As in PyTorch,
the DP solvers return the saved indices ascending and the recomputable ones
descending; ``greedy_knapsack`` returns both in ratio order; ``ilp_knapsack``
both ascending. Unlike PyTorch's, ``dp_knapsack_sliding_hirschberg`` never
exceeds the budget, ``ilp_knapsack`` is exact and ``dp_knapsack`` needs 32x
less memory.

>>> dp_knapsack_sliding_hirschberg([0.0001] * 3, [1.0] * 3, 0.0001)
(1.0, [0], [2, 1])
"""

from __future__ import annotations

import math

import numpy as np

from ._common._validate import validate
from .api import solve
from .greedy import greedy_select

__all__ = ["greedy_knapsack", "ilp_knapsack", "dp_knapsack", "dp_knapsack_sliding_hirschberg"]


def greedy_knapsack(
    memory: list[float], runtimes: list[float], max_memory: float
) -> tuple[float, list[int], list[int]]:
    """PyTorch's ratio greedy on unquantised memory, both lists in ratio order.

    Unlike PyTorch's, items with runtime <= 0 are never saved (they come last
    among the recomputable ones, in index order) and zero memory is no
    ZeroDivisionError.
    """
    problem = validate(memory, runtimes, max_memory, None)
    positive = np.flatnonzero(problem.runtimes > 0)
    taken, skipped = greedy_select(problem.memory[positive], problem.runtimes[positive], problem.max_memory)
    saved = positive[taken].tolist()
    never = np.flatnonzero(problem.runtimes <= 0).tolist()
    return math.fsum(problem.runtimes[saved].tolist()), saved, positive[skipped].tolist() + never


def ilp_knapsack(memory: list[float], runtimes: list[float], max_memory: float) -> tuple[float, list[int], list[int]]:
    """Exact ILP (SciPy HiGHS with a zero MIP gap) on quantised weights."""
    s = solve(memory, runtimes, max_memory, solver="ilp")
    return s.value, s.saved, s.recomputed


def dp_knapsack(memory: list[float], runtimes: list[float], max_memory: float) -> tuple[float, list[int], list[int]]:
    """The full DP table, one bit per cell."""
    s = solve(memory, runtimes, max_memory, solver="dp")
    return s.value, s.saved, s.recomputed[::-1]


def dp_knapsack_sliding_hirschberg(
    memory: list[float], runtimes: list[float], max_memory: float
) -> tuple[float, list[int], list[int]]:
    """The two-row Hirschberg DP, correct and compiled."""
    s = solve(memory, runtimes, max_memory, solver="hirschberg")
    return s.value, s.saved, s.recomputed[::-1]
