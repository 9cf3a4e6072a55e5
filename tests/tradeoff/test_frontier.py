"""frontier(): exact best value at every budget, from one Pareto pass."""

from __future__ import annotations

import math
import os
import signal
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import brute_force

import remat_knapsack
from remat_knapsack import Frontier, SolverMemoryError, frontier, instances, solve


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
        # selection is solve's set, whatever solve's quality (tested in its own modules)
        assert sel == solve(mem, v, b, scale=scale).saved


def test_max_memory_and_units():
    mem = [0.25, 0.5, 1.0, 2.0]
    rt = [1.0, 3.0, 2.0, 8.0]
    f = frontier(mem, rt, 1.5)
    assert f.memory[-1] <= 1.5
    assert f.best(1.5) == solve(mem, rt, 1.5).value
    with pytest.raises(ValueError, match="above the frontier's max_memory"):
        f.best(100.0)  # the curve does not know budgets above 1.5
    full = frontier(mem, rt)
    assert full.best(sum(mem)) == sum(rt)
    assert full.best(100.0) == sum(rt)  # it covers every budget
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
        exact = solve(inst.memory, inst.runtimes, b, solver="sparse", scale=100).value
        assert f.best(b) == pytest.approx(exact, rel=1e-12)


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
    # The module is remat_knapsack.tradeoff._curve, so importing it never shadows the function.
    import importlib

    importlib.import_module("remat_knapsack.tradeoff._curve")
    assert isinstance(remat_knapsack.frontier([1.0], [2.0]), Frontier)


def test_default_budget_keeps_the_last_breakpoint_with_real_weights():
    inst = instances.paper(12, seed=0)
    f = frontier(inst.memory, inst.runtimes, scale=None)
    assert f.value[-1] == pytest.approx(sum(inst.runtimes))
    assert f.best(f.max_memory) == f.value[-1]


# ---------------------------------------------------------------- the contract's edges


def test_real_weights_breakpoints_are_exact_sums():
    # Float sums put 1.0 + 1e-17 at 1.0: best(1.0) was 2.0, selection(2.0) [0].
    f = frontier([1.0, 1e-17], [1.0, 1.0], scale=None)
    assert f.best(1.0) == 1.0
    assert f.best(2.0) == 2.0
    assert f.selection(2.0) == solve([1.0, 1e-17], [1.0, 1.0], 2.0, scale=None).saved == [0, 1]
    assert f.best(f.memory[-1]) == 2.0 and f.memory[-1] > 1.0


real_weights = st.lists(
    st.one_of(
        st.integers(0, 8).map(lambda k: k / 8),
        st.sampled_from([0.1, 0.2, 0.3, 0.7, 1e-17, 1e-9, 3e-17, 1.0 - 2**-53, 1.0 + 2**-52]),
        st.floats(0, 2, allow_nan=False, allow_infinity=False),
    ),
    min_size=0,
    max_size=7,
)


@settings(max_examples=150, deadline=None)
@given(real_weights, st.data())
def test_real_weights_against_exact_brute_force(mem, data):
    n = len(mem)
    rt = data.draw(st.lists(st.integers(-1, 5), min_size=n, max_size=n))
    f = frontier(mem, [float(r) for r in rt], scale=None)
    sums = sorted({math.fsum(c) for k in range(n + 1) for c in _subsets(mem, k)})
    budgets = sums + [math.nextafter(x, 0.0) for x in sums] + [math.nextafter(x, math.inf) for x in sums]
    for b in budgets[:40]:
        expect = brute_force(mem, rt, b, exact=True)[0]
        assert f.best(b) == max(expect, 0)
        assert f.selection(b) == solve(mem, rt, b, scale=None).saved


def _subsets(xs, k):
    import itertools

    return itertools.combinations(xs, k)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=0, max_size=8), st.data())
def test_selection_and_best_are_solves(w, data):
    # selection(b) once solved at the breakpoint below b: [1] instead of [0] for
    # frontier([2e-4, 1e-4], [1, 1]).selection(2e-4).
    n = len(w)
    rt = data.draw(st.lists(st.integers(-1, 4), min_size=n, max_size=n))
    mem = [x * 1e-4 for x in w]
    f = frontier(mem, rt)
    budgets = data.draw(st.lists(st.floats(0, sum(mem) + 1e-3, allow_nan=False), max_size=6))
    for b in budgets + [k * 1e-4 for k in range(sum(w) + 2)]:
        s = solve(mem, rt, b)
        assert f.selection(b) == s.saved
        assert f.best(b) == s.value


