import math
import warnings

import numpy as np
import pytest

from remat_knapsack import SOLVERS, SolverMemoryError, frontier, solve
from remat_knapsack._common._validate import active_items, validate
from remat_knapsack.compat import dp_knapsack, greedy_knapsack


@pytest.mark.parametrize(
    "memory, runtimes, budget, kwargs, match",
    [
        ([0.1, float("nan")], [1.0, 1.0], 1.0, {}, r"memory\[1\]"),
        ([0.1, float("inf")], [1.0, 1.0], 1.0, {}, r"memory\[1\]"),
        ([0.1, -0.5], [1.0, 1.0], 1.0, {}, r"memory\[1\] must be finite and >= 0, got -0.5"),
        ([0.1, 0.2], [1.0, float("nan")], 1.0, {}, r"runtimes\[1\]"),
        ([0.1, 0.2], [float("-inf"), 1.0], 1.0, {}, r"runtimes\[0\]"),
        ([0.1, 0.2], [1.0], 1.0, {}, r"different lengths \(2 and 1\)"),
        ([0.1], [1.0], float("nan"), {}, "max_memory"),
        ([0.1], [1.0], -1.0, {}, "max_memory"),
        ([0.1], [1.0], "1", {}, "max_memory"),
        ([0.1], [1.0], 1.0, {"scale": 0}, "scale"),
        ([0.1], [1.0], 1.0, {"scale": -5}, "scale"),
        ([0.1], [1.0], 1.0, {"scale": float("inf")}, "scale"),
        ([0.1, "x"], [1.0, 1.0], 1.0, {}, r"memory\[1\] is not a number: 'x'"),
        ([0.1, None], [1.0, 1.0], 1.0, {}, r"memory\[1\] is not a number"),
        ([0.1, 0.2], [1.0, "2"], 1.0, {}, r"runtimes\[1\] is not a number"),
        ([[0.1], [0.2]], [1.0, 1.0], 1.0, {}, "one-dimensional"),
        ("abc", [1.0], 1.0, {}, "string"),
        (0.5, [1.0], 1.0, {}, "sequence"),
        ([0.1], [1.0], 1.0, {"solver": "nope"}, "unknown solver 'nope'"),
        ([0.1], [1.0], 1.0, {"memory_limit": -1}, "memory_limit"),
        ([1e40], [1.0], 1.0, {}, r"memory\[0\].*too large"),
    ],
)
def test_bad_inputs_name_the_problem(memory, runtimes, budget, kwargs, match):
    with pytest.raises(ValueError, match=match):
        solve(memory, runtimes, budget, **kwargs)


@pytest.mark.parametrize("solver", ["dp", "hirschberg", "greedy"])
def test_unquantised_only_where_supported(solver):
    with pytest.raises(ValueError, match="needs quantised weights"):
        solve([0.1], [1.0], 1.0, solver=solver, scale=None)


def test_quantisation_is_pythons_round():
    # 0.00005 * 10_000 = 0.5 rounds to 0 (half to even), 0.00015 * 10_000 = 1.5 to 2.
    p = validate([0.00005, 0.00015, 0.00025, 0.3], [1, 1, 1, 1], 0.00045, 10_000)
    assert p.weights.tolist() == [round(m * 10_000) for m in [0.00005, 0.00015, 0.00025, 0.3]]
    assert p.capacity == round(0.00045 * 10_000)


def test_infinite_budget_means_everything_fits():
    s = solve([0.5, 0.7], [1.0, 2.0], math.inf)
    assert s.saved == [0, 1]


def test_active_items_split_forced_and_impossible():
    p = validate([0.0, 0.0, 0.2, 0.9, 0.1], [1.0, -1.0, 2.0, 5.0, 0.0], 0.5, 10)
    items = active_items(p)
    assert items.forced.tolist() == [0]
    assert items.index.tolist() == [2]  # 3 cannot fit, 1 and 4 have runtime <= 0


def test_accepts_numpy_and_tuples():
    a = solve(np.array([0.2, 0.3]), (1.0, 2.0), np.float32(0.3))
    assert a.saved == [1]


# ---------------------------------------------------------------- every solver, one contract

ALL = list(SOLVERS)


def _solvers(scale):
    out = ALL if scale is not None else ["auto", "sparse", "ilp"]
    if "ilp" in out:
        pytest.importorskip("scipy")
    return out


@pytest.mark.parametrize("solver", ALL)
@pytest.mark.parametrize("runtimes", [[1e308, 1e308], [1e300, 1e300]])
def test_huge_runtimes_are_a_value_error_naming_runtimes(solver, runtimes):
    # sparse returned an empty plan, dp an OverflowError, ilp a RuntimeError.
    if solver == "ilp":
        pytest.importorskip("scipy")
    with pytest.raises(ValueError, match="runtimes"):
        solve([0.1, 0.2], runtimes, 0.1, solver=solver)
    with pytest.raises(ValueError, match="runtimes"):
        frontier([0.1, 0.2], runtimes)


