"""The whole memory/runtime trade-off curve from one sparse Pareto pass.

``frontier(memory, runtimes, max_memory)`` runs the state merge of the
``sparse`` solver once over all items, without bounds (every budget matters),
and keeps the Pareto-optimal (memory, runtime saved) pairs. The best value at
any budget is then a binary search, and the knee is read off the curve instead
of re-solving 100 budgets as PyTorch's ``KnapsackEvaluator`` does.

Time O(n * S) and memory O(S + n), where S is the number of Pareto states
(at most W + 1 quantised, at most 2**n in any case; about a thousand for the
paper's n = 100).

>>> from remat_knapsack import frontier
>>> f = frontier([0.2, 0.3, 0.5], [2.0, 3.0, 4.0])
>>> f.memory, f.value
([0.2, 0.3, 0.5, 0.7, 0.8, 1.0], [2.0, 3.0, 5.0, 6.0, 7.0, 9.0])
>>> f.best(0.6), f.selection(0.6)
(5.0, [0, 1])
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ._validate import active_items, validate
from .sparse import pareto_front

__all__ = ["Frontier", "frontier"]


@dataclass(frozen=True)
class Frontier:
    """Exact best runtime saved for every budget up to ``max_memory``.

    Attributes
    ----------
    memory : list[float]
        Breakpoints, ascending, in the caller's memory units (quantised weight
        divided by ``scale``).
    value : list[float]
        Strictly ascending: the best runtime saved at budget ``b`` is
        ``value[i]`` for the last ``i`` with ``memory[i] <= b``, and 0 when
        there is none.
    max_memory : float
        The largest budget the curve covers.
    scale : float or None
        As in :func:`remat_knapsack.solve`.
    stats : dict
        ``peak_bytes``, ``states``, ``seconds``.
    """

    memory: list[float]
    value: list[float]
    max_memory: float
    scale: float | None
    total_runtime: float
    stats: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    _memory_in: Any = field(default=None, repr=False, compare=False)
    _runtimes_in: Any = field(default=None, repr=False, compare=False)

    def _index(self, budget: float) -> int:
        b = float(budget)
        if math.isnan(b) or b < 0:
            raise ValueError(f"budget must be a number >= 0, got {budget!r}")
        return bisect.bisect_right(self.memory, b) - 1

    def best(self, budget: float) -> float:
        """The best runtime saved within ``budget`` (0.0 when nothing fits).

        This is :func:`solve`'s value at every budget on the quantum grid
        (multiples of ``1 / scale``). Between grid points ``solve`` rounds the
        budget to the nearest quantum, which may round it up; the frontier
        never does, so its plans never use more than ``budget``.
        """
        i = self._index(budget)
        return self.value[i] if i >= 0 else 0.0

    def selection(self, budget: float) -> list[int]:
        """The indices saved at ``budget``: the canonical set ``solve`` returns.

        Solved at the frontier's breakpoint (the largest memory <= budget), so
        the saved set's runtime equals :meth:`best`.
        """
        from .api import solve

        i = self._index(budget)
        b = self.memory[i] if i >= 0 else 0.0
        return solve(self._memory_in, self._runtimes_in, b, solver="sparse", scale=self.scale).saved

    def knee(self) -> float:
        """The budget at the knee, as PyTorch's ``KnapsackEvaluator`` defines it.

        Over the points (memory, runtime recomputed = total - value), both axes
        normalised to [0, 1] by their min and max, the knee is the point
        closest to the origin (the first on ties). When either range is 0 it
        is ``max_memory``, as in PyTorch.
        """
        mem = list(self.memory)
        rec = [self.total_runtime - v for v in self.value]
        if not mem or mem[0] > 0:  # budget 0 saves nothing
            mem.insert(0, 0.0)
            rec.insert(0, self.total_runtime)
        mr = max(mem) - min(mem)
        rr = max(rec) - min(rec)
        if mr == 0 or rr == 0:
            return self.max_memory
        m0, r0 = min(mem), min(rec)
        dist = [math.hypot((r - r0) / rr, (m - m0) / mr) for m, r in zip(mem, rec)]
        return mem[dist.index(min(dist))]


def frontier(
    memory: Sequence[float] | np.ndarray,
    runtimes: Sequence[float] | np.ndarray,
    max_memory: float | None = None,
    *,
    scale: float | None = 10_000,
    memory_limit: int | None = None,
) -> Frontier:
    """The exact trade-off curve: best runtime saved for every budget up to ``max_memory``.

    Parameters are those of :func:`remat_knapsack.solve`; ``max_memory``
    defaults to the total memory. Items with runtime <= 0 never count, items
    of weight 0 always do (as in ``solve``).

    Raises
    ------
    ValueError
        On malformed input.
    SolverMemoryError
        When the Pareto states would not fit in memory.
    """
    import time

    everything = max_memory is None
    if max_memory is None:
        probe = validate(memory, runtimes, 0.0, None)
        budget = float(math.fsum(probe.memory.tolist()))
    else:
        budget = max_memory
    # With real weights the Pareto pass sums in its own order, which may land a
    # few ulps above the exact total: "every budget" is an unbounded pass.
    problem = validate(memory, runtimes, math.inf if everything and scale is None else budget, scale)
    start = time.perf_counter()
    items = active_items(problem, quantised=scale is not None)
    base = math.fsum(problem.runtimes[items.forced].tolist())
    W, P, peak = pareto_front(items.weights, items.values, float(items.capacity), memory_limit)
    unit = 1.0 if problem.scale is None else problem.scale
    mem_out: list[float] = []
    val_out: list[float] = []
    for w, p in zip(W.tolist(), P.tolist()):
        val = base + p
        if val <= 0:
            continue
        mem_out.append(w / unit if scale is not None else w)
        val_out.append(val)
    total = math.fsum(max(0.0, r) for r in problem.runtimes.tolist())
    if everything and mem_out:
        budget = max(float(budget), mem_out[-1])
    return Frontier(
        memory=mem_out,
        value=val_out,
        max_memory=float(budget),
        scale=scale,
        total_runtime=total,
        stats={"peak_bytes": peak, "states": int(W.size), "seconds": time.perf_counter() - start},
        _memory_in=problem.memory,
        _runtimes_in=problem.runtimes,
    )
