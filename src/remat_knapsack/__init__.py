"""Exact, memory-lean 0/1 knapsack solvers for activation-checkpointing memory planning.

>>> from remat_knapsack import solve
>>> solve([0.5, 0.25, 0.25], [3.0, 2.0, 2.0], 0.5).saved
[1, 2]
"""

from .api import SOLVERS, solve
from .errors import SolverMemoryError
from .solution import Solution
from .tradeoff._curve import Frontier, frontier

__all__ = ["solve", "Solution", "SOLVERS", "SolverMemoryError", "frontier", "Frontier"]
__version__ = "0.3.0"
