"""Which saved set does a peak-constrained solver's graph get? The knapsack plan, a budget's shortcut, or a replay.

:func:`choose_for_peak` compares the knapsack plan :func:`._plan.search_plan`
found with the saved sets PyTorch's budgets reach without a knapsack (the
default min-cut, the more aggressive one, the inputs only) and keeps the one
that fits with the least recomputation. The choice is kept per graph
(:class:`ChosenPlan`, under :func:`~..capture.graph_key`), so that compiling
the same graph again replays it (:func:`replayed_plan`) without a search.

May import: torch, :mod:`.._rng`, :mod:`..peaks` and :mod:`..capture`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch._functorch.config as _fconfig
import torch._functorch.partitioners as _partitioners

from .. import _rng, peaks
from ..capture import Capture, bypass, graph_key

__all__ = ["ChosenPlan", "choose_for_peak", "min_cut_options", "replayed_plan"]


def min_cut_options(kind: str) -> Any:
    """``choose_saved_values_set``'s min-cut options: "default" (budget 1) or "more_aggressive"."""
    c = _fconfig
    opts = _partitioners.MinCutOptions(
        ban_if_used_far_apart=c.ban_recompute_used_far_apart,
        ban_if_long_fusible_chains=c.ban_recompute_long_fusible_chains,
        ban_if_materialized_backward=c.ban_recompute_materialized_backward,
        ban_if_not_in_allowlist=c.ban_recompute_not_in_allowlist,
        ban_if_reduction=c.ban_recompute_reductions,
    )
    if c.aggressive_recomputation or kind == "more_aggressive":
        opts = dataclasses.replace(opts, ban_if_used_far_apart=False, ban_if_long_fusible_chains=False,
                                   ban_if_materialized_backward=False)  # fmt: skip
    if c.aggressive_recomputation:
        opts = dataclasses.replace(opts, ban_if_not_in_allowlist=False)
    return opts


def choose_for_peak(cap: Capture, solver: Any, knapsack_saved: list[Any], searched_min: int | None) -> list[Any]:
    """The saved set a peak-constrained solver's graph gets: its knapsack plan or one the budgets' shortcuts give.

    Besides the knapsack plan (found by :func:`._plan.search_plan` in the solver's
    call), PyTorch's budgets reach saved sets no knapsack plan gives: the
    default min-cut (budget 1), the more aggressive one, and the inputs only
    (budget 0). Among these, those whose modelled peak is within the limit are
    compared by what they recompute (PyTorch's runtime estimate of every op the
    backward runs again, candidates or not), the least winning; when none fits,
    the smallest modelled peak. Under inductor, when the knapsack plan fits, a
    budget's saved set is lowered only if it could win (:func:`_screened`); the
    record's ``others`` says why one was not (``screened``).
    """
    limit = solver.max_peak_bytes
    plans: list[tuple[str, list[Any]]] = [("knapsack", list(knapsack_saved))]
    with bypass():
        for kind in ("default", "more_aggressive"):
            try:
                plans.append((kind, list(_partitioners.solve_min_cut(cap.joint_graph, cap.node_info,
                                                                     min_cut_options(kind))[0])))  # fmt: skip
            except Exception:  # a min-cut PyTorch itself would fail on: not a plan
                continue
        plans.append(("inputs", list(cap.node_info.inputs)))
    compose = solver._step_scorer(cap.joint_graph)

    def scored_plan(kind: str, saved: list[Any], backend: str | None = None) -> tuple:
        g = cap.peak(saved, backend)
        return (compose(g) if compose is not None else peaks.step_peak([g]), cap.recompute_cost(g), kind, saved, g)

    # What the partitioner would run: no random op recomputed (budget 0's rule for "inputs").
    plans = [(kind, _rng.random_safe(cap.joint_graph, cap.node_info, saved, 0 if kind == "inputs" else 1))
             for kind, saved in plans]  # fmt: skip
    scored = [scored_plan(*plans[0])]
    screened = {}
    for kind, saved in plans[1:]:
        if cap.backend == "inductor" and scored[0][0] <= limit:
            guess = scored_plan(kind, saved, "aot_eager")
            screened[kind] = _screened(guess, scored[0], scored_plan(*plans[0], "aot_eager"), limit)
            if screened[kind]:
                continue
        scored.append(scored_plan(kind, saved))
    fitting = [x for x in scored if x[0] <= limit]
    best = min(fitting, key=lambda x: (x[1], x[0])) if fitting else min(scored, key=lambda x: (x[0], x[1]))
    modelled = [x[0] for x in scored] + ([searched_min] if searched_min is not None else [])
    solver._graph_peaks.append(best[4])
    solver._planned(cap.joint_graph, best[4])
    choice = {
        "plan": best[2], "predicted_peak_bytes": best[0], "fits": bool(fitting), "recompute_cost": best[1],
        "min_peak_bytes": min(modelled), "saved": len(best[3]),
        "others": {x[2]: {"predicted_peak_bytes": x[0], "recompute_cost": x[1]} for x in scored},
    }  # fmt: skip
    for kind, why in screened.items():
        if why:
            choice["others"][kind] = {"predicted_peak_bytes": None, "recompute_cost": why[1], "screened": why[0]}
    solver.choices.append(choice)
    solver.plans[graph_key(cap.joint_graph)] = ChosenPlan(tuple(n.name for n in best[3]), best[4], choice)
    return best[3]


