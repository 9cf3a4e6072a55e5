import numpy as np
import pytest

from remat_knapsack import compat, instances, solve
from remat_knapsack.greedy import greedy_order, greedy_select


def test_order_is_ratio_descending_stable_zero_memory_first():
    w = np.array([2.0, 1.0, 0.0, 4.0])
    v = np.array([2.0, 1.0, 1.0, 4.0])  # ratios 1, 1, inf, 1
    assert greedy_order(w, v).tolist() == [2, 0, 1, 3]


def test_select_skips_what_does_not_fit_and_goes_on():
    taken, skipped = greedy_select(np.array([3.0, 2.0, 1.0]), np.array([9.0, 4.0, 1.0]), 4.0)
    assert taken == [0, 2] and skipped == [1]


@pytest.mark.parametrize("seed", range(5))
def test_matches_pytorch_greedy_on_paper_instances(seed):
    torch_knapsack = pytest.importorskip("torch._functorch._activation_checkpointing.knapsack")
    inst = instances.paper(30, seed)
    ours = compat.greedy_knapsack(inst.memory, inst.runtimes, inst.max_memory)
    theirs = torch_knapsack.greedy_knapsack(inst.memory, inst.runtimes, inst.max_memory)
    assert ours[1] == theirs[1] and ours[2] == theirs[2]
    assert ours[0] == pytest.approx(theirs[0])


def test_greedy_solver_is_feasible_on_quantised_weights():
    inst = instances.paper(50, 1)
    s = solve(inst.memory, inst.runtimes, inst.max_memory, solver="greedy")
    assert sum(round(inst.memory[i] * 10_000) for i in s.saved) <= round(inst.max_memory * 10_000)
    assert s.value <= solve(inst.memory, inst.runtimes, inst.max_memory).value


def test_compat_greedy_validates_and_handles_zero_memory():
    with pytest.raises(ValueError, match=r"memory\[1\]"):
        compat.greedy_knapsack([0.1, -1.0], [1.0, 1.0], 1.0)
    value, saved, rest = compat.greedy_knapsack([0.0, 0.5, 0.5], [1.0, 2.0, -1.0], 0.5)
    assert saved == [0, 1] and rest == [2] and value == 3.0
