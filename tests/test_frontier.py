"""frontier(): exact best value at every budget, from one Pareto pass."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import remat_knapsack
from remat_knapsack import Frontier, frontier, instances, solve

from oracles import brute_force


def _best(weights, values, cap):
    return brute_force(weights, values, cap)[0]


cases = st.integers(0, 10).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 9), min_size=n, max_size=n),
        st.lists(st.integers(-2, 9), min_size=n, max_size=n),
    )
)


@settings(max_examples=120, deadline=None)
@given(cases)
@pytest.mark.parametrize("scale", [1, None])
def test_every_budget_against_brute_force(scale, case):
    w, v = case
    mem = [float(a) if scale else a / 4 for a in w]
    f = frontier(mem, [float(b) for b in v], scale=scale)
    assert isinstance(f, Frontier)
    assert all(a < b for a, b in zip(f.memory, f.memory[1:]))
    assert all(a < b for a, b in zip(f.value, f.value[1:]))
    step = 1.0 if scale else 0.25
    for k in range(sum(w) + 2):
        b = k * step
        expect = _best(mem, v, b)
        assert f.best(b) == expect
        i = max([i for i, m in enumerate(f.memory) if m <= b], default=-1)
        assert (f.value[i] if i >= 0 else 0.0) == expect
        sel = f.selection(b)
        assert math.fsum(mem[j] for j in sel) <= b
        assert math.fsum(v[j] for j in sel) == expect


def test_max_memory_and_units():
    mem = [0.25, 0.5, 1.0, 2.0]
    rt = [1.0, 3.0, 2.0, 8.0]
    f = frontier(mem, rt, 1.5)
    assert f.memory[-1] <= 1.5
    assert f.best(1.5) == solve(mem, rt, 1.5).value
    assert f.best(100.0) == f.value[-1]
    full = frontier(mem, rt)
    assert full.best(sum(mem)) == sum(rt)
    with pytest.raises(ValueError):
        f.best(-1.0)


def test_zero_weight_items_count_from_budget_zero():
    f = frontier([0.0, 1.0], [5.0, 1.0], scale=1)
    assert f.memory[0] == 0.0 and f.value[0] == 5.0
    assert f.best(0.0) == 5.0


def test_matches_solve_on_paper_instance():
    inst = instances.paper(30, 2)
    f = frontier(inst.memory, inst.runtimes, scale=100)
    for b in np.linspace(0, sum(inst.memory), 9).round(2).tolist():  # budgets on the quantum grid
        assert f.best(b) == pytest.approx(solve(inst.memory, inst.runtimes, b, solver="sparse", scale=100).value, rel=1e-12)


def _pytorch_knee(points, max_budget):
    """PyTorch's KnapsackEvaluator.get_knee_point_memory_budget on given
    (budget, memory used, runtime recomputed) results."""
    rv = [p[2] for p in points]
    mv = [p[1] for p in points]
    rr, mr = max(rv) - min(rv), max(mv) - min(mv)
    if rr == 0 or mr == 0:
        return max_budget
    d = [(((r - min(rv)) / rr) ** 2 + ((m - min(mv)) / mr) ** 2) ** 0.5 for r, m in zip(rv, mv)]
    return points[d.index(min(d))][0]


@pytest.mark.parametrize("seed", range(5))
def test_knee_is_pytorch_definition(seed):
    rng = np.random.default_rng(seed)
    mem = rng.integers(1, 20, 12).astype(float).tolist()
    rt = rng.integers(1, 50, 12).astype(float).tolist()
    f = frontier(mem, rt, scale=1)
    total = sum(rt)
    # Evaluate PyTorch's rule on every breakpoint (plus budget 0).
    budgets = [0.0] + f.memory
    pts = []
    for b in budgets:
        s = solve(mem, rt, b, solver="sparse", scale=1)
        pts.append((b, sum(mem[i] for i in s.saved), total - s.value))
    assert f.knee() == _pytorch_knee(pts, f.max_memory)


def test_knee_degenerate():
    assert frontier([1.0], [0.0], scale=1).knee() == 1.0  # nothing to save: PyTorch returns the max budget
    assert frontier([1.0], [1.0], scale=1).knee() == 0.0  # two points at equal distance: the first
    assert frontier([], [], 0.0).knee() == 0.0


def test_frontier_name_is_the_function():
    # The module is remat_knapsack.tradeoff, so importing it never shadows the function.
    import importlib

    importlib.import_module("remat_knapsack.tradeoff")
    assert isinstance(remat_knapsack.frontier([1.0], [2.0]), Frontier)


def test_default_budget_keeps_the_last_breakpoint_with_real_weights():
    inst = instances.paper(12, seed=0)
    f = frontier(inst.memory, inst.runtimes, scale=None)
    assert f.value[-1] == pytest.approx(sum(inst.runtimes))
    assert f.best(f.max_memory) == f.value[-1]
