"""Time the knee from one Pareto pass against PyTorch's experimental ``dynamic_memory_budget_dp``.

    pip install 'remat-knapsack[torch,models]'
    python examples/knee_timing.py [--layers 4] [--hidden 256] [--budget 0.5] [--repeats 3]

While a LLaMA (``examples/sweep_llama.py``'s model) compiles under aot_eager, a
solver sits at PyTorch's knapsack call and, on every real joint graph it sees,
finds the knee both ways on the same instance:

* ours: ``remat_knapsack.frontier(memory, runtimes, budget).knee()``, one Pareto
  pass, then one solve at the knee (what ``KnapsackSolver(budget="knee")`` does);
* PyTorch's: what ``activation_memory_budget_solver = "dynamic_memory_budget_dp"``
  runs: ``GraphInfoProvider.inialize_from_graph`` and
  ``KnapsackEvaluator.get_knee_point_memory_budget(dp_knapsack)`` (100 dp solves
  over budgets from 0.001 to the budget), then ``dp_knapsack`` at the knee. Its
  time is also shown without the graph analysis (the 100 solves and the last one).

Each side runs ``--repeats`` times; the best time counts. The two knees need
not be equal: PyTorch's evaluator measures memory in its own units over a grid
of 100 budgets, ours reads the exact curve.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch._functorch.config as fconfig
from torch._functorch._activation_checkpointing.graph_info_provider import GraphInfoProvider
from torch._functorch._activation_checkpointing.knapsack import dp_knapsack
from torch._functorch._activation_checkpointing.knapsack_evaluator import KnapsackEvaluator

from remat_knapsack import frontier, solve
from remat_knapsack.torch import KnapsackSolver, use_solver


def _best(fn, repeats):
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


class KneeTimer(KnapsackSolver):
    """Solves like ``KnapsackSolver(budget="knee")`` and times both knees on each call."""

    def __init__(self, repeats: int) -> None:
        super().__init__("auto", budget="knee")
        self.repeats = repeats
        self.rows: list[dict] = []

    def __call__(self, memory, joint_graph, max_memory, node_info, nodes):
        runtimes, _, _ = self._runtimes(memory, joint_graph, nodes)

        def ours():
            knee = frontier(memory, runtimes, max_memory).knee()
            return knee, solve(memory, runtimes, knee)

        def theirs_knapsack(provider):
            knee = KnapsackEvaluator(graph_info_provider=provider).get_knee_point_memory_budget(
                knapsack_algo=dp_knapsack, max_mem_budget=max_memory
            )
            return knee, dp_knapsack(memory, runtimes, knee)

        def provider():
            return GraphInfoProvider.inialize_from_graph(
                joint_graph=joint_graph,
                all_recomputable_banned_nodes=nodes,
                recorded_knapsack_input_memories=memory,
                recorded_knapsack_input_runtimes=runtimes,
            )

        t_ours, (knee, _) = _best(ours, self.repeats)
        t_theirs, (knee_t, _) = _best(lambda: theirs_knapsack(provider()), self.repeats)
        gip = provider()
        t_solves, _ = _best(lambda: theirs_knapsack(gip), self.repeats)
        self.rows.append({"n": len(memory), "budget": max_memory, "knee": knee, "knee_torch": knee_t,
                          "ours": t_ours, "torch": t_theirs, "torch_solves": t_solves})
        return super().__call__(memory, joint_graph, max_memory, node_info, nodes)


def main() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from sweep_llama import make

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--budget", type=float, default=0.5, help="activation_memory_budget (< 1, or no knapsack runs)")
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()

    model, (ids,) = make(layers=a.layers, hidden=a.hidden)
    timer = KneeTimer(a.repeats)
    torch._dynamo.reset()
    with fconfig.patch(activation_memory_budget=a.budget, enable_autograd_cache=False), use_solver(timer):
        torch.compile(model, backend="aot_eager")(ids).loss.backward()
    torch._dynamo.reset()
    print(f"torch {torch.__version__}; LLaMA {a.layers} layers, hidden {a.hidden}; budget {a.budget}; "
          f"best of {a.repeats}")
    print("| graph | n | our knee | PyTorch knee | ours ms | dynamic_memory_budget_dp ms "
          "| its 101 dp solves ms | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for i, r in enumerate(timer.rows):
        print(f"| {i} | {r['n']} | {r['knee']:.4f} | {r['knee_torch']:.4f} | {r['ours'] * 1e3:.2f} "
              f"| {r['torch'] * 1e3:.1f} | {r['torch_solves'] * 1e3:.1f} | {r['torch'] / r['ours']:.0f}x |")
    if not timer.rows:
        print("no knapsack ran (PyTorch calls it only for 0 < budget < 1, and not when a min-cut fits)")


if __name__ == "__main__":
    main()