#: Under inductor, a budget's saved set whose liveness peak, scaled by inductor's ratio to it on the knapsack
#: plan, is above the limit by more than this fraction is not lowered: it would not fit.
SCREEN_MARGIN = 0.05


def _screened(guess: tuple, knapsack: tuple, knapsack_guess: tuple, limit: int) -> tuple[str, float] | None:
    """Why a budget's saved set need not be scored by inductor's code, or None when it must be.

    ``guess``: the saved set scored by the liveness pass (its recompute cost is exact: the same partition);
    ``knapsack``: the knapsack plan, scored by inductor and within the limit, and ``knapsack_guess`` by the
    liveness pass (``(peak, recompute cost, ...)`` each). A plan that recomputes at
    least as much cannot win; one whose scaled liveness peak is over the limit by :data:`SCREEN_MARGIN` would not fit.
    """
    peak, cost = guess[0], guess[1]
    if cost >= knapsack[1]:
        return ("recomputes no less than the knapsack plan", cost)
    ratio = knapsack[0] / max(1, knapsack_guess[0])
    if peak * ratio > (1 + SCREEN_MARGIN) * limit:
        return (f"over the limit by the liveness pass ({peak * ratio:.0f} bytes, scaled)", cost)
    return None


@dataclass(frozen=True)
class ChosenPlan:
    """A peak-constrained solver's plan for one joint graph: what it saves, its modelled peak, the choice's record.

    Kept by the solver under the graph's :func:`graph_key`, so that compiling
    the same graph again (the real compile after planning on fake tensors, or
    the user's own with ``use_solver(report.solver)``) saves the same nodes
    without searching again.
    """

    saved_names: tuple[str, ...]
    graph_peak: peaks.GraphPeak
    choice: dict[str, Any]


def replayed_plan(solver: Any, joint_graph: Any) -> list[Any] | None:
    """The saved nodes of the plan ``solver`` already chose for a graph with ``joint_graph``'s code (None: none)."""
    plans = getattr(solver, "plans", None)
    if not plans:
        return None
    plan = plans.get(graph_key(joint_graph))
    if plan is None:
        return None
    by_name = {n.name: n for n in joint_graph.nodes}
    if any(name not in by_name for name in plan.saved_names):
        return None
    solver._graph_peaks.append(plan.graph_peak)
    solver._planned(joint_graph, plan.graph_peak)
    solver.choices.append(dict(plan.choice, replayed=True))
    return [by_name[name] for name in plan.saved_names]
