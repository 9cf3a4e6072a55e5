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

Last, a step that does not fit (rows ``capped ...``): with the decoder's
parameters and AdamW state allocated, ``torch.cuda.set_per_process_memory_fraction``
caps the process at that state plus a room midway between the smallest
modelled peak (``predict_peaks`` at 0.05, 0.3, 0.8) and the unplanned one
(``predict_peaks`` at 1.0). Under the cap: the unplanned step, compiled with
inductor, should run out of memory (``torch.OutOfMemoryError``: the cap
bites); ``predict_peaks`` should give the same peaks as before the cap;
``fit``, at a limit midway between the smallest modelled peak and the room,
should return a plan whose measured peak is within the limit;
``plan_checkpoints`` (midway between its full-checkpoint peak and the room)
should plan and its plan run (``CheckpointPlan.measure``); and a copy of the
decoder built under ``with torch.device("meta"):`` should get the same
``predict_peaks`` and ``plan_checkpoints`` predictions with
``device="cuda"``. Each row's ``ok`` says whether its check held; the cap is
lifted afterwards.

Exits 2 without a CUDA device.
"""

from __future__ import annotations

import argparse
import gc
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
#: The budgets of the capped section's predictions (its unplanned peak: budget 1.0).
CAPPED_BUDGETS = [0.05, 0.3, 0.8]


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


# ---------------------------------------------------------------------- a step that does not fit


def _attempt(fn):
    """``(fn(), None)``, or ``(None, "Type: message")`` when it raises."""
    try:
        return fn(), None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"[:300]


def _release(model) -> None:
    model.zero_grad(set_to_none=True)
    torch._dynamo.reset()
    gc.collect()
    torch.cuda.empty_cache()


def _allocate_state(model):
    """AdamW over ``model`` with its state allocated (one step on zero gradients); (optimizer, bytes reserved)."""
    opt = torch.optim.AdamW(model.parameters())
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    _release(model)
    return opt, torch.cuda.memory_reserved()


def _set_cap(cap_bytes: int) -> float:
    """Cap this process's CUDA allocator at ``cap_bytes``; the fraction of the device that is."""
    fraction = min(1.0, cap_bytes / torch.cuda.get_device_properties(0).total_memory)
    torch.cuda.set_per_process_memory_fraction(fraction)
    return fraction


def _unplanned_row(model, args, loss, cap: int, unplanned: int) -> dict:
    """One step compiled at PyTorch's default plan (inductor, budget 1) under the cap: it should not fit."""
    _release(model)
    start = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    outcome = "ran"
    try:
        loss(torch.compile(model)(*args)).backward()
        torch.cuda.synchronize()
    except torch.OutOfMemoryError:
        outcome = "out of memory"
    except Exception as exc:  # a compile that ran out of memory may come back wrapped
        from remat_knapsack.torch.step import is_out_of_memory

        outcome = "out of memory" if is_out_of_memory(exc) else f"{type(exc).__name__}: {exc}"[:300]
    peak = torch.cuda.max_memory_allocated() - start
    _release(model)
    return {"model": "decoder", "kind": "capped unplanned", "cap_bytes": cap, "predicted_peak_bytes": unplanned,
            "peak_bytes": peak if outcome == "ran" else "", "ok": outcome == "out of memory",
            "note": f"the unplanned step under the cap: {outcome}"}  # fmt: skip


def _capped_predict_row(model, args, loss, cap: int, before: list[int]) -> tuple[dict, list[int] | None]:
    from remat_knapsack.torch import predict_peaks

    preds, error = _attempt(lambda: predict_peaks(model, args, CAPPED_BUDGETS, loss=loss, backend="inductor"))
    peaks = None if preds is None else [p.peak_bytes for p in preds]
    note = error or f"budgets {CAPPED_BUDGETS}: {peaks}; before the cap {before}"
    return {"model": "decoder", "kind": "capped predict_peaks", "cap_bytes": cap,
            "predicted_peak_bytes": "" if peaks is None else min(peaks), "ok": peaks == before,
            "note": note}, peaks  # fmt: skip


def _capped_fit_row(model, args, loss, cap: int, limit: int) -> dict:
    from remat_knapsack.torch import fit

    r, error = _attempt(lambda: fit(model, args, limit, loss=loss, backend="inductor", repeats=3))
    _release(model)
    row = {"model": "decoder", "kind": "capped fit", "cap_bytes": cap, "limit_bytes": limit, "ok": False}
    if r is None:
        return {**row, "note": error}
    oom = sum(1 for a in r.attempts if a.get("out_of_memory"))
    return {**row, "peak_bytes": r.peak_bytes, "predicted_peak_bytes": r.predicted_peak_bytes,
            "compiles": r.compiles, "step_ms": round(r.step_seconds * 1e3, 2), "ok": r.peak_bytes <= limit,
            "note": f"peak/limit {r.peak_bytes / limit:.3f}; {oom} attempt(s) out of memory"}  # fmt: skip


