"""``_rng``: which saved sets recompute a random op, the random-safe plans, and the knapsack that keeps them."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch", reason="needs torch (pip install 'remat-knapsack[torch]')")

import torch._functorch.config as fconfig  # noqa: E402
from training_models import make_dropout_mlp  # noqa: E402

from remat_knapsack.torch import KnapsackSolver, _plugin, _rng, capture  # noqa: E402


@pytest.fixture(scope="module")
def captured():
    model, args, _ = make_dropout_mlp()
    torch._dynamo.reset()
    with capture.capture_graphs() as caps, fconfig.patch(activation_memory_budget=1.0, enable_autograd_cache=False):
        torch.compile(model, backend="aot_eager")(*args)
    torch._dynamo.reset()
    assert len(caps) == 1
    return caps[0]


def _random_nodes(cap):
    return [n for n in cap.joint_graph.nodes if _rng.is_random(n)]


def test_is_random_finds_the_two_dropouts(captured):
    assert [str(n.target) for n in _random_nodes(captured)] == ["aten.native_dropout.default"] * 2
    assert not any(_rng.is_random(n) for n in captured.joint_graph.nodes if n.op != "call_function")


def test_the_inputs_alone_recompute_every_dropout_and_the_safe_plans_none(captured):
    g, info = captured.joint_graph, captured.node_info
    inputs = list(info.inputs)
    assert _rng.recomputed_random(g, info, inputs) == _random_nodes(captured)
    min_cut = _rng.random_safe_inputs_plan(g, info)
    kept = _rng.keep_random(g, info, inputs)
    assert _rng.recomputed_random(g, info, min_cut) == []
    assert _rng.recomputed_random(g, info, kept) == []
    assert _rng.random_safe(g, info, inputs, 0) == min_cut  # budget 0: the min-cut
    assert _rng.random_safe(g, info, inputs, 0.5) == kept  # elsewhere: the repair
    # PyTorch's default plan (budget 1) recomputes no random op: left as it is
    default = captured.saved_for_budget(1.0, KnapsackSolver())
    assert _rng.random_safe(g, info, default, 1.0) == default
    # the min-cut saves the boolean masks, cheaper than keeping the float outputs and masks
    assert captured.peak(min_cut).saved_bytes <= captured.peak(kept).saved_bytes


def test_every_budget_plan_of_the_peak_model_is_random_safe(captured):
    solver = KnapsackSolver()
    g, info = captured.joint_graph, captured.node_info
    for budget in (0.0, 1e-9, 0.01, 0.3, 0.6, 1.0):
        with _plugin._wrapper_held():
            saved = captured.saved_for_budget(budget, solver)
        assert _rng.recomputed_random(g, info, saved) == [], budget


def _brute_force(memory, runtimes, capacity, kept):
    free = [i for i in range(len(memory)) if i not in kept]
    best = -1.0
    for r in range(len(free) + 1):
        for subset in itertools.combinations(free, r):
            if math.fsum(memory[i] for i in subset) <= capacity:
                best = max(best, math.fsum(runtimes[i] for i in subset))
    return best + math.fsum(runtimes[i] for i in kept)


@pytest.mark.parametrize("seed", range(40))
def test_the_knapsack_keeps_random_items_and_is_optimal_over_the_rest(seed):
    import random

    rng = random.Random(seed)
    n = rng.randint(1, 7)
    memory = [rng.randint(0, 8) / 16 for _ in range(n)]  # exact in binary: no rounding question
    runtimes = [float(rng.randint(1, 20)) for _ in range(n)]
    kept = sorted(rng.sample(range(n), rng.randint(0, n)))
    max_memory = rng.randint(0, 16) / 16
    for name in ("auto", "sparse", "ilp"):
        budget, s = KnapsackSolver(name, scale=None)._solve_keeping(memory, runtimes, max_memory, kept)
        assert set(kept) <= set(s.saved) and not set(kept) & set(s.recomputed)
        assert sorted(s.saved + s.recomputed) == list(range(n))
        room = max(0.0, max_memory - math.fsum(memory[i] for i in kept))
        assert budget == room if kept else budget == max_memory
        assert math.fsum(memory[i] for i in s.saved if i not in kept) <= room
        assert s.value == pytest.approx(_brute_force(memory, runtimes, room, kept), rel=1e-12)


def test_a_solver_call_never_offers_a_random_candidate(captured):
    """Called as the partitioner calls it: the random candidates come back in the saved list."""
    fake = [SimpleNamespace(op="call_function", target=torch.ops.aten.native_dropout.default, name="d"),
            SimpleNamespace(op="call_function", target=torch.ops.aten.mm.default, name="m")]  # fmt: skip
    s = KnapsackSolver()
    s._runtimes = lambda memory, graph, nodes: ([5.0, 1.0], "test", "g")  # noqa: ARG005
    saved, recomputed = s(memory=[0.5, 0.5], joint_graph=None, max_memory=0.0, node_info=None,
                          all_recomputable_banned_nodes=fake)  # fmt: skip
    assert saved == [0] and recomputed == [1]
    assert s.history[-1].solution.stats["kept_random"] == [0]
