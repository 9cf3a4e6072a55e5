import math

import numpy as np
import pytest

from remat_knapsack import solve
from remat_knapsack._validate import active_items, validate


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