def test_issue_selection_example():
    assert frontier([2e-4, 1e-4], [1, 1]).selection(2e-4) == [0] == solve([2e-4, 1e-4], [1, 1], 2e-4).saved


@pytest.mark.parametrize("scale", [10_000, None, 1, 2**40])
def test_infinite_budget_saves_every_positive_item(scale):
    mem, rt = [0.1, 0.2, 0.3, 5.0], [1.0, 0.0, 2.0, 3.0]
    f = frontier(mem, rt, math.inf, scale=scale)
    assert f.best(math.inf) == 6.0
    assert f.selection(math.inf) == [0, 2, 3]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"memory_limit": -1}, "memory_limit"),
        ({"memory_limit": "1000"}, "memory_limit"),
        ({"memory_limit": 1.5}, "memory_limit"),
        ({"memory_limit": True}, "memory_limit"),
        ({"scale": True}, "scale"),
        ({"scale": 2**2000}, "scale"),
    ],
)
def test_arguments_validated_like_solve(kwargs, match):
    with pytest.raises(ValueError, match=match):
        frontier([0.1, 0.2], [1.0, 2.0], 0.3, **kwargs)


@pytest.mark.parametrize("bad", ["0.3", None, True, float("nan"), -1.0, 2**2000])
def test_bad_budgets_name_budget(bad):
    f = frontier([0.1, 0.2], [1.0, 2.0])
    with pytest.raises(ValueError, match="budget"):
        f.best(bad)
    with pytest.raises(ValueError, match="budget"):
        f.selection(bad)


def test_len_and_memory_limit():
    inst = instances.paper(200, 0)
    f = frontier(inst.memory, inst.runtimes)
    assert len(f) == len(f.memory) == len(f.value) == f.stats["states"] > 100
    with pytest.raises(SolverMemoryError):
        frontier(inst.memory, inst.runtimes, memory_limit=len(f) * 4)
    with pytest.raises(SolverMemoryError):
        frontier(inst.memory, inst.runtimes, memory_limit=100)  # not even the items


@pytest.mark.parametrize("k, kind", [(5, "int64"), (80, "int128"), (200, "python")])
def test_the_three_passes_agree(k, kind):
    # Weights 2**-k apart from 1.0: grid sums need 6, 81 and 201 bits.
    tiny = 2.0**-k
    mem = [1.0, tiny, 0.5, 3 * tiny, 0.25 + tiny]
    rt = [4.0, 1.0, 2.0, 1.0, 3.0]
    f = frontier(mem, rt, scale=None)
    assert f.stats["pass"] == kind
    # Same structure at every k (the tiny weights only break ties of the sums).
    assert f.value == frontier([1.0, 2**-5, 0.5, 3 * 2**-5, 0.25 + 2**-5], rt, scale=None).value
    for b in [0.0, tiny, 0.25, 0.25 + tiny, 0.75, 1.0, 1.0 + 2**-52, 1.5, 2.0] + f.memory:
        assert f.best(b) == brute_force(mem, rt, b, exact=True)[0]
    with pytest.raises(SolverMemoryError):
        frontier(mem * 4, rt * 4, scale=None, memory_limit=1000)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery is POSIX-only")
def test_ctrl_c_interrupts_a_long_frontier():
    inst = instances.paper(3000, 0)  # tens of seconds uninterrupted
    # Python's own handler, even when this process was started with SIGINT
    # ignored (a background job of a non-interactive shell, nohup).
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as info:
            frontier(inst.memory, inst.runtimes)
    finally:
        timer.cancel()
        timer.join()
        signal.signal(signal.SIGINT, old)
    # Raised from inside the pass, not after it ran to completion.
    # (a str, not a Path, when the .pyx is not found where Cython recorded it, as from a wheel)
    assert os.path.basename(str(info.traceback[-1].path)) == "_frontier.pyx"
    assert len(frontier([0.1], [1.0])) == 1  # the kernel is usable again


def test_nothing_to_merge_meets_any_memory_limit():
    # Like solve (item 11): no item to merge allocates nothing.
    assert len(frontier([], [], memory_limit=0)) == 0
    f = frontier([0.1, 0.2], [0.0, -1.0], memory_limit=0)
    assert len(f) == 0 and f.best(1.0) == 0.0
    # A tiny instance needs only a few state slots, not the 256 the pass starts with.
    assert frontier([0.1], [1.0], memory_limit=200).value == [1.0]
