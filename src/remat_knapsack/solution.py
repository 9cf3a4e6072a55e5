"""The result type shared by every solver."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Solution"]


@dataclass(frozen=True)
class Solution:
    """The plan a solver chose.

    Attributes
    ----------
    value : float
        Sum of the saved items' runtimes, correctly rounded (``math.fsum``),
        re-summed from the chosen items whatever precision the solver's
        tables used.
    saved : list[int]
        Indices of the activations to keep, ascending.
    recomputed : list[int]
        Indices of the activations to recompute, ascending.
    solver : str
        The solver actually used (``"auto"`` resolves to a concrete name).
    stats : dict
        At least ``peak_bytes`` (what the solver allocated for its tables) and
        ``seconds`` (wall time of the solve, validation excluded); solvers may add
        more (``capacity``, ``precision``, ``states`` ...).
    """

    value: float
    saved: list[int]
    recomputed: list[int]
    solver: str
    stats: dict[str, Any] = field(default_factory=dict)
