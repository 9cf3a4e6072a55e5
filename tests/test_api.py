import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from oracles import brute_force, small_instances

import remat_knapsack as rk
from remat_knapsack import SOLVERS, Solution, SolverMemoryError, solve

EXACT = [s for s in SOLVERS if s not in ("greedy",)]


def test_public_names():
    assert set(["greedy", "ilp", "dp", "hirschberg", "auto"]) <= set(SOLVERS)
    assert issubclass(SolverMemoryError, MemoryError)
    s = solve([0.1], [1.0], 0.1)
    assert isinstance(s, Solution)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.value = 2.0  # type: ignore[misc]
    assert {"peak_bytes", "seconds"} <= set(s.stats)


@pytest.mark.parametrize("solver", SOLVERS)
def test_paper_repro_stays_within_budget(solver):
    # PyTorch 2.10-2.14's sliding Hirschberg saves [0, 1] here: over budget.
    s = solve([0.0001] * 3, [1.0] * 3, 0.0001, solver=solver)
    assert s.value == 1.0
    assert len(s.saved) == 1
    if solver != "ilp":
        assert s.saved == [0]


@pytest.mark.parametrize("solver", SOLVERS)
def test_forced_decisions(solver):
    memory = [0.0, 0.0, 0.3, 0.2, 0.00001]
    runtimes = [5.0, -1.0, 0.0, 1.0, 2.0]  # weight 0 & > 0: saved; <= 0: never
    s = solve(memory, runtimes, 0.25, solver=solver)
    assert 0 in s.saved and 1 not in s.saved and 2 not in s.saved
    assert 4 in s.saved  # rounds to weight 0
    assert sorted(s.saved + s.recomputed) == list(range(5))
    assert s.saved == sorted(s.saved) and s.recomputed == sorted(s.recomputed)


def test_empty_and_zero_budget():
    for solver in SOLVERS:
        assert solve([], [], 1.0, solver=solver).saved == []
        assert solve([0.1, 0.2], [1.0, 1.0], 0.0, solver=solver).saved == []


@settings(max_examples=300, deadline=None)
@given(small_instances())
def test_exact_solvers_match_brute_force(inst):
    memory, runtimes, cap = inst
    best, saved = brute_force(memory, runtimes, cap)
    for solver in EXACT:
        s = solve(memory, runtimes, cap, solver=solver, scale=1)
        assert s.value == max(best, 0.0), solver
        assert sum(memory[i] for i in s.saved) <= cap
        if solver != "ilp":  # HiGHS breaks ties its own way
            assert s.saved == saved, solver


@settings(max_examples=200, deadline=None)
@given(small_instances(float_values=True))
def test_greedy_is_feasible_and_not_better_than_optimal(inst):
    memory, runtimes, cap = inst
    best, _ = brute_force(memory, runtimes, cap)
    g = solve(memory, runtimes, cap, solver="greedy", scale=1)
    assert sum(memory[i] for i in g.saved) <= cap
    assert g.value <= max(best, 0.0) + 1e-9
    assert all(runtimes[i] > 0 for i in g.saved)


def test_memory_limit_raises_before_allocating():
    mem = [0.5] * 10
    with pytest.raises(SolverMemoryError, match=r"would need about .* but only 1\.0 KiB"):
        solve(mem, [1.0] * 10, 2.5, solver="dp", scale=10**7, memory_limit=1024)
    with pytest.raises(SolverMemoryError) as info:
        solve(mem, [1.0] * 10, 2.5, solver="hirschberg", scale=10**7, memory_limit=1024)
    assert info.value.needed > 1024 and info.value.available == 1024


def test_huge_capacity_is_refused_not_killed():
    # W = 5e13 cells cannot fit anywhere: the estimate is refused up front.
    with pytest.raises(SolverMemoryError):
        solve([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], 3.0, solver="hirschberg", scale=1e13)


def test_deterministic():
    rng = np.random.default_rng(7)
    mem = rng.uniform(0, 0.01, 200).tolist()
    rt = rng.integers(1, 5, 200).astype(float).tolist()
    runs = [solve(mem, rt, 0.3, solver=s) for s in ("dp", "hirschberg", "auto") for _ in range(2)]
    assert len({tuple(r.saved) for r in runs}) == 1


def test_value_is_resummed_in_float64():
    rt = [0.1] * 10
    s = solve([0.01] * 10, rt, 1.0)
    assert s.value == sum(sorted(rt)) or abs(s.value - 1.0) < 1e-15


def test_version():
    assert rk.__version__


@pytest.mark.parametrize("n", [0, 1, 7, 1000, (1 << 16) + 3])
def test_saved_and_recomputed_are_plain_ascending_ints(n):
    # the index lists come from shared int objects up to 2**16 items
    rng = np.random.default_rng(n)
    mem = rng.integers(1, 50, n).astype(float).tolist()
    run = rng.integers(1, 50, n).astype(float).tolist()
    s = solve(mem, run, sum(mem) / 2, solver="greedy", scale=1)
    assert sorted(s.saved + s.recomputed) == list(range(n))
    assert s.saved == sorted(s.saved) and s.recomputed == sorted(s.recomputed)
    assert all(type(i) is int for i in s.saved + s.recomputed)
