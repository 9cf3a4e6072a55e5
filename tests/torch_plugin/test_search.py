"""The guided search (inductor's): steered by the liveness pass, checked by the costly model, never over the limit."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest

torch = pytest.importorskip("torch")

from .test_peaks import _candidates, _mlp  # noqa: E402


class Skewed:
    """A capture whose costly model (``peak(saved)``) is the liveness pass's timeline, stretched by ``scale``,
    with ``per_saved`` of the saved bytes held on top from the forward's end to the backward's start.

    The ratio of the two models then differs from plan to plan, as inductor's does, and saving
    costs more than the guide thinks. ``costly`` lists the plans the costly model scored.
    """

    def __init__(self, cap, scale: float, per_saved: float = 0.0) -> None:
        self.cap, self.scale, self.per_saved, self.costly = cap, scale, per_saved, []

    def saved_for_plan(self, candidates, recompute):
        return self.cap.saved_for_plan(candidates, recompute)

    def peak(self, saved, backend=None):
        g = self.cap.peak(saved, "aot_eager")
        if backend == "aot_eager":
            return g
        self.costly.append(frozenset(n.name for n in saved))
        extra = int(self.per_saved * g.saved_bytes)
        return dataclasses.replace(g, fw_events=tuple(int(e * self.scale) for e in g.fw_events) + (extra,),
                                   bw_events=(-extra,) + tuple(int(e * self.scale) for e in g.bw_events))  # fmt: skip


@pytest.fixture(scope="module")
def captured():
    from remat_knapsack.torch.capture import compile_and_capture

    model, args = _mlp()
    (cap,) = compile_and_capture(model, args, "aot_eager")
    return cap


@pytest.mark.parametrize("scale", [0.8, 1.25])
def test_guided_search_checks_few_plans_and_never_passes_the_limit(captured, scale):
    from remat_knapsack.torch.peaks import step_peak
    from remat_knapsack.torch.search import search_guided
    from remat_knapsack.torch.search._plan import GUIDED_CHECKS

    nodes, memory, runtimes = _candidates(captured)
    n = len(nodes)
    truth = Skewed(captured, scale)
    plans = {}
    for k in range(n + 1):
        for rec in itertools.combinations(range(n), k):
            peak = step_peak([truth.peak(truth.saved_for_plan(nodes, rec))])
            plans[rec] = (peak, math.fsum(r for i, r in enumerate(runtimes) if i not in rec))
    peaks = sorted({p for p, _ in plans.values()})
    assert len(peaks) >= 3
    for limit in [peaks[0] - 1, peaks[0], peaks[len(peaks) // 2], peaks[-1]]:
        truth.costly.clear()
        choice = search_guided(truth, nodes, runtimes, memory, limit)
        assert len(set(truth.costly)) <= GUIDED_CHECKS  # the costly model scored at most this many plans
        assert choice.checked == len(set(truth.costly)) and not choice.exact
        assert choice.peak_bytes == plans[choice.recompute][0]  # the costly model's peak, not the guide's
        best = max((v for p, v in plans.values() if p <= limit), default=None)
        if best is None:
            assert not choice.fits
        if choice.fits:  # within the limit, and no better than the best plan that is
            assert choice.peak_bytes <= limit and choice.value <= best + 1e-9
        else:  # the guide may miss the only plans that fit (their order differs): it says so
            assert choice.peak_bytes > limit and choice.peak_bytes == choice.min_peak_bytes
    # the whole frontier's top and bottom are reached: the largest limit fits everything kept
    top = search_guided(truth, nodes, runtimes, memory, peaks[-1])
    assert top.fits and top.value == pytest.approx(max(v for _, v in plans.values()))


def test_guided_search_aims_by_the_ratio():
    """Saving costs more in the costly model than in the guide: the guide's own pick for the limit does
    not fit, and aiming by the ratio of the two finds one that does."""
    from remat_knapsack.torch.capture import compile_and_capture
    from remat_knapsack.torch.peaks import step_peak
    from remat_knapsack.torch.search import search_guided, search_plan

    model, args = _mlp(blocks=4, d=64, rows=2048)
    (cap,) = compile_and_capture(model, args, "aot_eager")
    nodes, memory, runtimes = _candidates(cap)
    truth = Skewed(cap, 1.0, per_saved=1.0)

    def true_peak(rec):
        return step_peak([truth.peak(truth.saved_for_plan(nodes, rec))])

    low, high = true_peak(tuple(range(len(nodes)))), true_peak(())
    assert low < high  # recomputing lowers the costly model's peak
    limit = (low + high) // 2
    naive = search_plan(cap, nodes, runtimes, memory, limit)  # the guide alone, at the limit
    assert true_peak(naive.recompute) > limit
    guided = search_guided(truth, nodes, runtimes, memory, limit)
    assert guided.fits and guided.peak_bytes <= limit and guided.checked >= 2


def test_a_plan_over_the_limit_stops_the_compile_before_anything_runs():
    """fit's solver armed to stop: a plan over the limit raises PlanDoesNotFit from the partitioner, through
    dynamo, before the compiled step runs (no gradient appears)."""
    from remat_knapsack.torch import KnapsackSolver, use_solver
    from remat_knapsack.torch._plugin import PlanDoesNotFit, plan_did_not_fit

    model, (x,) = _mlp(blocks=2, d=32, rows=256)
    solver = KnapsackSolver("auto", max_peak_bytes=1)
    solver._stop_unless_fits = True
    torch._dynamo.reset()
    try:
        with torch._functorch.config.patch(enable_autograd_cache=False), use_solver(solver):
            with pytest.raises(Exception) as info:  # dynamo wraps the backend's error
                torch.compile(model, backend="aot_eager")(x).sum().backward()
    finally:
        torch._dynamo.reset()
    stopped = plan_did_not_fit(info.value)
    assert isinstance(stopped, PlanDoesNotFit) and stopped.min_peak_bytes > 1
    assert solver.choices and not solver.choices[-1]["fits"]
    assert all(p.grad is None for p in model.parameters())
    assert plan_did_not_fit(ValueError("unrelated")) is None


def test_inductor_fit_plan_trains_as_eager():
    """Under inductor (the guided search): fit lands within the limit in at most two compiles, and its plan's
    step gives eager's loss and gradients."""
    import copy

    import torch._functorch.config as fconfig

    from remat_knapsack.torch import fit, predict_peaks, use_solver

    model, args = _mlp(blocks=4, d=128, rows=1024)
    low, high = (p.peak_bytes for p in predict_peaks(model, args, [0.05, 0.9]))
    limit = (min(low, high) + max(low, high)) // 2
    report = fit(model, args, limit, repeats=1)
    assert report.peak_bytes <= limit and report.compiles <= 2

    def step(run, m):
        m.zero_grad(set_to_none=True)
        loss = run(*args).sum()
        loss.backward()
        return loss.detach(), {n: p.grad for n, p in m.named_parameters()}

    eager = copy.deepcopy(model)
    expected = step(eager, eager)
    torch._dynamo.reset()
    try:
        with fconfig.patch(enable_autograd_cache=False), use_solver(report.solver):
            got = step(torch.compile(model), model)
    finally:
        torch._dynamo.reset()
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
