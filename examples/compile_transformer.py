"""Compile a small transformer on the CPU under an activation-memory budget, with our solver.

    python examples/compile_transformer.py [--budget 0.5] [--solver auto] [--layers 4] [--d-model 64]

torch.compile's min-cut partitioner turns the budget into a 0/1 knapsack over the
activations it may recompute; ``remat_knapsack.torch.use_solver`` makes our exact
solver answer it. The script prints the plan (how many candidates are saved and
recomputed, their memory, the estimated recompute runtime in FLOPs), then times our
solver and PyTorch's own ``dp_knapsack`` on the very same instance. The instances
are also appended to a JSONL file (``--record``), the format users can send us.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time

import torch
import torch._functorch.config as fconfig
from numpy import float32
from torch._functorch._activation_checkpointing.knapsack import dp_knapsack

from remat_knapsack import __version__, solve
from remat_knapsack.torch import record_instances, use_solver


class TinyTransformer(torch.nn.Module):
    def __init__(self, vocab: int, d_model: int, layers: int, heads: int = 4) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d_model)
        self.blocks = torch.nn.Sequential(
            *[
                torch.nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.0, batch_first=True)
                for _ in range(layers)
            ]
        )
        self.head = torch.nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.embed(tokens)))


def loss_and_grads(model: torch.nn.Module, fn, tokens: torch.Tensor, targets: torch.Tensor):
    model.zero_grad(set_to_none=True)
    logits = fn(tokens)
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    return loss.detach(), [p.grad.detach().clone() for p in model.parameters()]


def best_of(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def mib(nbytes: float) -> str:
    return f"{nbytes / 2**20:.2f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, default=0.5, help="activation_memory_budget in [0, 1]")
    ap.add_argument("--solver", default="auto", help="a remat_knapsack solver name")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--record", default=os.path.join(tempfile.gettempdir(), "remat_knapsack_instances.jsonl"))
    args = ap.parse_args()

    torch.manual_seed(0)
    vocab = 256
    model = TinyTransformer(vocab, args.d_model, args.layers)
    tokens = torch.randint(vocab, (args.batch, args.seq))
    targets = torch.randint(vocab, (args.batch, args.seq))
    eager_loss, eager_grads = loss_and_grads(model, model, tokens, targets)

    print(f"remat-knapsack {__version__}, torch {torch.__version__}")
    print(
        f"model: {args.layers} layers, d_model={args.d_model}, batch {args.batch}x{args.seq} tokens; "
        f"activation_memory_budget={args.budget}, solver={args.solver!r}"
    )
    start = time.perf_counter()
    # record_instances bypasses AOTAutograd's cache, so the partitioner (and our solver)
    # run even when an earlier run of this script left the compiled graph on disk.
    with fconfig.patch(activation_memory_budget=args.budget), use_solver(args.solver) as solver, record_instances(
        args.record
    ) as recorded:
        loss, grads = loss_and_grads(model, torch.compile(model), tokens, targets)
    compile_s = time.perf_counter() - start
    max_diff = max((g - e).abs().max().item() for g, e in zip(grads, eager_grads))
    print(
        f"compiled forward+backward in {compile_s:.1f} s; loss {loss.item():.6f} (eager {eager_loss.item():.6f}), "
        f"max |grad - eager grad| = {max_diff:.2e}"
    )
    print(f"{recorded.count} knapsack instance(s) appended to {args.record}")
    if not solver.history:
        print("The partitioner never reached the knapsack (budget 1.0, or nothing to recompute).")
        return

    for rec in solver.history:
        sol = rec.solution
        n = len(rec.memory)
        bytes_of = lambda idx, rec=rec: sum(max(rec.node_bytes[i], 0) for i in idx)  # noqa: E731
        norm_of = lambda idx, rec=rec: math.fsum(rec.memory[i] for i in idx)  # noqa: E731
        print()
        print(f"graph {rec.graph}: {n} candidate activations, capacity {rec.max_memory} (normalised)")
        print(
            f"  saved       {len(sol.saved):4d}  {mib(bytes_of(sol.saved)):>11}  "
            f"weight {norm_of(sol.saved):.4f}  runtime kept {sol.value:,.0f} FLOPs"
        )
        recompute = math.fsum(rec.runtimes[i] for i in sol.recomputed)
        print(
            f"  recomputed  {len(sol.recomputed):4d}  {mib(bytes_of(sol.recomputed)):>11}  "
            f"weight {norm_of(sol.recomputed):.4f}  estimated recompute runtime {recompute:,.0f} FLOPs"
        )
        print(f"  recomputed nodes: {', '.join(rec.node_names[i] for i in sol.recomputed)}")

        # the same instance, solved again outside the compile: ours vs PyTorch's dp
        ours_s = best_of(lambda rec=rec: solve(rec.memory, rec.runtimes, rec.max_memory, solver=args.solver))
        theirs = dp_knapsack(rec.memory, rec.runtimes, rec.max_memory)
        theirs_s = best_of(lambda rec=rec: dp_knapsack(rec.memory, rec.runtimes, rec.max_memory))
        if theirs[1] == sol.saved:
            verdict = "the same saved set"
        else:
            theirs64 = math.fsum(rec.runtimes[i] for i in theirs[1])
            verdict = (
                f"a different saved set worth {theirs64:,.0f} exactly "
                f"({'a tie in its float32 table' if float32(theirs64) == float32(sol.value) else 'not a float32 tie'})"
            )
        print(
            f"  solve time: remat-knapsack {sol.solver!r} {ours_s * 1e3:.2f} ms, "
            f"PyTorch dp_knapsack {theirs_s * 1e3:.2f} ms ({theirs_s / ours_s:.0f}x)"
        )
        print(f"  PyTorch's dp_knapsack reports {theirs[0]:,.0f} (float32) with {verdict}")

if __name__ == "__main__":
    main()
