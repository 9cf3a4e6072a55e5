"""The drop-in functions, and PyTorch's own solvers as peers when torch is installed."""

import numpy as np
import pytest
from hypothesis import given, settings
from oracles import brute_force, small_instances

from remat_knapsack import compat, solve

FUNCS = [compat.greedy_knapsack, compat.ilp_knapsack, compat.dp_knapsack, compat.dp_knapsack_sliding_hirschberg]


@pytest.mark.parametrize("fn", FUNCS, ids=lambda f: f.__name__)
def test_signature_and_return_convention(fn):
    value, saved, recomputable = fn([0.2, 0.3, 0.5], [2.0, 3.0, 4.0], 0.5)
    assert isinstance(value, float)
    assert sorted(saved + recomputable) == [0, 1, 2]
    assert value == 5.0
    if fn in (compat.dp_knapsack, compat.dp_knapsack_sliding_hirschberg):
        assert saved == sorted(saved) and recomputable == sorted(recomputable, reverse=True)


def test_repro_from_the_issue():
    assert compat.dp_knapsack_sliding_hirschberg([0.0001] * 3, [1.0] * 3, 0.0001) == (1.0, [0], [2, 1])


def test_greedy_keeps_pytorch_order():
    # ratio order: item 1 (4.0/0.2), item 0 (3/0.3), item 2 (1/0.2)
    value, saved, rest = compat.greedy_knapsack([0.3, 0.2, 0.2], [3.0, 4.0, 1.0], 0.45)
    assert saved == [1, 2] and rest == [0] and value == 5.0




def _torch_knapsack():
    pytest.importorskip("torch")
    from torch._functorch._activation_checkpointing import knapsack

    return knapsack


@settings(max_examples=150, deadline=None)
@given(small_instances(max_n=10, max_w=9, max_v=5))
def test_values_and_sets_equal_pytorch_dp(inst):
    knapsack = _torch_knapsack()
    memory, runtimes, cap = inst
    memory = [m / 10_000 for m in memory]
    cap = cap / 10_000
    if any(r < 0 for r in runtimes):  # PyTorch keeps negative zero-weight items; we never do
        runtimes = [max(r, 0.0) for r in runtimes]
    pt_value, pt_saved, pt_rest = knapsack.dp_knapsack(memory, runtimes, cap)
    value, saved, rest = compat.dp_knapsack(memory, runtimes, cap)
    assert value == pytest.approx(pt_value, rel=1e-6, abs=1e-6)
    # Integer runtimes keep float32 exact, so PyTorch's tie rule and ours agree
    # on the set too.
    assert saved == pt_saved
    assert rest == pt_rest


@pytest.mark.parametrize("seed", range(5))
def test_values_equal_pytorch_dp_on_float_runtimes(seed):
    knapsack = _torch_knapsack()
    rng = np.random.default_rng(seed)
    n = 40
    memory = (rng.integers(1, 200, n) / 10_000).tolist()
    runtimes = rng.uniform(1, 100, n).tolist()
    cap = float(np.sum(memory) / 2)
    pt_value = knapsack.dp_knapsack(memory, runtimes, cap)[0]
    for solver in ("dp", "hirschberg", "auto"):
        s = solve(memory, runtimes, cap, solver=solver)
        # PyTorch's table is float32: equal within its rounding.
        assert s.value == pytest.approx(pt_value, rel=n * 2**-23), solver


def test_pytorch_sliding_hirschberg_bug_is_what_we_fix():
    knapsack = _torch_knapsack()
    _, saved, _ = knapsack.dp_knapsack_sliding_hirschberg([0.0001] * 3, [1.0] * 3, 0.0001)
    if len(saved) == 1:
        pytest.skip("this torch has the fixed sliding Hirschberg")
    assert saved == [0, 1]  # weight 2 > capacity 1: over budget (PyTorch issue 197871)
    assert compat.dp_knapsack_sliding_hirschberg([0.0001] * 3, [1.0] * 3, 0.0001)[1] == [0]


@settings(max_examples=100, deadline=None)
@given(small_instances(max_n=9))
def test_pytorch_ilp_is_a_peer_on_value(inst):
    _torch_knapsack()  # skips without torch
    pytest.importorskip("scipy")
    memory, runtimes, cap = inst
    runtimes = [max(r, 0.0) + 1.0 for r in runtimes]
    best, _ = brute_force(memory, runtimes, cap)
    ours = compat.ilp_knapsack([m / 100 for m in memory], runtimes, cap / 100)[0]
    assert ours == best