def test_large_finite_runtimes_still_solve():
    s = solve([0.1, 0.2, 0.3], [1e280, 2e280, 2.5e280], 0.3)
    assert s.saved == [0, 1] and s.value == 3e280


@pytest.mark.parametrize("scale", [10_000, 1, 2**40, None])
def test_infinite_budget_saves_every_positive_item(scale):
    mem, rt = [0.1, 0.2, 5.0, 0.0], [1.0, -1.0, 3.0, 2.0]
    for solver in _solvers(scale):
        assert solve(mem, rt, math.inf, scale=scale, solver=solver).saved == [0, 2, 3], solver
    assert frontier(mem, rt, math.inf, scale=scale).selection(math.inf) == [0, 2, 3]


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        (([2**1100, 0.1], [1, 2], 0.3), {}, r"memory\[0\]"),
        (([0.1, 2**1100], [1, 2], 0.3), {"scale": None}, r"memory\[1\]"),
        (([0.1, 0.2], [1, 10**400], 0.3), {}, r"runtimes\[1\]"),
        (([0.1], [1], 2**2000), {}, "max_memory"),
        (([0.1], [1], 0.3), {"scale": 2**2000}, "scale"),
        (([True, False, True], [1, 1, 1], 1.0), {}, r"memory\[0\] is a boolean"),
        (([0.5, True], [1, 1], 1.0), {}, r"memory\[1\] is a boolean"),
        (([1, True], [1, 1], 1.0), {}, r"memory\[1\] is a boolean"),
        ((np.array([True, False]), [1, 1], 1.0), {}, r"memory\[0\] is a boolean"),
        (([0.1, 0.2], [1.0, False], 1.0), {}, r"runtimes\[1\] is a boolean"),
        (([0.1, 0.2], np.array([True, True]), 1.0), {}, r"runtimes\[0\] is a boolean"),
        (([0.1], [1.0], True), {}, "max_memory"),
        (([0.1], [1.0], 1.0), {"scale": True}, "scale"),
        (([0.1], [1.0], 1.0), {"memory_limit": True}, "memory_limit"),
        (([0.1], [1.0], 1.0), {"memory_limit": 1.5}, "memory_limit"),
        (([0.1], [1.0], 1.0), {"memory_limit": "1000"}, "memory_limit"),
        (([1e308, 0.1], [1, 2], 0.3), {}, r"memory\[0\]"),
    ],
)
def test_values_beyond_float64_and_bools_are_named(args, kwargs, match):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no numpy warning on the way
        with pytest.raises(ValueError, match=match):
            solve(*args, **kwargs)


def test_no_numpy_warning_reaches_the_user():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError):
            solve([1e308, 0.1], [1, 2], 0.3)
        assert greedy_knapsack([5e-324, 0.1], [1, 2], 0.3)[1] == [0, 1]
        assert dp_knapsack([0.1, 0.2], [5e-324, 5e-324], 0.3)[1] == [0, 1]


@pytest.mark.parametrize("solver", ALL)
def test_nothing_to_allocate_meets_any_memory_limit(solver):
    if solver == "ilp":
        pytest.importorskip("scipy")
    assert solve([], [], 0.5, memory_limit=0, solver=solver).saved == []
    assert solve([0.1, 0.2], [0.0, 1.0], 0.0, memory_limit=0, solver=solver).saved == []  # nothing undecided
    assert solve([0.1, 0.2], [1.0, 1.0], math.inf, memory_limit=0, solver=solver).saved == [0, 1]
    with pytest.raises(SolverMemoryError):  # a real solve still checks it
        solve([0.1, 0.2, 0.3], [1.0, 2.0, 2.5], 0.3, memory_limit=0, solver="sparse")


def test_all_fit_shortcut_is_exact_on_real_weights():
    # 0.1 + 0.2 is above 0.3 exactly (and in float64): one item only.
    assert solve([0.1, 0.2], [1.0, 2.0], 0.3, scale=None).saved == [1]
    assert solve([0.1, 0.2], [1.0, 2.0], 0.30000000000000004, scale=None).saved == [0, 1]
    # The float sum of the three is 1.0, the exact one 1 + 2**-59.
    assert solve([1.0, 2.0**-60, 2.0**-60], [1.0] * 3, 1.0 + 2.0**-52, scale=None).saved == [0, 1, 2]
    assert solve([1.0, 2.0**-60, 2.0**-60], [1.0] * 3, 1.0, scale=None).saved == [1, 2]
