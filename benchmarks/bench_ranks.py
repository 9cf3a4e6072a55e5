"""predict_peaks, sweep and fit under torchrun: DDP and FSDP2 on two ranks (gloo, CPU).

    pip install 'remat-knapsack[torch]'
    python benchmarks/bench_ranks.py              # launches torchrun; writes benchmarks/results/ranks.csv

It runs itself under ``torchrun --standalone --nproc-per-node 2`` once per
wrapper and backend (aot_eager, then inductor). Models, neither used to tune the planner: ``ddp``, a stack of 6
residual MLP blocks (d = 256, 2048 rows per rank) in DistributedDataParallel;
``fsdp``, a decoder (4 layers, d = 256, vocabulary 4096, batch 4 x 256 per
rank, the loss over the vocabulary outside the model) with ``fully_shard`` on
each layer and then the root. For each budget, every rank's predicted peak
and sweep's measured peak (the worst rank's); then ``fit`` at the midpoint
of the swept peaks: its limit, measured peak, compiles, and whether both
ranks returned the same plan.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _models import Decoder  # noqa: E402
from _results import default, write_rows  # noqa: E402

BUDGETS = [0.05, 0.3, 0.5, 0.8]
BACKENDS = ("aot_eager", "inductor")


class Block(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.b(torch.nn.functional.gelu(self.a(x)))


def worker(wrapper: str, out: Path, backend: str) -> None:
    """One rank: plan and measure, write this rank's rows as JSON."""
    import torch.distributed as dist

    from remat_knapsack.errors import PeakLimitError
    from remat_knapsack.torch import fit, predict_peaks, sweep

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    if wrapper == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(torch.nn.Sequential(*[Block(256) for _ in range(6)], torch.nn.Linear(256, 1)))
        torch.manual_seed(1 + rank)
        args, loss = (torch.randn(2048, 256),), (lambda out: out.sum())
    else:
        from torch.distributed.fsdp import fully_shard

        model = Decoder()
        for layer in model.layers:
            fully_shard(layer)
        fully_shard(model)
        torch.manual_seed(1 + rank)
        args, loss = (torch.randint(0, 4096, (4, 256)),), (lambda out: out.float().logsumexp(-1).mean())
    t0 = time.perf_counter()
    preds = predict_peaks(model, args, BUDGETS, loss=loss, backend=backend)
    t_pred = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = sweep(model, args, budgets=BUDGETS, loss=loss, backend=backend, repeats=3, progress=False)
    t_sweep = time.perf_counter() - t0
    measured = [p.peak_bytes for p in report.points]
    limit = (min(measured) + max(measured)) // 2
    try:
        r = fit(model, args, limit, loss=loss, backend=backend, repeats=3)
        fitted = {"limit": limit, "peak": r.peak_bytes, "predicted": r.predicted_peak_bytes,
                  "compiles": r.compiles, "targets": [a["target_bytes"] for a in r.attempts]}  # fmt: skip
    except PeakLimitError as e:
        fitted = {"limit": limit, "error": str(e)}
    record = {"rank": rank, "predicted": [p.peak_bytes for p in preds], "measured": measured,
              "predict_s": round(t_pred, 1), "sweep_s": round(t_sweep, 1), "fit": fitted}  # fmt: skip
    (out / f"{wrapper}-{backend}-rank{rank}.json").write_text(json.dumps(record))
    dist.destroy_process_group()


def main() -> int:
    if "RANK" in os.environ:  # a rank, launched below
        worker(sys.argv[1], Path(sys.argv[2]), sys.argv[3])
        return 0
    out_csv = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else default("ranks")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for backend, wrapper in itertools.product(BACKENDS, ("ddp", "fsdp")):
            cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                   __file__, wrapper, tmp, backend]  # fmt: skip
            subprocess.run(cmd, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
            r0, r1 = (json.loads((Path(tmp) / f"{wrapper}-{backend}-rank{r}.json").read_text()) for r in (0, 1))
            same = r0["predicted"] == r1["predicted"] and r0["fit"] == r1["fit"]
            tag = {"backend": backend, "wrapper": wrapper}
            for b, p, m in zip(BUDGETS, r0["predicted"], r0["measured"]):
                error = round(100 * (p - m) / m, 1)
                rows.append(tag | {"kind": "budget", "budget": b, "predicted_peak_bytes": p, "peak_bytes": m,
                                   "error_pct": error, "ranks_agree": same})  # fmt: skip
            f = r0["fit"]
            if "error" in f:
                rows.append(tag | {"kind": "fit", "limit_bytes": f["limit"], "ranks_agree": same,
                                   "note": f["error"][:300]})  # fmt: skip
            else:
                over = round(f["peak"] / f["limit"], 3)
                rows.append(tag | {"kind": "fit", "limit_bytes": f["limit"], "peak_bytes": f["peak"],
                                   "predicted_peak_bytes": f["predicted"], "compiles": f["compiles"],
                                   "peak_over_limit": over, "ranks_agree": same})  # fmt: skip
            rows.append(tag | {"kind": "timing", "note": f"predict_peaks {r0['predict_s']} s, "
                               f"sweep over {len(BUDGETS)} budgets {r0['sweep_s']} s (rank 0)"})  # fmt: skip
    for row in rows:
        print(row)
    print("wrote", write_rows(rows, out_csv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
