"""The planner on a CUDA GPU: sweep, predict_peaks and fit with inductor, against torch.cuda.max_memory_allocated.

    pip install 'remat-knapsack[torch]'        # a CUDA build of torch
    python benchmarks/gpu_check.py             # writes benchmarks/results/gpu.csv
    python benchmarks/gpu_check.py --quick     # one model, three budgets

On CUDA, ``sweep`` and ``fit`` measure a step's peak with
``torch.cuda.max_memory_allocated`` (after ``reset_peak_memory_stats``), which
counts the caching allocator's rounded block sizes (multiples of 512 bytes);
the peak model reads the same timeline as on the CPU. Models: the examples'
CNN (examples/sweep_cnn.py) and a decoder (6 layers, d = 512, vocabulary
8192, batch 8 x 512, the loss over the vocabulary outside the model), plus the
same decoder compiled block by block (``regions=``). For each: ``sweep``
over the budgets, ``predict_peaks`` over the same budgets (the error of each
prediction), and ``fit`` at the midpoint of the swept peaks. Then, eager
(no compile), ``plan_checkpoints`` on the decoder and the CNN at two limits
(midway between its modelled peaks with every block recomputed and with
none, and 1.05x the first): predicted against measured (``CheckpointPlan.measure``).

Exits 2 without a CUDA device.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from _models import Decoder  # noqa: E402
from _results import default, write_rows  # noqa: E402

BUDGETS = [0.05, 0.1, 0.3, 0.5, 0.8]


def _decoder():
    torch.manual_seed(0)
    model = Decoder(vocab=8192, d=512, layers=6, heads=8).cuda()
    ids = torch.randint(0, 8192, (8, 512), device="cuda")
    return model, (ids,), (lambda out: out.float().logsumexp(-1).mean())


def _cnn():
    spec = importlib.util.spec_from_file_location("_gpu_cnn", ROOT / "examples" / "sweep_cnn.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    made = mod.make()
    model = made[0].cuda()
    args = tuple(a.cuda() if isinstance(a, torch.Tensor) else a for a in made[1])
    return model, args, (made[2] if len(made) > 2 else None)


def run(name: str, budgets: list[float]) -> list[dict]:
    from remat_knapsack.errors import PeakLimitError
    from remat_knapsack.torch import fit, predict_peaks, sweep

    model, args, loss = _cnn() if name == "cnn" else _decoder()
    regions = [f"layers.{i}" for i in range(6)] if name == "decoder-blocks" else None
    rows: list[dict] = []
    t0 = time.perf_counter()
    preds = predict_peaks(model, args, budgets, loss=loss, backend="inductor", regions=regions)
    t_pred = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = sweep(model, args, budgets=budgets, loss=loss, backend="inductor", repeats=5, progress=False,
                   regions=regions)  # fmt: skip
    t_sweep = time.perf_counter() - t0
    for p, m in zip(preds, report.points):
        row = {"model": name, "kind": "budget", "budget": m.budget, "predicted_peak_bytes": p.peak_bytes,
               "device": torch.cuda.get_device_name()}  # fmt: skip
        if m.error is None:
            row.update(peak_bytes=m.peak_bytes, error_pct=round(100 * (p.peak_bytes - m.peak_bytes) / m.peak_bytes, 1),
                       step_ms=round(m.step_seconds * 1e3, 2))  # fmt: skip
        else:
            row["note"] = m.error[:200]
        rows.append(row)
        print(row, flush=True)
    rows.append({"model": name, "kind": "timing", "seconds": round(t_pred, 1),
                 "note": f"predict_peaks; sweep {t_sweep:.1f} s"})  # fmt: skip
    ok = [m for m in report.points if m.error is None]
    if ok:
        limit = (min(m.peak_bytes for m in ok) + max(m.peak_bytes for m in ok)) // 2
        try:
            r = fit(model, args, limit, loss=loss, backend="inductor", repeats=5, regions=regions)
            rows.append({"model": name, "kind": "fit", "limit_bytes": limit, "peak_bytes": r.peak_bytes,
                         "predicted_peak_bytes": r.predicted_peak_bytes, "compiles": r.compiles,
                         "step_ms": round(r.step_seconds * 1e3, 2),
                         "note": f"peak/limit {r.peak_bytes / limit:.3f}"})  # fmt: skip
        except PeakLimitError as e:
            rows.append({"model": name, "kind": "fit", "limit_bytes": limit, "note": f"PeakLimitError: {e}"})
        print(rows[-1], flush=True)
    return rows


def eager_rows(name: str, model, args, loss) -> list[dict]:
    """plan_checkpoints at two limits: predicted and measured peaks (any device; the model's)."""
    from remat_knapsack.torch import plan_checkpoints

    first = plan_checkpoints(model, args, 1 << 50, loss=loss)
    full, none = first.full_checkpoint_peak_bytes, first.unplanned_peak_bytes
    rows = []
    for label, limit in (("midway", (full + none) // 2), ("1.05 full", int(1.05 * full))):
        plan = plan_checkpoints(model, args, limit, loss=loss)
        measured = plan.measure(args, loss=loss)
        rows.append({"model": name, "kind": f"eager {label}", "limit_bytes": limit, "peak_bytes": measured,
                     "predicted_peak_bytes": plan.predicted_peak_bytes,
                     "error_pct": round(100 * (plan.predicted_peak_bytes - measured) / measured, 1),
                     "seconds": round(plan.planning_seconds, 2),
                     "note": f"peak/limit {measured / limit:.3f}"})  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the decoder alone, budgets 0.05 0.3 0.8")
    ap.add_argument("--out", default=default("gpu"))
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("gpu_check: no CUDA device", file=sys.stderr)
        return 2
    models = ["decoder"] if a.quick else ["decoder", "decoder-blocks", "cnn"]
    budgets = [0.05, 0.3, 0.8] if a.quick else BUDGETS
    rows = [row for name in models for row in run(name, budgets)]
    for name, make in (("decoder", _decoder), ("cnn", _cnn)):
        rows += eager_rows(name, *make())
    print("wrote", write_rows(rows, a.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
