"""The solvers a benchmark compares, behind one calling convention.

A peer is loaded by name in the child process (so its imports, e.g. torch, are
paid there and not in the parent) and called as
``fn(memory, runtimes, max_memory, scale) -> (saved_indices, reported_value)``.
The benchmark re-sums the value from the saved indices, so every peer is scored
the same way.

* ours: every name in :data:`remat_knapsack.SOLVERS`, read at run time;
* PyTorch's four, by their PyTorch names, when torch is importable (they
  quantise with their own fixed scale 10^4);
* ``ortools_bb``: OR-Tools' ``KNAPSACK_MULTIDIMENSION_BRANCH_AND_BOUND_SOLVER``
  on the same quantised weights, runtimes scaled to integers;
* ``scipy_highs``: SciPy's ``milp`` called exactly as PyTorch's ``ilp_knapsack``
  calls it (default tolerances), for machines without torch.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["Peer", "available", "default_names", "load", "TORCH_SOLVERS"]

PeerFn = Callable[[Sequence[float], Sequence[float], float, float], "tuple[list[int], float]"]

TORCH_MODULE = "torch._functorch._activation_checkpointing.knapsack"
TORCH_SOLVERS = ("greedy_knapsack", "ilp_knapsack", "dp_knapsack", "dp_knapsack_sliding_hirschberg")


@dataclass(frozen=True)
class Peer:
    name: str
    family: str  # "ours", "torch", "ortools", "scipy"
    exact: bool  # claims the optimum (of the quantised problem)
    needs: tuple[str, ...] = ()  # modules imported before measuring


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _ours() -> list[Peer]:
    from .. import SOLVERS, api

    registry = getattr(api, "_REGISTRY", {})  # each solver's own exactness flag; "auto" is exact

    def exact(name: str) -> bool:
        spec = registry.get(name)
        return bool(getattr(spec, "exact", name != "greedy"))

    return [Peer(s, "ours", exact(s), needs=("scipy.optimize",) if s == "ilp" else ()) for s in SOLVERS]


def available() -> dict[str, Peer]:
    """Every peer that can run here, by name, in display order."""
    peers = _ours()
    if _has("torch"):
        peers += [
            Peer("greedy_knapsack", "torch", exact=False, needs=("torch",)),
            # HiGHS at its default tolerances: not always optimal.
            Peer("ilp_knapsack", "torch", exact=False, needs=("torch", "scipy.optimize")),
            Peer("dp_knapsack", "torch", exact=True, needs=("torch",)),
            # Exact value, but PyTorch 2.10-2.14 can exceed the budget (off by one).
            Peer("dp_knapsack_sliding_hirschberg", "torch", exact=True, needs=("torch",)),
        ]
    if _has("ortools"):
        peers.append(Peer("ortools_bb", "ortools", exact=True, needs=("ortools.algorithms.python.knapsack_solver",)))
    if _has("scipy"):
        peers.append(Peer("scipy_highs", "scipy", exact=False, needs=("scipy.optimize",)))
    return {p.name: p for p in peers}


def default_names(peers: dict[str, Peer]) -> list[str]:
    """All available peers, except ``scipy_highs`` where PyTorch's identical ``ilp_knapsack`` runs."""
    names = list(peers)
    if "ilp_knapsack" in peers and "scipy_highs" in peers:
        names.remove("scipy_highs")
    return names


def load(name: str) -> PeerFn:
    """The callable for ``name``; imports its dependencies."""
    from .. import SOLVERS

    if name in SOLVERS:
        return _our_solver(name)
    if name in TORCH_SOLVERS:
        return _torch_solver(name)
    if name == "ortools_bb":
        return _ortools_bb
    if name == "scipy_highs":
        return _scipy_highs
    raise KeyError(name)


def _our_solver(name: str) -> PeerFn:
    from .. import solve

    def run(memory, runtimes, max_memory, scale):
        s = solve(memory, runtimes, max_memory, solver=name, scale=scale)
        return s.saved, s.value

    return run


def _torch_solver(name: str) -> PeerFn:
    module = importlib.import_module(TORCH_MODULE)
    fn = getattr(module, name)

    def run(memory, runtimes, max_memory, scale):  # PyTorch's solvers fix scale 10^4
        value, saved, _recomputed = fn(list(memory), list(runtimes), max_memory)
        return sorted(saved), float(value)

    return run


def value_scale(runtimes: Sequence[float]) -> float:
    """Factor taking positive runtimes to int64 profits with ~1e-9 relative resolution.

    Large enough that the smallest differences that matter survive rounding
    (the largest runtime maps to about 10^9), and small enough that no sum of
    profits leaves the range where float64 and int64 agree (2^53).

    >>> value_scale([1.0, 100.0])
    10000000.0
    """
    pos = [r for r in runtimes if r > 0]
    if not pos:
        return 1.0
    return min(1e9 / max(pos), float(2**53) / math.fsum(pos))


def _ortools_bb(memory, runtimes, max_memory, scale):
    from ortools.algorithms.python import knapsack_solver as ks

    if scale is None:
        raise ValueError("ortools_bb needs integer weights: give a scale, not scale=None")
    # Same quantisation as our solvers; runtimes <= 0 are never saved, so left out.
    keep = [i for i, r in enumerate(runtimes) if r > 0]
    f = value_scale(runtimes)
    profits = [max(1, round(runtimes[i] * f)) for i in keep]
    weights = [round(memory[i] * scale) for i in keep]
    solver = ks.KnapsackSolver(ks.SolverType.KNAPSACK_MULTIDIMENSION_BRANCH_AND_BOUND_SOLVER, "bench")
    solver.init(profits, [weights], [round(max_memory * scale)])
    solver.solve()
    saved = [i for k, i in enumerate(keep) if solver.best_solution_contains(k)]
    return saved, math.fsum(runtimes[i] for i in saved)


def _scipy_highs(memory, runtimes, max_memory, scale):
    # Verbatim the call in torch/_functorch/_activation_checkpointing/knapsack.py (2.13).
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    np_memory = np.array(memory)
    c = -np.array(runtimes)
    res = milp(
        c=c,
        constraints=[LinearConstraint(A=np_memory, ub=np.array(max_memory))],
        integrality=np.ones_like(c),
        bounds=Bounds(0, 1),
    )
    if not res.success:
        raise RuntimeError("scipy milp failed: " + str(res.message))
    return [i for i, x in enumerate(res.x) if x == 1], float(-res.fun)
