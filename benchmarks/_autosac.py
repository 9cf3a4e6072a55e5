"""PyTorch's AutoSAC MILPs, fed the statistics of one recorded eager step, answering in our ``choice`` format.

    pip install pulp pwlf                      # benchmark peers, never runtime dependencies
    python benchmarks/_autosac.py              # self-check on a small decoder

AutoSAC (``torch.distributed._tools``) plans in two MILPs: ``sac_milp`` picks
the modules to checkpoint and, per module, the fraction of its activation
memory to discard; ``get_optimal_checkpointing_policy_per_module`` then picks,
within each module, the ops to save for that fraction. Here both are fed what
:class:`remat_knapsack.torch.eager._timeline.Timeline` knows of a recorded step
(:func:`~remat_knapsack.torch.eager._record.record_step`) instead of what
AutoSAC's own estimators (``MemTracker``, ``RuntimeEstimator``,
``SACEstimator`` under ``FakeTensorMode``) would measure:

* :func:`per_unit_policy`: one unit's ``SACStats``, built as ``SACEstimator``
  builds them, from the unit's ops (runtimes in ms, as AutoSAC keeps them);
  the MILP's 0/1 per op becomes our mask.
* :func:`autosac_plan`: AutoSAC's whole-model answer for a byte limit. The
  graph has the root and one node per unit; each unit's tradeoff curve is
  fitted by ``SACEstimator``'s own greedy order and piecewise-linear fit.
  ``sac_milp`` budgets its own peak model, not ours, so its budget is bisected
  until our :meth:`Timeline.peak` of its plan fits the limit.

Approximations (what AutoSAC would see differently):

* Ops are those the checkpoint cache counts (``SAC_IGNORED_OPS`` left out);
  AutoSAC also leaves out ``clone`` and ``lift_fresh``. An op's memory is
  what it creates less the unit's outputs (AutoSAC zeroes only its guess at
  the last op). In-place ops are those whose schema writes an argument
  (AutoSAC: names ending in ``_``), tied to the op that made the storage, or
  always saved when it was made outside the unit: so batch norm's running
  statistics update is a forced save to the MILP as to us. View-like ops are
  the ops that create and write nothing (an in-place op listed as both would
  be infeasible). ``force_store_random`` is False, as ``SACEstimator`` sets it
  for a module called with tensors.
* The MILP may save ops our model never saves (random ops, among them CPU
  attention, tagged random; ops whose output is later written in place) or
  recompute ops it must save: the mask overrides it (:func:`_mask`), so a
  policy can hold less than its fraction.
* Graph nodes: parameters, gradients and inputs count 0, since our peaks are
  above what the step starts with (the gradients it allocates are in the
  windows below); outputs and ``act_bw_per_module``, which ``sac_milp`` does
  not read, are 0 too. Each op of the step belongs to one node's window: a unit's
  forward and what ran since the previous unit's, the unit's backward (from
  its replay point to the next unit's), the root's rest (after the last
  unit's forward to the first unit's backward). ``act_total`` is the live
  bytes at the end of the unit's forward (the root's: of the whole forward),
  ``act_grad_per_module`` the rest of its window's plain peak, so that
  ``sac_milp``'s memory for a node with nothing checkpointed is our plain
  peak over its window. ``act_fw_per_module`` is the unit's bytes the plain
  step keeps for the backward. The root, and units that cannot be
  checkpointed or create or spend nothing, are leaves to ``sac_milp`` (no
  tradeoff curve, never checkpointed). A curve pwlf cannot fit (one
  candidate op) gets the flat bound of :func:`_tradeoff`.
* The bisection assumes a larger budget gives a plan with a larger peak.
"""

from __future__ import annotations

import logging
import sys
import time
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
from torch.distributed._tools.ilp_utils import Graph, parse_module_info
from torch.distributed._tools.sac_estimator import SACEstimator, SACStats, SACTradeOffStats

