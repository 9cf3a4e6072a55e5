"""What keeping random ops costs: peak, saved bytes and step time of a dropout decoder, with and without it.

    pip install 'remat-knapsack[torch]'
    python benchmarks/bench_rng.py                 # writes benchmarks/results/rng.csv
    python benchmarks/bench_rng.py --out my.csv --repeats 9

Our solvers never recompute a random op (``remat_knapsack.torch._rng``). This
compiles a pre-norm decoder with dropout between layers (4 layers, d = 256,
vocabulary 4096, batch 4 x 256 tokens, dropout 0.1, ``aot_eager`` on the CPU)
at each budget three ways:

* ``stock``: PyTorch's own ``"dp"`` solver, which recomputes dropout with a
  fresh mask below budget 1 (pytorch/pytorch#190758);
* ``ours_unguarded``: ``use_solver("auto")`` with the random-op rule switched
  off (patched out here, for this measurement only): the plans PyTorch's rule
  would give our solver;
* ``ours``: ``use_solver("auto")`` as shipped.

Each row has the measured peak of one step above its start, the bytes saved
for backward, the median step time and whether the compiled gradients equal
eager ones (``aot_eager`` draws with the eager generator, so with one seed the
masks agree unless the backward draws again).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

import torch
import torch._functorch.config as fconfig
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import default, write_rows  # noqa: E402

from remat_knapsack.torch import _rng, use_solver  # noqa: E402
from remat_knapsack.torch.step import profile_peak_bytes, saved_tensor_bytes  # noqa: E402

BUDGETS = [0.0, 0.05, 0.3, 0.6]
MiB = 1 << 20


class Block(nn.Module):
    def __init__(self, d: int, heads: int, p: float) -> None:
        super().__init__()
        self.heads, self.p = heads, p
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.drop = nn.Dropout(p)

    def attention(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))

    def forward(self, x):
        x = x + self.drop(self.attention(self.n1(x)))
        return x + self.drop(self.mlp(self.n2(x)))


class Decoder(nn.Module):
    def __init__(self, vocab: int = 4096, d: int = 256, layers: int = 4, heads: int = 4, t: int = 256,
                 p: float = 0.1) -> None:  # fmt: skip
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(t, d)
        self.drop = nn.Dropout(p)
        self.blocks = nn.ModuleList([Block(d, heads, p) for _ in range(layers)])
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, ids, targets):
        h = self.drop(self.tok(ids) + self.pos(torch.arange(ids.shape[1])))
        for block in self.blocks:
            h = block(h)
        logits = self.head(self.norm(h))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


@contextlib.contextmanager
def _unguarded():
    """The random-op rule off: every saved set as PyTorch's rule gives it, random candidates offered."""
    saved = _rng.random_safe, _rng.random_indices
    _rng.random_safe = lambda graph, info, plan, budget: list(plan)  # noqa: ARG005
    _rng.random_indices = lambda nodes: []  # noqa: ARG005
    try:
        yield
    finally:
        _rng.random_safe, _rng.random_indices = saved


def _grads(model, run, args):
    model.zero_grad(set_to_none=True)
    torch.manual_seed(7)
    run(*args).backward()
    return [p.grad.clone() for p in model.parameters()]


def measure(model, args, budget: float, way: str, repeats: int, eager) -> dict:
    torch._dynamo.reset()
    guard = _unguarded() if way == "ours_unguarded" else contextlib.nullcontext()
    solver = use_solver("auto") if way != "stock" else fconfig.patch(activation_memory_budget_solver="dp")
    with guard, solver, fconfig.patch(activation_memory_budget=budget, enable_autograd_cache=False):
        compiled = torch.compile(model, backend="aot_eager")

        def step():
            compiled(*args).backward()

        grads = _grads(model, compiled, args)
        model.zero_grad(set_to_none=True)
        saved = saved_tensor_bytes(step)
        model.zero_grad(set_to_none=True)
        peak = profile_peak_bytes(step)
        times = []
        for _ in range(repeats):
            model.zero_grad(set_to_none=True)
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
    same = all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(grads, eager))
    return {"model": "dropout_decoder", "backend": "aot_eager", "budget": budget, "way": way,
            "peak_mib": round(peak / MiB, 2), "saved_mib": round(saved / MiB, 2),
            "step_ms": round(statistics.median(times) * 1e3, 1), "grads_match_eager": same}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=default("rng"), help="CSV to (re)write (default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=5, help="timed steps per cell (median)")
    ap.add_argument("--budgets", type=float, nargs="+", default=BUDGETS)
    opts = ap.parse_args(argv)
    torch.manual_seed(0)
    model = Decoder()
    ids, targets = torch.randint(0, 4096, (4, 256)), torch.randint(0, 4096, (4, 256))
    args = (ids, targets)
    eager = _grads(model, model, args)
    rows = []
    for budget in opts.budgets:
        for way in ("stock", "ours_unguarded", "ours"):
            row = measure(model, args, budget, way, opts.repeats, eager)
            rows.append(row)
            print(", ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    torch._dynamo.reset()
    print("wrote", write_rows(rows, opts.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
