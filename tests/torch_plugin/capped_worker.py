"""Planning a step that does not fit: run in a process whose address space is capped (``RLIMIT_AS``).

``python capped_worker.py OUT.json MARGIN_MIB PATH...`` builds an attention
stack whose unplanned step needs several times what a planned one does,
loads the compile machinery on a small copy of it, then caps the process's
address space at what it uses then plus ``MARGIN_MIB``. Under the cap it
first checks that the unplanned step runs out of memory (so the cap bites),
then runs each planning PATH ("predict", "fit", "eager", "cli-fit",
"cli-eager") and trains one step under the plan it returned; "sweep" measures
a budget whose step fits and one (budget 1, no recomputation) whose does not. It writes, per
path, what happened to OUT.json; a path that raised records the error.
"""

from __future__ import annotations

import json
import resource
import sys
import traceback

import torch
from torch import nn

BACKEND = "aot_eager"


class Attention(nn.Module):
    """Pre-norm attention with a plain ``q @ k.T`` softmax: its scores are the step's largest tensors."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads, self.norm, self.qkv, self.out = heads, nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        return x + self.out((scores @ v).transpose(1, 2).reshape(b, t, d))


class Stack(nn.Module):
    def __init__(self, layers: int = 6, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Attention(d, heads) for _ in range(layers)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


TOKENS = 1536
#: The limit every path plans for: the unplanned step peaks at about 301 MiB, the smallest plan at 119 MiB.
LIMIT = 160 << 20


def make():
    """The command line's target: the stack and one batch (``remat-knapsack fit capped_worker:make``)."""
    torch.manual_seed(0)
    return Stack(), (torch.randn(1, TOKENS, 64),)


def _address_space() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def _train(model, args, solver=None) -> float:
    """One training step (compiled with ``solver``'s plan, or eager when None); its loss."""
    from remat_knapsack.torch import use_solver

    model.zero_grad(set_to_none=True)
    if solver is None:
        loss = model(*args).sum()
        loss.backward()
        return loss.item()
    torch._dynamo.reset()
    with use_solver(solver):
        loss = torch.compile(model, backend=BACKEND)(*args).sum()
        loss.backward()
    torch._dynamo.reset()
    return loss.item()


def main(out_path: str, margin_mib: str, *paths: str) -> None:
    from remat_knapsack.cli import main as cli
    from remat_knapsack.torch import fit, plan_checkpoints, predict_peaks, sweep

    model, args = make()
    # Load the compile machinery (dynamo, AOTAutograd, the profiler) on a small copy, outside the cap.
    small, small_args = Stack(layers=1), (torch.randn(1, 64, 64),)
    predict_peaks(small, small_args, [0.5], backend=BACKEND)
    fit(small, small_args, 1 << 30, backend=BACKEND, repeats=1)
    plan_checkpoints(small, small_args, 1 << 30)
    _train(small, small_args)
    cap = _address_space() + int(margin_mib) * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    report: dict = {"cap_bytes": cap}
    try:
        _train(model, args)
        report["unplanned"] = "ran"
    except RuntimeError as exc:
        report["unplanned"] = "out of memory" if "can't allocate memory" in str(exc) else repr(exc)[:300]
    limit = LIMIT
    for path in paths:
        try:
            if path == "predict":
                report[path] = [p.peak_bytes for p in predict_peaks(model, args, [0.05, 0.3], backend=BACKEND)]
            elif path == "fit":
                r = fit(model, args, limit, backend=BACKEND, repeats=1)
                report[path] = {"peak": r.peak_bytes, "loss": _train(model, args, r.solver)}
            elif path == "sweep":
                points = sweep(model, args, budgets=[0.05, 1.0], backend=BACKEND, repeats=1, progress=False)
                report[path] = [p.error if p.error else p.peak_bytes for p in points.points]
            elif path == "eager":
                plan = plan_checkpoints(model, args, limit)
                with plan:
                    loss = _train(model, args)
                report[path] = {"predicted": plan.predicted_peak_bytes, "loss": loss}
            elif path in ("cli-fit", "cli-eager"):
                extra = ["--eager"] if path == "cli-eager" else ["--backend", BACKEND, "--repeats", "1"]
                code = cli(["fit", f"{__file__}:make", "--max-peak", str(limit), "--out", out_path + f".{path}",
                            *extra])  # fmt: skip
                report[path] = {"code": code}
        except Exception as exc:  # recorded: the test says which path failed and why
            report[path] = {"error": f"{type(exc).__name__}: {exc}"[:1000], "where": traceback.format_exc()[-1500:]}
    with open(out_path, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