from remat_knapsack.torch.eager._timeline import Timeline, UnitItems

GiB = 1 << 30
ROOT = "model"  # the root node's fqn; unit u's is f"model.{name}", so ilp_utils sees the units as its submodules

__all__ = ["autosac_plan", "per_unit_policy", "unit_sac_stats"]


# ---------------------------------------------------------------------- one unit


def unit_sac_stats(timeline: Timeline, unit: int) -> tuple[SACStats, np.ndarray]:
    """The unit's ``SACStats``, and the positions (into the unit's ops) of the ops it lists, in order."""
    items = timeline.units[unit]
    ops = [timeline.recording.ops[i] for i in items.ops]
    listed = np.flatnonzero([op.occurrence >= 0 for op in ops])  # what the checkpoint cache counts
    index = {int(p): k for k, p in enumerate(listed)}
    creator = {sid: index[int(p)] for p in listed for sid in ops[p].created}
    kept = set(items.kept_op.tolist())
    writes = [bool(ops[p].writes or ops[p].writes_outside) for p in listed]
    inplace = []
    for k, p in enumerate(listed):
        op = ops[p]
        if writes[k]:
            # AutoSAC's parent: the op that made the storage written; itself (always saved) when not in the unit
            parents = [creator[sid] for sid in op.writes if sid in creator]
            inplace.append((k, k if op.writes_outside or not parents else min(parents)))
    stats = SACStats(
        func_names=[ops[p].name.split(".")[1] for p in listed],
        runtimes=(items.seconds[listed] * 1e3).tolist(),
        memory=items.weights[listed].tolist(),
        view_like_ops=[k for k, p in enumerate(listed) if not ops[p].created and not writes[k]],
        rand_ops=[k for k, p in enumerate(listed) if ops[p].random],
        saved_autograd_ops=[k for k, p in enumerate(listed) if int(p) in kept],
        inplace_ops=inplace,
        force_store_random=False,
    )  # fmt: skip
    return stats, listed


def _mask(items: UnitItems, listed: np.ndarray, decision: list[int]) -> np.ndarray:
    """Our mask from the MILP's 0/1 per listed op.

    Our model's rules win: an op the Timeline cannot save (``eligible`` False:
    random, creates nothing, later written in place, not counted by the cache)
    is replayed even when the MILP saved it, and a ``forced`` op (writes
    outside the unit) is saved even when the MILP recomputed it. An empty
    decision (the MILP found no solution) recomputes every op but the forced.
    """
    mask = np.zeros(len(items.ops), dtype=bool)
    if decision:
        mask[listed] = np.asarray(decision, dtype=bool)
    return (mask & items.eligible) | items.forced


def per_unit_policy(timeline: Timeline, unit: int, memory_fraction: float) -> tuple[np.ndarray, float]:
    """AutoSAC's ops to save in unit ``unit`` for ``memory_fraction`` of its ops' bytes: (our mask, MILP seconds)."""
    from torch.distributed._tools.sac_ilp import get_optimal_checkpointing_policy_per_module  # needs pulp

    stats, listed = unit_sac_stats(timeline, unit)
    start = time.perf_counter()
    decision = get_optimal_checkpointing_policy_per_module(stats, min(1.0, max(0.0, memory_fraction)))
    seconds = time.perf_counter() - start
    return _mask(timeline.units[unit], listed, decision), seconds


# ---------------------------------------------------------------------- the graph


