"""The peak model and the peak-constrained solver, on tiny MLPs under aot_eager.

One module fixture compiles a 3-block residual MLP once and captures its joint
graph; the peak model is checked against torch.profiler's allocation trace of
the compiled step, and the constrained search against brute force over every
plan of the graph.
"""

from __future__ import annotations

import itertools
import math

import pytest

torch = pytest.importorskip("torch", reason="needs torch (pip install 'remat-knapsack[torch]')")

from remat_knapsack.errors import PeakLimitError  # noqa: E402

MiB = 1 << 20


class Block(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.a = torch.nn.Linear(d, 2 * d)
        self.b = torch.nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.b(torch.nn.functional.gelu(self.a(x)))


def _mlp(blocks: int = 3, d: int = 32, rows: int = 1024):
    torch.manual_seed(0)
    return torch.nn.Sequential(*[Block(d) for _ in range(blocks)]), (torch.randn(rows, d),)


def _measured_peak(model, args, budget):
    import torch._functorch.config as fconfig

    from remat_knapsack.torch.step import profile_peak_bytes

    torch._dynamo.reset()
    with fconfig.patch(activation_memory_budget=budget, enable_autograd_cache=False,
                       activation_memory_budget_solver="dp"):  # fmt: skip
        compiled = torch.compile(model, backend="aot_eager")

        def step():
            compiled(*args).sum().backward()

        step()
        model.zero_grad(set_to_none=True)
        peak = profile_peak_bytes(step)
        model.zero_grad(set_to_none=True)
    torch._dynamo.reset()
    return peak


@pytest.fixture(scope="module")
def captured():
    from remat_knapsack.torch.capture import compile_and_capture as _compile_and_capture

    model, args = _mlp()
    caps = _compile_and_capture(model, args, "aot_eager")
    return model, args, caps


def test_predicted_peaks_match_the_profilers_trace(captured):
    from remat_knapsack.torch import predict_peaks

    model, args, _ = captured
    budgets = [0.0, 0.3, 1.0]
    preds = predict_peaks(model, args, budgets, backend="aot_eager")
    assert [p.budget for p in preds] == budgets
    for p in preds:
        measured = _measured_peak(model, args, p.budget)
        assert p.peak_bytes > 0 and p.saved_bytes > 0
        assert abs(p.peak_bytes - measured) <= 0.05 * measured, (p, measured)
    # saving everything needs more saved bytes than saving nothing but the inputs
    assert preds[0].saved_bytes < preds[-1].saved_bytes


def _candidates(cap):
    """The knapsack's candidates for a captured graph, as choose_saved_values_set hands them over."""
    from remat_knapsack.torch import KnapsackSolver

    seen = {}

    class Grab(KnapsackSolver):
        def __call__(self, memory, joint_graph, max_memory, node_info, nodes):
            seen["nodes"], seen["memory"] = list(nodes), list(memory)
            seen["runtimes"] = self._runtimes(memory, joint_graph, nodes)[0]
            return super().__call__(memory, joint_graph, max_memory, node_info, nodes)

    from remat_knapsack.torch import _plugin

    with _plugin._wrapper_held():  # the runtimes PyTorch computes reach the solver
        cap.saved_for_budget(0.5, solver=Grab())
    return seen["nodes"], seen["memory"], seen["runtimes"]


def test_constrained_search_matches_brute_force(captured):
    from remat_knapsack.torch.peaks import step_peak
    from remat_knapsack.torch.search import search_plan

    _, _, caps = captured
    cap = caps[0]
    nodes, memory, runtimes = _candidates(cap)
    n = len(nodes)
    assert 2 <= n <= 12
    plans = {}
    for k in range(n + 1):
        for rec in itertools.combinations(range(n), k):
            peak = step_peak([cap.peak(cap.saved_for_plan(nodes, rec))])
            plans[rec] = (peak, math.fsum(r for i, r in enumerate(runtimes) if i not in rec))
    peaks = sorted({p for p, _ in plans.values()})
    assert len(peaks) >= 2
    for limit in peaks[: 4] + [peaks[-1], peaks[0] - 1]:
        fitting = [v for p, v in plans.values() if p <= limit]
        choice = search_plan(cap, nodes, runtimes, memory, limit, max_plans=1 << n)
        if not fitting:
            assert not choice.fits and choice.peak_bytes == peaks[0] == choice.min_peak_bytes
            continue
        assert choice.fits and choice.exact and choice.peak_bytes <= limit
        assert math.isclose(choice.value, max(fitting), rel_tol=1e-12)


def test_solver_with_max_peak_is_asked_and_keeps_its_plan_within_the_model():
    import torch._functorch.config as fconfig

    from remat_knapsack.torch import PEAK_BUDGET, KnapsackSolver, use_solver

    model, args = _mlp(blocks=2, rows=512)
    before = fconfig.activation_memory_budget
    torch._dynamo.reset()
    with use_solver(max_peak_bytes=64 * MiB) as solver:
        assert fconfig.activation_memory_budget == PEAK_BUDGET
        torch.compile(model, backend="aot_eager")(*args).sum().backward()
    torch._dynamo.reset()
    assert fconfig.activation_memory_budget == before
    assert isinstance(solver, KnapsackSolver) and solver.max_peak_bytes == 64 * MiB
    rec = solver.history[-1]
    assert rec.fits and rec.predicted_peak_bytes <= 64 * MiB and rec.plans_evaluated >= 1
    # the graph's final saved set: the knapsack plan or a shortcut plan, whichever fits and recomputes least
    (choice,) = solver.choices
    assert choice["fits"] and choice["predicted_peak_bytes"] <= 64 * MiB
    assert set(choice["others"]) == {"knapsack", "default", "more_aggressive", "inputs"}
    fitting = {k: v for k, v in choice["others"].items() if v["predicted_peak_bytes"] <= 64 * MiB}
    assert choice["recompute_cost"] == min(v["recompute_cost"] for v in fitting.values())
    assert "max_peak_bytes=67108864" in repr(solver)
    assert solver.uuid() != KnapsackSolver().uuid() != KnapsackSolver(max_peak_bytes=1).uuid()


@pytest.mark.parametrize("bad", [0, -5, float("nan"), float("inf"), "2GiB", True, None.__class__])
def test_bad_peak_limits(bad):
    from remat_knapsack.torch import KnapsackSolver, use_solver

    with pytest.raises(ValueError):
        KnapsackSolver(max_peak_bytes=bad)
    with pytest.raises(ValueError):
        with use_solver(max_peak_bytes=bad):
            pass


def test_peak_limit_error_is_importable_without_torch_and_a_value_error():
    import remat_knapsack.torch as rt

    assert rt.PeakLimitError is PeakLimitError and issubclass(PeakLimitError, ValueError)
    e = PeakLimitError(1000, 5 * MiB)
    assert e.limit == 1000 and e.smallest == 5 * MiB and "1000 bytes" in str(e) and "5.0 MiB" in str(e)


def test_a_plan_between_the_samples_with_a_lower_peak_is_found_when_no_sample_fits():
    """The peak need not fall as a plan keeps less: the gaps beside the lowest sample are searched."""
    from remat_knapsack.torch.search._plan import _lowest_between_picks

    def peak(j):  # lowest at breakpoint 13, between the samples 10 and 20
        return 100 + 10 * abs(j - 13)

    evaluated = []

    def fits(limit, peak_at=peak):
        def at(j):
            evaluated.append(j)
            return peak_at(j) <= limit

        return at

    assert _lowest_between_picks([0, 10, 20, 30], peak, fits(105)) == [13]
    assert len(set(evaluated)) < 20  # narrowed, not scanned
    assert _lowest_between_picks([0, 10, 20, 30], peak, fits(99)) == []

    def rising(j):
        return 100 + j

    assert _lowest_between_picks([0, 30], rising, fits(101, rising)) == [1]


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="inductor's model under-predicts this MLP stack by one activation "
                          "(512 KiB of 8.5 MiB) at budgets 0.6 and 0.9; cause not found yet")  # fmt: skip
def test_inductor_mlp_stack_predicted_to_the_byte():
    from remat_knapsack.torch import predict_peaks, sweep

    model, args = _mlp(blocks=4, d=128, rows=1024)
    (predicted,) = predict_peaks(model, args, [0.6])
    (measured,) = sweep(model, args, budgets=[0.6]).points
    assert predicted.peak_bytes == measured.peak_bytes
