"""Selective activation checkpointing without torch.compile: the knapsack's plan against the usual rules.

    python benchmarks/bench_eager.py                       # all models; writes to bench-eager-out/
    python benchmarks/bench_eager.py --models decoder --rounds 5
    python benchmarks/bench_eager.py --update-results      # also rewrites benchmarks/results/eager.csv

For each model, eager on CPU, two limits: midway between the peaks of full
checkpointing (every unit recomputed) and no checkpointing, and 1.05x the
full-checkpointing peak. At each limit, side by side:

* ``none``: no checkpointing; ``full``: ``torch.utils.checkpoint`` on every
  unit; ``titan``: torchtitan's op-level rule (save the outputs of every
  other matmul and of attention, recompute the rest; ``addmm`` counts as a
  matmul, as the rule intends for layers with a bias);
* ``knapsack``: :func:`remat_knapsack.torch.plan_checkpoints`;
* ``autosac``: PyTorch's AutoSAC MILPs (``sac_milp`` across units,
  ``get_optimal_checkpointing_policy_per_module`` within each), fed the same
  recorded statistics (``benchmarks/_autosac.py``; needs PuLP and pwlf, the
  ``bench`` extra); skipped when they are missing. Rockmate 2.0.0 is not a
  peer: it installs from PyPI, but its dependency rkgb 2.0.0 lacks the
  ``rkgb.core`` module it imports.

Each row: the measured peak of one step (above its start, as ``sweep``
measures), the predicted one, the median step time over ``--rounds``
alternated rounds, the planning time and the solve time. The rule-based
peers' plans are fixed; only their peak decides whether they fit.

Models: ``decoder`` (pre-norm attention decoder over a 4096-token
vocabulary, the loss outside the model), ``mlp`` (residual MLP stack with
dropout), ``convgn`` (residual conv blocks with GroupNorm) were not used to
tune the planner; ``cnn`` (``examples/sweep_cnn.py``, batch norm) and
``llama`` (``examples/sweep_llama.py``, transformers; skipped without the
``models`` extra) are the examples.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))

from _models import Decoder  # noqa: E402

from remat_knapsack.torch import plan_checkpoints  # noqa: E402
from remat_knapsack.torch.eager._plan import _resolve_units, build_plan  # noqa: E402
from remat_knapsack.torch.step import profile_peak_bytes  # noqa: E402

MiB = 1 << 20
FIELDS = ["model", "limit", "limit_mib", "method", "fits", "peak_mib", "predicted_mib", "step_ms", "replay_ms",
          "planning_s", "solve_ms"]  # fmt: skip


# ---------------------------------------------------------------------- models


class MLPBlock(torch.nn.Module):
    def __init__(self, d: int, p: float = 0.1) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.up, self.down = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
        self.drop = torch.nn.Dropout(p)

    def forward(self, x):
        return x + self.drop(self.down(F.gelu(self.up(self.norm(x)))))


class MLPStack(torch.nn.Module):
    def __init__(self, d: int = 256, blocks: int = 6, classes: int = 10) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([MLPBlock(d) for _ in range(blocks)])
        self.head = torch.nn.Linear(d, classes)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class ConvBlock(torch.nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1, self.conv2 = torch.nn.Conv2d(c, c, 3, padding=1), torch.nn.Conv2d(c, c, 3, padding=1)
        self.norm1, self.norm2 = torch.nn.GroupNorm(8, c), torch.nn.GroupNorm(8, c)

    def forward(self, x):
        y = F.silu(self.norm1(self.conv1(x)))
        return x + F.silu(self.norm2(self.conv2(y)))


class ConvGN(torch.nn.Module):
    def __init__(self, c: int = 48, blocks: int = 4, classes: int = 10) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, c, 3, padding=1)
        self.blocks = torch.nn.ModuleList([ConvBlock(c) for _ in range(blocks)])
        self.head = torch.nn.Linear(c, classes)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x.mean(dim=(2, 3)))


def make(name: str):
    """``(model, args, loss)`` of a benchmark model."""
    torch.manual_seed(0)
    if name == "decoder":
        model = Decoder(vocab=4096, d=256, layers=4)
        return model, (torch.randint(0, 4096, (4, 256)),), lambda logits: logits.float().logsumexp(-1).mean()
    if name == "mlp":
        labels = torch.randint(0, 10, (4096,))
        return MLPStack(), (torch.randn(4096, 256),), lambda out: F.cross_entropy(out, labels)
    if name == "convgn":
        labels = torch.randint(0, 10, (8,))
        return ConvGN(), (torch.randn(8, 3, 32, 32),), lambda out: F.cross_entropy(out, labels)
    if name == "cnn":
        from sweep_cnn import make as make_cnn

        return make_cnn()
    if name == "llama":
        from sweep_llama import make as make_llama

        model, args = make_llama()
        return model, args, lambda out: out.loss
    raise ValueError(f"unknown model {name!r}")


# ---------------------------------------------------------------------- peers


_MATMULS = {torch.ops.aten.mm.default, torch.ops.aten.addmm.default}
_TITAN_SAVE = _MATMULS | {
    torch.ops.aten.max.default,
    torch.ops.aten._scaled_dot_product_efficient_attention.default,
    torch.ops.aten._scaled_dot_product_flash_attention.default,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
}


def _titan_context():
    counts = {"forward": 0, "recompute": 0}

    def policy(ctx, func, *args, **kwargs):
        mode = "recompute" if ctx.is_recompute else "forward"
        if func in _MATMULS:
            counts[mode] += 1
        # torchtitan: save every other matmul's output (recompute the even ones) and attention's
        save = func in _TITAN_SAVE and not (func in _MATMULS and counts[mode] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


class Wrapped:
    """Every unit's forward under ``checkpoint``, with an optional selective context; a context manager."""

    def __init__(self, modules, context_fn=None) -> None:
        self.modules, self.context_fn = modules, context_fn

    def __enter__(self):
        for m in self.modules:
            forward = m.forward
            kwargs = {} if self.context_fn is None else {"context_fn": self.context_fn}
            m.forward = lambda *a, _f=forward, _k=kwargs, **kw: checkpoint(_f, *a, use_reentrant=False, **_k, **kw)
        return self

    def __exit__(self, *exc):
        for m in self.modules:
            del m.forward


class Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


# ---------------------------------------------------------------------- measuring


def _step(model, args, loss):
    def run():
        loss(model(*args)).backward()

    return run


def _clear(model, args):
    model.zero_grad(set_to_none=True)
    for a in args:
        if isinstance(a, torch.Tensor):
            a.grad = None


def measure_peak(model, args, loss, context) -> int:
    with context:
        _clear(model, args)
        _step(model, args, loss)()  # warm: first-call allocations are not the step's
        _clear(model, args)
        return profile_peak_bytes(_step(model, args, loss))


def step_times(model, args, loss, contexts: dict, rounds: int) -> dict[str, float]:
    """Median step seconds per context, the contexts alternated within each round."""
    times = {name: [] for name in contexts}
    for _ in range(rounds):
        for name, context in contexts.items():
            with context:
                _clear(model, args)
                start = time.perf_counter()
                _step(model, args, loss)()
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def run(name: str, rounds: int, autosac: bool) -> list[dict]:
    model, args, loss = make(name)
    units = [m for _, m in _resolve_units(model, None)]
    unit_names = [n for n, _ in _resolve_units(model, None)]
    none_peak = measure_peak(model, args, loss, Nothing())
    full_peak = measure_peak(model, args, loss, Wrapped(units))
    limits = {"midway": (none_peak + full_peak) // 2, "1.05 full": int(1.05 * full_peak)}
    rows = []
    for label, limit in limits.items():
        contexts = {"none": Nothing(), "full": Wrapped(units), "titan": Wrapped(units, _titan_context)}
        extra = {}
        start = time.perf_counter()
        plan = plan_checkpoints(model, args, limit, loss=loss, keep_output=False)  # the step `_step` runs
        planning = time.perf_counter() - start
        contexts["knapsack"] = plan
        timeline = plan._timeline
        replay = {"knapsack": plan.recompute_seconds}
        extra["knapsack"] = (plan.predicted_peak_bytes, planning, plan.solve_seconds)
        if autosac:  # AutoSAC's MILPs on the very statistics the knapsack planned from
            from _autosac import autosac_plan

            start = time.perf_counter()
            choice, solve, _ = autosac_plan(timeline, limit)
            sac_plan = build_plan(model, list(zip(unit_names, units)), timeline, choice, timeline.peak(choice), limit,
                                  plan.unplanned_peak_bytes, plan.full_checkpoint_peak_bytes)  # fmt: skip
            recording_s = plan.planning_seconds - plan.solve_seconds
            contexts["autosac"] = sac_plan
            replay["autosac"] = sac_plan.recompute_seconds
            extra["autosac"] = (sac_plan.predicted_peak_bytes, recording_s + time.perf_counter() - start, solve)
        peaks = {m: measure_peak(model, args, loss, c) for m, c in contexts.items()}
        times = step_times(model, args, loss, contexts, rounds)
        for method in contexts:
            predicted, planning_s, solve_s = extra.get(method, (None, 0.0, 0.0))
            rows.append({
                "model": name, "limit": label, "limit_mib": round(limit / MiB, 2), "method": method,
                "fits": peaks[method] <= limit, "peak_mib": round(peaks[method] / MiB, 2),
                "predicted_mib": "" if predicted is None else round(predicted / MiB, 2),
                "step_ms": round(times[method] * 1e3, 2),
                "replay_ms": round(replay[method] * 1e3, 2) if method in replay else "",
                "planning_s": round(planning_s, 3),
                "solve_ms": round(solve_s * 1e3, 2),
            })  # fmt: skip
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["decoder", "mlp", "convgn", "cnn", "llama"])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", type=Path, default=Path("bench-eager-out"))
    ap.add_argument("--no-autosac", action="store_true", help="leave out AutoSAC's MILPs")
    ap.add_argument("--update-results", action="store_true", help="also rewrite benchmarks/results/eager.csv")
    a = ap.parse_args()
    try:
        import pulp  # noqa: F401
        import pwlf  # noqa: F401

        autosac = not a.no_autosac
    except ImportError:
        print("PuLP or pwlf is missing: the autosac rows are skipped (pip install 'remat-knapsack[bench]')")
        autosac = False
    rows = []
    for name in a.models:
        if name == "llama":
            try:
                import transformers  # noqa: F401
            except ImportError:
                print("transformers is missing: llama skipped (pip install 'remat-knapsack[models]')")
                continue
        rows += run(name, a.rounds, autosac)
    a.out.mkdir(parents=True, exist_ok=True)
    paths = [a.out / "eager.csv"] + ([HERE / "results" / "eager.csv"] if a.update_results else [])
    for path in paths:
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(rows)
        print("wrote", path)


if __name__ == "__main__":
    main()