def _tradeoff(stats: SACStats) -> tuple[SACTradeOffStats, bool]:
    """``SACEstimator``'s greedy order and 2-segment piecewise-linear fit (its default), with a fixed seed.

    With one candidate the shifted curve has one point and pwlf's slopes are
    NaN (``sac_milp`` would raise); the fit is then the bound that point
    gives, any discard costing the whole runtime, and the flag is True.
    """
    estimator = SACEstimator()
    state = np.random.get_state()  # pwlf's differential evolution draws from numpy's global generator
    np.random.seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # pwlf's 0/0 on a one-point curve, handled below
            tradeoff = estimator._get_sac_tradeoff_pwlf_stats(stats, estimator._get_greedy_order_meta(stats))
    finally:
        np.random.set_state(state)
    flat = not np.isfinite(tradeoff.slopes + tradeoff.intercepts).all()
    if flat:
        tradeoff.n_segments, tradeoff.slopes, tradeoff.intercepts = 1, [0.0], [1.0]
    return tradeoff, flat


def _windows(timeline: Timeline, order: list[int]) -> np.ndarray:
    """Per op of the step, the node (0: the root, 1 + k: the unit ``order[k]``) whose window holds it."""
    rec = timeline.recording
    t = np.arange(timeline.length)
    node = np.zeros(timeline.length, dtype=np.int64)
    fw_ends = np.array([max(rec.unit_ops[u], default=-1) for u in order])
    forward = t < rec.first_backward
    k = np.searchsorted(fw_ends, t[forward])  # the first unit whose forward ends at or after the op
    node[forward] = np.where(k < len(order), k + 1, 0)
    replays = sorted((timeline.units[u].replay_at, k) for k, u in enumerate(order) if timeline.units[u].replay_at >= 0)
    starts = np.array([r for r, _ in replays], dtype=np.int64)
    j = np.searchsorted(starts, t[~forward], side="right") - 1  # the last unit whose backward began
    node[~forward] = np.array([k + 1 for _, k in replays] + [0])[j]  # j = -1 (none yet): the trailing 0, the root
    return node


def _node(fqn: str, live_at_end: int, window_peak: int, kept: int, fw_ms: float, bw_ms: float,
          tradeoff: SACTradeOffStats | None) -> dict[str, Any]:  # fmt: skip
    return {
        "fqn": fqn, "param_per_module": 0, "grad_per_module": 0, "grad_total": 0,
        "act_fw_per_module": kept, "act_bw_per_module": 0,
        "act_grad_per_module": max(0, window_peak - live_at_end), "act_total": live_at_end,
        "input_per_module": 0, "output_per_module": 0,
        "fw_runtime_per_module": fw_ms, "bw_runtime_per_module": bw_ms,
        "is_leaf": tradeoff is None,
        "sac_runtime": tradeoff.sac_runtime if tradeoff else 0, "sac_memory": tradeoff.sac_memory if tradeoff else 0,
        "n_segments": tradeoff.n_segments if tradeoff else 0, "slopes": tradeoff.slopes if tradeoff else [],
        "intercepts": tradeoff.intercepts if tradeoff else [], "breakpoints": tradeoff.fit_breaks if tradeoff else [],
        "tradeoff_curve": tradeoff.tradeoff_curve if tradeoff else OrderedDict(),
    }  # fmt: skip