def _capped_eager_row(model, args, loss, cap: int, room: int) -> tuple[dict, int | None, int | None]:
    """plan_checkpoints midway between its full-checkpoint peak and the room, and its plan run under the cap;
    (row, limit, predicted peak)."""
    from remat_knapsack.torch import plan_checkpoints

    row = {"model": "decoder", "kind": "capped eager", "cap_bytes": cap, "ok": False}
    first, error = _attempt(lambda: plan_checkpoints(model, args, 1 << 50, loss=loss))
    if first is None:
        return {**row, "note": error}, None, None
    full = first.full_checkpoint_peak_bytes
    if full >= room:
        return {**row, "note": f"every unit recomputed peaks at {full}, not below the room {room}"}, None, None
    limit = (full + room) // 2
    plan, error = _attempt(lambda: plan_checkpoints(model, args, limit, loss=loss))
    if plan is None:
        return {**row, "limit_bytes": limit, "note": error}, limit, None
    measured, error = _attempt(lambda: plan.measure(args, loss=loss))
    _release(model)
    row.update(limit_bytes=limit, predicted_peak_bytes=plan.predicted_peak_bytes, peak_bytes=measured or "",
               seconds=round(plan.planning_seconds, 2), ok=measured is not None and measured <= limit)  # fmt: skip
    row["note"] = error or (f"peak/limit {measured / limit:.3f}; unplanned modelled "
                            f"{plan.unplanned_peak_bytes}")  # fmt: skip
    return row, limit, plan.predicted_peak_bytes


def _meta_decoder():
    """The decoder of :func:`_decoder` and its batch, built on the meta device."""
    torch.manual_seed(0)
    with torch.device("meta"):
        model = Decoder(vocab=8192, d=512, layers=6, heads=8)
        ids = torch.empty((8, 512), dtype=torch.long)
    return model, (ids,)


def _meta_rows(loss, cap: int, peaks: list[int] | None, eager_limit: int | None, eager_peak: int | None):
    """The meta copy's predictions with device="cuda", against the CUDA model's."""
    from remat_knapsack.torch import plan_checkpoints, predict_peaks

    model, args = _meta_decoder()
    preds, error = _attempt(lambda: predict_peaks(model, args, CAPPED_BUDGETS, loss=loss, backend="inductor",
                                                  device="cuda"))  # fmt: skip
    meta = None if preds is None else [p.peak_bytes for p in preds]
    rows = [{"model": "decoder", "kind": "capped meta predict_peaks", "cap_bytes": cap,
             "predicted_peak_bytes": "" if meta is None else min(meta), "ok": meta is not None and meta == peaks,
             "note": error or f"meta {meta}; cuda {peaks}"}]  # fmt: skip
    if eager_limit is None:
        return rows
    plan, error = _attempt(lambda: plan_checkpoints(model, args, eager_limit, loss=loss, device="cuda"))
    predicted = None if plan is None else plan.predicted_peak_bytes
    rows.append({"model": "decoder", "kind": "capped meta eager", "cap_bytes": cap, "limit_bytes": eager_limit,
                 "predicted_peak_bytes": predicted or "", "ok": predicted is not None and predicted == eager_peak,
                 "note": error or f"meta {predicted}; cuda {eager_peak}"})  # fmt: skip
    return rows


def capped_rows() -> list[dict]:
    """The decoder's step that does not fit under a capped allocator: the planners plan it anyway."""
    from remat_knapsack.torch import predict_peaks

    model, args, loss = _decoder()
    preds = predict_peaks(model, args, [*CAPPED_BUDGETS, 1.0], loss=loss, backend="inductor")
    before, unplanned = [p.peak_bytes for p in preds[:-1]], preds[-1].peak_bytes
    smallest = min(before)
    if smallest >= unplanned:
        return [{"model": "decoder", "kind": "capped", "ok": False,
                 "note": f"the smallest plan ({smallest}) is not below the unplanned step ({unplanned})"}]  # fmt: skip
    opt, state = _allocate_state(model)
    room = (smallest + unplanned) // 2
    cap = state + room
    fraction = _set_cap(cap)
    print(f"capped: state {state}, room {room}, fraction {fraction:.5f}", flush=True)
    try:
        rows = [_unplanned_row(model, args, loss, cap, unplanned)]
        predict_row, peaks = _capped_predict_row(model, args, loss, cap, before)
        rows += [predict_row, _capped_fit_row(model, args, loss, cap, (smallest + room) // 2)]
        eager_row, eager_limit, eager_peak = _capped_eager_row(model, args, loss, cap, room)
        rows += [eager_row, *_meta_rows(loss, cap, peaks, eager_limit, eager_peak)]
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
    del opt
    for row in rows:
        row["device"] = torch.cuda.get_device_name()
        print(row, flush=True)
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
    rows += capped_rows()
    print("wrote", write_rows(rows, a.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
