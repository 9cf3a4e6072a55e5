"""The whole memory/runtime trade-off curve from one exact Pareto pass.

``frontier(memory, runtimes, max_memory)`` merges the items' (weight, value)
states once, in index order, without bounds (every budget matters), and keeps
the Pareto-optimal pairs. The best value at any budget is then a binary search,
and the knee is read off the curve instead of re-solving 100 budgets as
PyTorch's ``KnapsackEvaluator`` does.

Exactness. Breakpoints are exact weight sums compared exactly: the quantised
integer weights, or with ``scale=None`` the float64 memory on its 2**e grid
(see ``_grid``), in int64 when the grid sums fit below 2**62 and in 128-bit
integers below 2**125 (compiled ``_frontier``, GIL released, Ctrl-C
honoured), in Python integers beyond (weights spanning more than about 2**70:
some 40 times slower, 152 bytes per state). Values
are float64 sums in index order: exact for integer runtimes whose positive
sum (divided by the largest power of two dividing them all) is below 2**53.
Integer runtimes beyond that (odd FLOP counts whose total passes 2**53) are
summed exactly in Python integers (``stats["pass"] == "python-exact"``,
about 40 times slower) and each value is then rounded once, correctly, so
``best(b)`` is the exact optimum rounded to float64; a point whose rounded
value equals the one before it is dropped. Other runtimes: each value is the
float64 sum of its set's runtimes, within n ulps of the exact sum, and a set
whose value differs from the best by less than that rounding may be taken
for it.

Cost. Time O(n * S) and memory O(S + n), where S is the number of Pareto
points (of the longest prefix), at most min(W + 1, 2**n) (W: the capacity in
grid units). On the paper's instances at scale 10,000, S grows about as n**2
(about 0.14 million points at n = 1,000, 1.2 million at n = 3,000), so the
time grows about as n**3: the pass checks ``memory_limit`` as it grows (32
bytes per state slot) and raises :class:`SolverMemoryError` instead of
exhausting memory, and Ctrl-C stops it (checked every 2**20 merged states).
``len(f)`` is S less the empty set.

>>> from remat_knapsack import frontier
>>> f = frontier([0.2, 0.3, 0.5], [2.0, 3.0, 4.0])
>>> f.memory, f.value, len(f)
([0.2, 0.3, 0.5, 0.7, 0.8, 1.0], [2.0, 3.0, 5.0, 6.0, 7.0, 9.0], 6)
>>> f.best(0.6), f.selection(0.6)
(5.0, [0, 1])
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .._common._grid import floor_grid, grid_exponent, grid_integers, pareto_step
from .._common._memory import limit_bytes
from .._common._validate import Problem, as_real, check_memory_limit, quantise_budget, validate
from ..errors import SolverMemoryError
from ..sparse._exact import beyond_exact
from . import _frontier

__all__ = ["Frontier", "frontier"]

#: Bytes per item: the selected items' weights and values, masks.
_ITEM_BYTES = 40
#: State slots the compiled pass starts with (``_frontier.FIRST_STATES``).
_FIRST_STATES = 256
#: Bytes per state of the Python-integer pass (two generations of lists of
#: ints and floats), used only when grid sums do not fit in int64.
_PY_STATE_BYTES = 2 * (8 + 8 + 36 + 24)


@dataclass(frozen=True, eq=False)
class Frontier:
    """Exact best runtime saved for every budget up to ``max_memory``.

    ``len(f)`` is the number of breakpoints. ``f.best(b)`` and
    ``f.selection(b)`` are ``solve(memory, runtimes, b, scale=scale)``'s
    value and saved set, for every budget ``b`` the frontier covers.

    Attributes
    ----------
    memory : list[float]
        Breakpoints, ascending, in the caller's memory units: the quantised
        weight divided by ``scale``, or with ``scale=None`` the exact sum
        rounded up to float64 (so ``best(memory[i]) == value[i]``). Built on
        first access (about 64 bytes per point, as is ``value``).
    value : list[float]
        Strictly ascending: the best runtime saved at a budget is ``value[i]``
        for the last breakpoint within it, and 0.0 when there is none.
    max_memory : float
        The largest budget the curve covers (the total memory when every
        budget is covered).
    scale : float or None
        As in :func:`remat_knapsack.solve`.
    total_runtime : float
        Sum of the positive runtimes.
    stats : dict
        ``peak_bytes`` (the pass's state buffers and per-item arrays),
        ``states`` (= ``len(f)``), ``seconds``, ``pass`` (``"int64"``,
        ``"int128"``: the compiled pass; ``"python"``: Python integers;
        ``"python-exact"``: Python integers, values too;
        ``"none"``: no item to merge).
    """

    max_memory: float
    scale: float | None
    total_runtime: float
    stats: dict[str, Any] = field(repr=False)
    _grid: Any = field(repr=False)  # int64 array or list of ints: exact breakpoints in grid units
    _values: np.ndarray = field(repr=False)
    _exponent: int = field(repr=False)  # scale=None: the grid is 2**_exponent
    _cover: int = field(repr=False)  # the capacity covered, in grid units
    _complete: bool = field(repr=False)  # every item fits in _cover
    _problem: Problem = field(repr=False)

    def __len__(self) -> int:
        return int(self._values.size)

    @cached_property
    def memory(self) -> list[float]:
        if self.scale is not None:
            return (np.asarray(self._grid, dtype=np.float64) / self.scale).tolist()
        return [_ceil_float(g, self._exponent) for g in _as_list(self._grid)]

    @cached_property
    def value(self) -> list[float]:
        return self._values.tolist()

    def _capacity(self, budget: Any) -> int:
        """``budget`` in grid units, as ``solve`` quantises it (ValueError naming it)."""
        b = as_real(budget, "budget")
        if math.isnan(b) or b < 0:
            raise ValueError(f"budget must be a number >= 0, got {budget!r}")
        if self.scale is not None:
            c = quantise_budget(b, self.scale, self._cover + 1)
        else:
            c = self._cover + 1 if math.isinf(b) else floor_grid(b, self._exponent)
        if c > self._cover:
            if not self._complete:
                raise ValueError(f"budget {budget!r} is above the frontier's max_memory {self.max_memory!r}")
            c = self._cover
        return c

    def best(self, budget: float) -> float:
        """The best runtime saved within ``budget`` (0.0 when nothing fits):
        ``solve``'s value at that budget (quantised as ``solve`` does)."""
        i = bisect.bisect_right(self._grid, self._capacity(budget)) - 1
        return float(self._values[i]) if i >= 0 else 0.0

    def selection(self, budget: float) -> list[int]:
        """The indices saved at ``budget``: exactly ``solve(..., budget).saved``
        (dp_knapsack's canonical set), solved anew."""
        from ..api import solve

        self._capacity(budget)
        p = self._problem
        return solve(p.memory, p.runtimes, budget, scale=self.scale).saved

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

    def __repr__(self) -> str:
        return f"Frontier({len(self)} breakpoints, max_memory={self.max_memory!r}, scale={self.scale!r})"


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
    defaults to the total memory (``None`` or ``inf``: every budget). Items
    with runtime <= 0 never count, items of weight 0 always do (as in ``solve``).
    Time O(n * S), memory O(S + n), S the number of Pareto states (module
    docstring).

    Raises
    ------
    ValueError
        On malformed input, as ``solve``.
    SolverMemoryError
        Before allocating, and as the states grow, when they would not fit in
        ``memory_limit`` (or the memory available).
    KeyboardInterrupt
        On Ctrl-C, within a few milliseconds of work, with the states freed.
    """
    check_memory_limit(memory_limit)
    problem = validate(memory, runtimes, math.inf if max_memory is None else max_memory, scale)
    start = time.perf_counter()
    w = problem.memory if problem.weights is None else problem.weights
    keep = np.flatnonzero(problem.runtimes > 0)
    if problem.scale is None:
        e = grid_exponent(w[keep])
        grid = grid_integers(w[keep], e)
        total = int(np.sum(grid)) if isinstance(grid, np.ndarray) else sum(grid)
        cap = total if math.isinf(problem.max_memory) else min(total, floor_grid(problem.max_memory, e))
    else:
        e = 0
        grid = w[keep]
        total = int(grid.sum())
        cap = min(problem.capacity, total)
    fits = _flags(grid, cap)
    values = problem.runtimes[keep][fits]
    if values.size:
        W, P, peak, kind = _pareto(_take(grid, fits), values, cap, memory_limit)
    else:  # nothing to merge: nothing allocated, any memory_limit is met
        W, P, peak, kind = np.zeros(1, dtype=np.int64), np.zeros(1), 0, "none"
    if len(P) and P[0] <= 0:  # the empty set, when no item is free
        W, P = W[1:], P[1:]
    everything = cap >= total
    budget = problem.max_memory
    if everything:  # every budget: report the total memory
        budget = math.fsum(problem.memory.tolist())
        if len(P) and problem.scale is None:
            budget = max(budget, _ceil_float(W[-1], e))
    return Frontier(
        max_memory=float(budget),
        scale=problem.scale,
        total_runtime=math.fsum(problem.runtimes[keep].tolist()),
        stats={"peak_bytes": peak, "states": len(P), "seconds": time.perf_counter() - start, "pass": kind},
        _grid=W,
        _values=np.asarray(P, dtype=np.float64),
        _exponent=e,
        _cover=cap,
        _complete=everything,
        _problem=problem,
    )


def _flags(grid: Any, cap: int) -> np.ndarray:
    if isinstance(grid, np.ndarray):
        return grid <= cap
    return np.array([g <= cap for g in grid], dtype=bool)


def _take(grid: Any, mask: np.ndarray) -> Any:
    if isinstance(grid, np.ndarray):
        return np.ascontiguousarray(grid[mask], dtype=np.int64)
    return [g for g, m in zip(grid, mask.tolist()) if m]


def _as_list(grid: Any) -> list[int]:
    return grid.tolist() if isinstance(grid, np.ndarray) else list(grid)


def _ceil_float(g: int, e: int) -> float:
    """The smallest float64 >= g * 2**e (inf beyond float64)."""
    try:
        x = math.ldexp(float(g), e)  # within one ulp of g * 2**e
    except OverflowError:
        return math.inf
    return x if _exact_le(int(g), e, x) else math.nextafter(x, math.inf)


def _exact_le(g: int, e: int, x: float) -> bool:
    """g * 2**e <= x, exactly."""
    if math.isinf(x):
        return True
    num, den = x.as_integer_ratio()
    # g * 2**e <= num / den  <=>  g * den * 2**e <= num
    return (g * den << e) <= num if e >= 0 else g * den <= (num << -e)


def _limit_states(n: int, cap: int, memory_limit: int | None, state_bytes: int) -> tuple[int, int]:
    """(max state slots, limit in bytes). The states are at most
    min(cap + 1, 2**n); the pass starts with up to 256 slots and doubles.
    SolverMemoryError if not even the start fits."""
    limit = limit_bytes(memory_limit)
    most = min(cap + 1, 1 << min(n, 62))
    base = _ITEM_BYTES * n + min(_FIRST_STATES, most) * state_bytes
    if base > limit:
        raise SolverMemoryError("frontier", base, limit, f"{n} items")
    return max(1, min(most, (limit - _ITEM_BYTES * n) // state_bytes)), limit


def _pareto(grid: Any, values: np.ndarray, cap: int, memory_limit: int | None) -> tuple[Any, np.ndarray, int, str]:
    """Pareto states (grid weights, values, peak bytes, which pass ran)."""
    n = len(values)
    if beyond_exact(values):
        # Integer runtimes whose float64 sums may round: the Python pass on
        # exact integer values; each value then rounds once, correctly, and a
        # point whose rounded value equals the one before it is dropped (the
        # best value at every budget, rounded, is the same without it).
        max_states, limit = _limit_states(n, cap, memory_limit, _PY_STATE_BYTES)
        W, P = _pareto_python([int(g) for g in _as_list(grid)], [int(v) for v in values.tolist()], int(cap),
                              max_states, limit)
        Wk: list[int] = []
        Pk: list[float] = []
        for wq, pq in zip(W, P):
            f = float(pq)
            if not Pk or f > Pk[-1]:
                Wk.append(wq)
                Pk.append(f)
        return Wk, np.asarray(Pk, dtype=np.float64), _ITEM_BYTES * n + _PY_STATE_BYTES * len(W), "python-exact"
    if isinstance(grid, np.ndarray) and cap < _INT64_CAP:
        max_states, limit = _limit_states(n, cap, memory_limit, int(_frontier.STATE_BYTES))
        try:
            W, P, peak = _frontier.pareto(grid, np.ascontiguousarray(values, dtype=np.float64), cap, max_states)
        except _frontier.StateLimit:
            more = _ITEM_BYTES * n + int(_frontier.STATE_BYTES) * 2 * max_states  # the next doubling
            raise SolverMemoryError(
                "frontier", more, limit, f"{n} items: the Pareto states outgrew {max_states} slots"
            ) from None
        return W, P, _ITEM_BYTES * n + int(_frontier.STATE_BYTES) * peak, "int64"
    if cap < _INT128_CAP:
        return _pareto128([int(g) for g in _as_list(grid)], values, int(cap), memory_limit)
    max_states, limit = _limit_states(n, cap, memory_limit, _PY_STATE_BYTES)
    W, P = _pareto_python([int(g) for g in _as_list(grid)], values.tolist(), int(cap), max_states, limit)
    return W, np.asarray(P, dtype=np.float64), _ITEM_BYTES * n + _PY_STATE_BYTES * len(W), "python"


_INT64_CAP = 1 << 62
_INT128_CAP = 1 << 125
_MASK64 = (1 << 64) - 1


def _pareto128(
    g: list[int], values: np.ndarray, cap: int, memory_limit: int | None
) -> tuple[list[int], np.ndarray, int, str]:
    """The compiled pass on 128-bit weights (grid sums from 2**62 to 2**125)."""
    n = len(g)
    state_bytes = int(_frontier.STATE_BYTES_128)
    max_states, limit = _limit_states(n, cap, memory_limit, state_bytes)
    hi = np.array([x >> 64 for x in g], dtype=np.uint64)
    lo = np.array([x & _MASK64 for x in g], dtype=np.uint64)
    try:
        Wh, Wl, P, peak = _frontier.pareto128(hi, lo, np.ascontiguousarray(values, dtype=np.float64), cap, max_states)
    except _frontier.StateLimit:
        more = _ITEM_BYTES * n + state_bytes * 2 * max_states
        why = f"{n} items: the Pareto states outgrew {max_states} slots"
        raise SolverMemoryError("frontier", more, limit, why) from None
    W = [(hi << 64) | lo for hi, lo in zip(Wh.tolist(), Wl.tolist())]
    return W, P, _ITEM_BYTES * n + state_bytes * peak, "int128"


def _pareto_python(
    g: list[int], v: list[float] | list[int], cap: int, max_states: int, limit: int
) -> tuple[list[int], list[float]]:
    """The kernel's pass on Python integers (grid sums beyond int64). Same
    merge and tie rule; slow, exact. Integer values (``int``) are summed
    exactly."""
    W, P = [0], [0 if v and isinstance(v[0], int) else 0.0]
    for gi, vi in zip(g, v):
        nW, nP = pareto_step(W, P, gi, vi, cap)
        if len(nW) > max_states:
            more = _ITEM_BYTES * len(g) + _PY_STATE_BYTES * len(nW)
            raise SolverMemoryError("frontier", more, limit, f"{len(g)} items: the Pareto states outgrew {max_states}")
        W, P = nW, nP
    return W, P