def autosac_graph(timeline: Timeline) -> tuple[Graph, dict[str, int], dict[str, Any]]:
    """``ilp_utils.Graph`` of the step (module docstring), the candidate units (fqn: unit index), and notes.

    Notes: ``fit_seconds`` (the tradeoff fits), ``flat_fits`` (units whose
    curve pwlf could not fit, :func:`_tradeoff`).
    """
    rec = timeline.recording
    order = sorted(range(len(rec.unit_names)), key=lambda u: min(rec.unit_ops[u], default=timeline.length))
    fqns = [f"{ROOT}.{rec.unit_names[u]}" for u in order]
    node = _windows(timeline, order)
    live = np.cumsum(timeline.base)[: timeline.length]
    op_ms = np.array([op.seconds * 1e3 for op in rec.ops])
    forward = np.arange(timeline.length) < rec.first_backward
    candidates: dict[str, int] = {}
    notes: dict[str, Any] = {"fit_seconds": 0.0, "flat_fits": []}
    stats = [_node(ROOT, int(live[rec.first_backward - 1]), int(live[node == 0].max(initial=0)), 0,
                   float(op_ms[forward].sum()), float(op_ms[~forward].sum()), None)]  # fmt: skip
    for k, (u, fqn) in enumerate(zip(order, fqns)):
        items = timeline.units[u]
        tradeoff = None
        sac_stats, _ = unit_sac_stats(timeline, u)
        if items.replay_at >= 0 and sum(sac_stats.memory) > 0 and sum(sac_stats.runtimes) > 0:
            start = time.perf_counter()
            tradeoff, flat = _tradeoff(sac_stats)
            notes["fit_seconds"] += time.perf_counter() - start
            candidates[fqn] = u
            if flat:
                notes["flat_fits"].append(rec.unit_names[u])
        end = max(rec.unit_ops[u], default=-1)
        stats.append(_node(fqn, int(live[end]) if end >= 0 else 0, int(live[node == k + 1].max(initial=0)),
                           int(items.kept_bytes.sum()), float(op_ms[rec.unit_ops[u]].sum()),
                           float(op_ms[(node == k + 1) & ~forward].sum()), tradeoff))  # fmt: skip
    mod_order = {"fw_pre_order": [ROOT] + fqns, "fw_post_order": fqns + [ROOT],
                 "bw_pre_order": [ROOT] + fqns[::-1], "bw_post_order": fqns[::-1] + [ROOT]}  # fmt: skip
    return parse_module_info({"mod_order": mod_order, "mod_stats": stats}), candidates, notes


# ---------------------------------------------------------------------- the whole model


def autosac_plan(timeline: Timeline, limit_bytes: int, tolerance: float = 1e-3) -> tuple[list, float, dict[str, Any]]:
    """AutoSAC's plan whose modelled peak fits ``limit_bytes``: (choice, seconds in MILPs, info).

    Bisects ``sac_milp``'s budget (GiB) between 0 and the plain peak until the
    interval is under ``tolerance`` of the plain peak; each feasible answer's
    discard ratios become per-unit policies (``per_unit_policy`` at ``1 -
    ratio``, as AutoSAC's examples do). Returns the plan with the least replay
    time whose ``timeline.peak`` fits (the smallest-peak one when none does;
    ``info["fits"]`` says which). The seconds are every MILP call's across the
    bisection; ``info["final_solve_seconds"]`` those of the returned plan alone.
    """
    from torch.distributed._tools import sac_ilp  # needs pulp

    none = timeline.none()
    plain = timeline.peak(none)
    info: dict[str, Any] = {"method": "sac_milp + per-module MILP, budget bisected on Timeline.peak",
                            "milp_calls": 0, "milp_seconds": 0.0, "policy_calls": 0, "policy_seconds": 0.0}  # fmt: skip
    if plain <= limit_bytes:
        return none, 0.0, {**info, "fits": True, "final_solve_seconds": 0.0, "fit_seconds": 0.0, "flat_fits": [],
                           "budget_gib": None, "discard_ratios": {}, "autosac_peak_bytes": plain}  # fmt: skip
    graph, candidates, notes = autosac_graph(timeline)
    info.update(notes)
    logger = logging.getLogger(sac_ilp.__name__)
    attempts = []  # (key, choice, budget, decisions, autosac peak, solve seconds)
    lo, hi = 0.0, plain / GiB
    logger.disabled = True  # infeasible budgets are expected here: they raise the lower end
    try:
        while hi - lo > tolerance * plain / GiB:
            budget = (lo + hi) / 2
            start = time.perf_counter()
            decisions, _, autosac_peak = sac_ilp.sac_milp(graph, budget, world_size=1, ac_units=list(candidates))
            solve = time.perf_counter() - start
            info["milp_calls"] += 1
            info["milp_seconds"] += solve
            if autosac_peak == -1:
                lo = budget
                continue
            choice = list(none)
            for fqn, ratio in decisions.items():
                choice[candidates[fqn]], seconds = per_unit_policy(timeline, candidates[fqn], 1 - ratio)
                info["policy_calls"] += 1
                info["policy_seconds"] += seconds
                solve += seconds
            peak = timeline.peak(choice)
            fits = peak <= limit_bytes
            attempts.append(((not fits, timeline.seconds(choice) if fits else peak), choice, budget, decisions,
                             autosac_peak, solve))  # fmt: skip
            lo, hi = (budget, hi) if fits else (lo, budget)
    finally:
        logger.disabled = False
    if not attempts:
        raise RuntimeError("sac_milp found no feasible budget below the plain peak")
    (unfit, _), choice, budget, decisions, autosac_peak, solve = min(attempts, key=lambda a: a[0])
    names = timeline.recording.unit_names
    info.update(fits=not unfit, budget_gib=budget, autosac_peak_bytes=autosac_peak, final_solve_seconds=solve,
                discard_ratios={names[candidates[fqn]]: ratio for fqn, ratio in decisions.items()})  # fmt: skip
    return choice, info["milp_seconds"] + info["policy_seconds"], info


