"""Which plan for a limit? The peak-constrained search over one graph's knapsack plans.

:func:`search_plan` finds, for one joint graph, the plan that keeps the most
runtime among those whose modelled peak (:mod:`..peaks`) is within a limit: a
plan is the set of candidates the knapsack lets the min-cut recompute, turned
into a saved set as ``choose_saved_values_set`` does. The plans every budget
reaches (the exact runtime-memory frontier's breakpoints) give a lower bound;
then plans are enumerated in descending runtime kept, and the first that fits
is optimal.

May import: torch, :mod:`remat_knapsack.tradeoff`, :mod:`.._rng` and
:mod:`..peaks`; a :class:`~..capture.Capture` is only passed in.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...tradeoff._curve import frontier
from .. import _rng, peaks

if TYPE_CHECKING:
    from ..capture import Capture

__all__ = ["GUIDED_CHECKS", "GUIDED_FILL", "PlanChoice", "search_guided", "search_plan"]

#: Plans :func:`search_guided` scores with inductor's code at most (each costs a lowering of both graphs).
GUIDED_CHECKS = 3
#: A checked plan within the limit and above this fraction of it ends :func:`search_guided`'s aiming.
GUIDED_FILL = 0.97


@dataclass(frozen=True)
class PlanChoice:
    """What :func:`search_plan` chose for one graph."""

    recompute: tuple[int, ...]  # candidate indices the knapsack lets the min-cut recompute
    value: float  # runtime saved: the runtimes of the candidates kept
    peak_bytes: int  # the modelled peak of this graph's step
    fits: bool  # peak_bytes <= the limit
    exact: bool  # the search proved no plan saves more runtime within the limit
    evaluated: int  # plans partitioned and scored (search_guided: the guide's, search by search, and inductor's)
    min_peak_bytes: int  # the smallest modelled peak among them
    graph_peak: peaks.GraphPeak
    checked: int = 0  # plans scored by inductor's code in search_guided (0: search_plan scored every plan)


def search_plan(cap: Capture, candidates: Sequence[Any], runtimes: Sequence[float], memory: Sequence[float],
                limit: int, *, max_plans: int = 48, frontier_points: int = 24, bisect: bool = False,
                compose: Callable[[peaks.GraphPeak], int] | None = None,
                backend: str | None = None) -> PlanChoice:  # fmt: skip
    """The plan that keeps the most runtime among those whose modelled peak is within ``limit``.

    A plan is a set of candidates the knapsack lets the min-cut recompute (the
    rest stay banned), turned into a saved set by ``solve_min_cut`` exactly as
    ``choose_saved_values_set`` does, and scored by :meth:`~..capture.Capture.peak`.
    First the plans every budget reaches (up to ``frontier_points`` breakpoints
    of the exact runtime-memory frontier, plus "save all" and "recompute all")
    give a lower bound; then plans are enumerated in descending runtime kept
    (removal sets in ascending removed runtime, each generated once), and the
    first one that fits is optimal. The enumeration stops there, at the lower
    bound (optimal too), or after ``max_plans`` plans (``exact=False``: the best
    plan found). ``bisect=True`` halves the gap between the samples instead
    of scanning it (for costly peak models: inductor's generated code per plan).
    ``compose``: a plan's peaks.GraphPeak -> the peak it is held to (default: this
    graph's step alone; with several graphs, the whole step's).
    ``backend``: whose timeline scores a plan (:meth:`~..capture.Capture.peak`; default the graph's own).
    Random candidates are in no plan's recompute set
    (:mod:`.._rng`). Deterministic: same graph, same limit, same plan.
    """
    n = len(candidates)
    r = [max(0.0, float(x)) for x in runtimes]
    total = math.fsum(r)
    # Random ops are never recomputed (``_rng``): plans choose among the other candidates.
    random = set(_rng.random_indices(candidates))
    free = [i for i in range(n) if i not in random]
    seen: dict[frozenset[int], tuple[int, peaks.GraphPeak]] = {}

    def score(rec: frozenset[int]) -> tuple[int, peaks.GraphPeak]:
        hit = seen.get(rec)
        if hit is None:
            g = cap.peak(cap.saved_for_plan(candidates, rec), backend)
            hit = seen[rec] = (compose(g) if compose is not None else peaks.step_peak([g]), g)
        return hit

    def value(rec: frozenset[int]) -> float:
        return total - math.fsum(r[i] for i in rec)

    best: tuple[float, frozenset[int]] | None = None

    def consider(rec: frozenset[int]) -> bool:
        nonlocal best
        peak, _ = score(rec)
        if peak <= limit:
            v = value(rec)
            if best is None or v > best[0] or (v == best[0] and peak < seen[best[1]][0]):
                best = (v, rec)
            return True
        return False

    everything = frozenset(free)
    for rec in (frozenset(), everything):
        consider(rec)
    if free:
        # The plans budgets reach: the exact frontier's breakpoints, ascending in value.
        # Sample them evenly, then scan every breakpoint between the best sampled one
        # that fits and the next sampled one, from the top: the first that fits there
        # is the best budget-reachable plan when the peak rises with the value
        # between samples (it need not; the enumeration below covers the rest).
        f = frontier([memory[i] for i in free], [r[i] for i in free], None)
        pts = f.memory

        def at(j: int) -> frozenset[int]:
            return everything - frozenset(free[i] for i in f.selection(pts[j]))

        k = min(len(pts), frontier_points)
        picks = sorted({round(j * (len(pts) - 1) / max(1, k - 1)) for j in range(k)}) if pts else []
        fitting = [j for j in picks if consider(at(j))]
        if not fitting and len(picks) > 1:
            fitting = _lowest_between_picks(picks, lambda j: score(at(j))[0], lambda j: consider(at(j)))
        if fitting:
            lo = max(fitting)
            above = [j for j in picks if j > lo]
            hi = min(above) if above else lo
            if bisect:
                while hi - lo > 1:  # lo fits, hi does not (or is lo): halve the gap
                    mid = (lo + hi) // 2
                    lo, hi = (mid, hi) if consider(at(mid)) else (lo, mid)
            else:
                for j in range(hi - 1, lo, -1):
                    if consider(at(j)):
                        break

    exact = True
    order = sorted(free, key=lambda i: (r[i], i))
    heap: list[tuple[float, int, tuple[int, ...]]] = [(r[order[0]], 0, (0,))] if order else []
    budget = max_plans
    while heap:
        removed, last, pos = heapq.heappop(heap)
        if best is not None and total - removed <= best[0]:
            break  # nothing left can keep more runtime than the plan in hand
        rec = frozenset(order[p] for p in pos)
        if rec not in seen:
            if budget <= 0:
                exact = False
                break
            budget -= 1
        if consider(rec):
            break  # the first plan that fits, in descending runtime kept
        if last + 1 < len(order):
            nxt = r[order[last + 1]]
            heapq.heappush(heap, (removed + nxt, last + 1, pos + (last + 1,)))
            heapq.heappush(heap, (removed - r[order[last]] + nxt, last + 1, pos[:-1] + (last + 1,)))
    min_rec = min(seen, key=lambda k: (seen[k][0], -value(k)))
    min_peak = seen[min_rec][0]
    if best is None:
        chosen, fits = min_rec, False
    else:
        chosen, fits = best[1], True
    peak, g = seen[chosen]
    return PlanChoice(recompute=tuple(sorted(chosen)), value=value(chosen), peak_bytes=peak, fits=fits,
                      exact=exact and fits, evaluated=len(seen), min_peak_bytes=min_peak,
                      graph_peak=g)  # fmt: skip


def _lowest_between_picks(picks: list[int], peak_at: Callable[[int], int],
                          fits_at: Callable[[int], bool]) -> list[int]:  # fmt: skip
    """When no sampled breakpoint fits: search the gaps beside the sampled one with the lowest peak.

    The peak need not fall as the plan keeps less (recomputing moves bytes
    into the backward): a budget between two samples can reach a lower peak
    than either (GPT-2 under inductor: 191 MiB at budget 0.02, 155 MiB at
    0.05, 170 MiB at 0.1). A ternary search narrows the two gaps beside the
    lowest sample, as if the peak were unimodal there, and stops at the
    first breakpoint that fits. Returns the breakpoints found to fit (at most one).
    """
    lowest = min(picks, key=peak_at)
    lo = max((j for j in picks if j < lowest), default=lowest)
    hi = min((j for j in picks if j > lowest), default=lowest)
    while hi - lo > 2:
        left, right = lo + (hi - lo) // 3, hi - (hi - lo) // 3
        for j in (left, right):
            if fits_at(j):
                return [j]
        if peak_at(left) <= peak_at(right):
            hi = right
        else:
            lo = left
    return [j for j in range(lo, hi + 1) if fits_at(j)][:1]


def search_guided(cap: Capture, candidates: Sequence[Any], runtimes: Sequence[float], memory: Sequence[float],
                  limit: int, *, checks: int = GUIDED_CHECKS, frontier_points: int = 6, max_plans: int = 2,
                  compose: Callable[[peaks.GraphPeak], int] | None = None) -> PlanChoice:  # fmt: skip
    """The plan for ``limit`` under inductor, steered by the liveness pass and checked by inductor's code.

    Scoring a plan with inductor's generated code lowers both of its graphs
    (a fifth of a compile on a GPT-2 of 4 to 8 layers); the liveness pass over
    the same partition (``backend="aot_eager"``) costs a twentieth of that, and
    its peak is off from inductor's by a ratio that drifts slowly along the
    plans. So :func:`search_plan` runs on the liveness pass (the guide), aiming
    at a guide peak that should put inductor's at the limit, and each plan it
    picks is scored by inductor's code: at most ``checks`` of them, stopping
    once one fits above :data:`GUIDED_FILL` of the limit. The aim is the limit
    scaled by inductor's ratio to the guide on the last plan checked, or, once
    two checked plans bracket the limit, the secant between them. When the
    aim picks a plan checked already and none fits, the plan that recomputes
    every candidate is checked next (the guide and inductor may disagree on
    which way the peak falls). The best checked plan that fits wins (the most
    runtime kept); with none, the lowest checked peak. ``exact`` is False: the
    guide may skip a better plan, never pass one over the limit.
    """
    r = [max(0.0, float(x)) for x in runtimes]
    total = math.fsum(r)
    random = set(_rng.random_indices(candidates))
    everything = frozenset(i for i in range(len(candidates)) if i not in random)
    checked: dict[frozenset[int], tuple[int, peaks.GraphPeak, float, int]] = {}  # peak, graph, value, guide's

    def score(rec: frozenset[int], backend: str | None = None) -> tuple[int, peaks.GraphPeak]:
        g = cap.peak(cap.saved_for_plan(candidates, rec), backend)
        return (compose(g) if compose is not None else peaks.step_peak([g])), g

    evaluated = 0
    aim = limit
    for _ in range(max(1, checks)):
        guide = search_plan(cap, candidates, runtimes, memory, aim, max_plans=max_plans,
                            frontier_points=frontier_points, bisect=True, compose=compose, backend="aot_eager")
        evaluated += guide.evaluated
        rec = frozenset(guide.recompute)
        if rec in checked:
            if any(p <= limit for p, _, _, _ in checked.values()) or everything in checked:
                break  # the aim settled on a plan checked already
            rec = everything
        peak, g = score(rec)
        checked[rec] = (peak, g, total - math.fsum(r[i] for i in rec), score(rec, "aot_eager")[0])
        if peak <= limit and (peak >= GUIDED_FILL * limit or not rec):
            break  # fits, and fills the limit (or recomputes nothing)
        nxt = _next_aim(aim, limit, list(checked.values()))
        if nxt == aim:
            break
        aim = nxt
    fitting = [(v, -p, rec) for rec, (p, _, v, _) in checked.items() if p <= limit]
    if fitting:
        chosen = max(fitting, key=lambda x: (x[0], x[1]))[2]
    else:
        chosen = min(checked, key=lambda k: (checked[k][0], -checked[k][2]))
    peak, g, value, _ = checked[chosen]
    return PlanChoice(recompute=tuple(sorted(chosen)), value=value, peak_bytes=peak, fits=bool(fitting), exact=False,
                      evaluated=evaluated + len(checked), min_peak_bytes=min(p for p, _, _, _ in checked.values()),
                      graph_peak=g, checked=len(checked))  # fmt: skip


def _next_aim(aim: int, limit: int, checked: list[tuple[int, Any, float, int]]) -> int:
    """The guide peak to aim at next: the secant through the closest checked plans on each side of the
    limit (inductor's peak against the guide's), or else the limit scaled by the last plan's ratio."""
    below = [(p, q) for p, _, _, q in checked if p <= limit]
    above = [(p, q) for p, _, _, q in checked if p > limit]
    if below and above:
        (p0, q0), (p1, q1) = max(below), min(above)
        if p1 > p0 and q1 > q0:  # both models rise from one to the other: interpolate
            return int(q0 + (limit - p0) * (q1 - q0) / (p1 - p0))
    peak, _, _, guide = checked[-1]
    return int(guide * limit / max(1, peak))