# ---------------------------------------------------------------------- self-check


def _self_check() -> None:
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _models import Decoder

    from remat_knapsack.torch.eager._plan import _menu, _walk
    from remat_knapsack.torch.eager._record import record_step

    torch.manual_seed(0)
    model = Decoder(d=128, layers=2)
    ids = torch.randint(0, 4096, (2, 128))

    def loss(logits: torch.Tensor) -> torch.Tensor:
        return logits.logsumexp(-1).mean()

    loss(model(ids)).backward()  # warm: the recorded op times are not first calls'
    model.zero_grad(set_to_none=True)
    modules = dict(model.named_modules())
    timeline = Timeline(record_step(model, (ids,), loss, [(n, modules[n]) for n in ["layers.0", "layers.1"]]))
    none_peak, full_peak = timeline.peak(timeline.none()), timeline.peak(timeline.full())
    limit = (none_peak + full_peak) // 2
    mib = 1 << 20
    print(f"peaks: none {none_peak / mib:.3f} MiB, full {full_peak / mib:.3f} MiB; limit {limit / mib:.3f} MiB")

    def row(label: str, choice: list, solve: float, note: str = "") -> None:
        peak = timeline.peak(choice)
        print(f"{label:>22}: peak {peak / mib:.3f} MiB ({'fits' if peak <= limit else 'OVER'}), "
              f"replay {timeline.seconds(choice) * 1e3:.3f} ms, solve {solve * 1e3:.1f} ms{note}")  # fmt: skip

    start = time.perf_counter()
    menus = [_menu(items) for items in timeline.units]
    positions, _ = _walk(timeline, menus, limit)
    row("knapsack (_menu/_walk)", [m[p].saved for m, p in zip(menus, positions)], time.perf_counter() - start)
    for fraction in (0.0, 0.5, 1.0):
        masks = [per_unit_policy(timeline, u, fraction) for u in range(len(timeline.units))]
        row(f"per_unit_policy {fraction:.1f}", [m for m, _ in masks], sum(s for _, s in masks))
    choice, solve, info = autosac_plan(timeline, limit)
    row("autosac_plan", choice, solve,
        f" ({info['milp_calls']} sac_milp + {info['policy_calls']} per-module calls; the returned plan's own "
        f"{info['final_solve_seconds'] * 1e3:.1f} ms; pwlf fit {info['fit_seconds'] * 1e3:.1f} ms)")  # fmt: skip
    print(f"{'':>22}  budget {info['budget_gib'] * 1024:.3f} MiB, sac_milp's peak "
          f"{info['autosac_peak_bytes'] / mib:.3f} MiB, discard ratios {info['discard_ratios']}")  # fmt: skip


if __name__ == "__main__":
    _self_check()
