"""The model zoo: predicted against measured step peaks on 36 tiny ``transformers`` architectures, 3 precisions.

    pip install 'remat-knapsack[torch,models]'
    python benchmarks/bench_zoo.py --quick --backends aot_eager --precisions fp32   # 6 models, one per family
    python benchmarks/bench_zoo.py                                # every model, precision and backend
    python benchmarks/bench_zoo.py --models gpt2 llama --precisions bf16 --backends inductor
    python benchmarks/bench_zoo.py --update-results               # also rewrites benchmarks/results/zoo.csv

The models are ``benchmarks/_zoo.py``'s: decoders, encoders, encoder-decoders,
vision models, CLIP and Wav2Vec2 built from ``transformers`` configs with tiny
sizes (nothing is downloaded), each with its natural loss, in fp32, in bf16
(weights and float inputs) and in fp32 under the user's own CPU bf16
``torch.autocast`` around the model's call. None of them was used to build the
peak model.

Per model, precision and backend (the ``compiled`` path):
``predict_peaks(model, args, budgets, loss=loss, backend=backend)`` (one
compile) and ``sweep(..., repeats=1)`` (one compile per budget), one row per
budget: the predicted and measured step peaks, ``error_pct`` = 100 *
(predicted - measured) / measured, and ``planning_seconds`` (the
``predict_peaks`` call, over all the budgets). Per model and precision (the
``eager`` path, no backend): ``plan_checkpoints`` with no effective limit gives
the modelled peaks with every unit fully recomputed and with none; the row is
``plan_checkpoints`` at the limit midway between them, its predicted peak and
``CheckpointPlan.measure``'s. ``--fit`` adds a ``fit`` row per compiled cell at
the limit midway between the smallest and largest swept peaks (its modelled
and measured peaks). ``--regions`` adds a ``regions`` path: the compiled rows
again with each of the model's blocks compiled alone (``regions=``).

A cell that raises is recorded in the ``error`` column and the run goes on.
Rows go to ``--out``/zoo.csv (default ``bench-results/``), rewritten after
each model; ``--update-results`` also writes ``benchmarks/results/zoo.csv``.
``--tables`` prints the Markdown summary of a zoo.csv (``docs/zoo.md``'s table).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MiB = 1 << 20
BUDGETS = [0.05, 0.2, 0.4, 0.7, 0.9]
BACKENDS = ["aot_eager", "inductor"]
FIELDS = ["model", "family", "precision", "backend", "path", "budget", "limit_mib", "predicted_mib", "measured_mib",
          "error_pct", "predicted_bytes", "measured_bytes", "planning_seconds", "error"]  # fmt: skip


def _why(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:300] if text else ''}"


def error_pct(predicted: int | None, measured: int | None) -> float | str:
    """100 * (predicted - measured) / measured, 2 decimals ("" when either is missing or measured is 0)."""
    if not predicted or not measured:
        return ""
    return round(100.0 * (predicted - measured) / measured, 2)


def _row(zm: Any, backend: str, path: str, **extra: Any) -> dict:
    row = {"model": zm.name, "family": zm.family, "precision": zm.precision, "backend": backend, "path": path}
    row.update(extra)
    pred, meas = row.get("predicted_bytes"), row.get("measured_bytes")
    row["predicted_mib"] = round(pred / MiB, 4) if pred else ""
    row["measured_mib"] = round(meas / MiB, 4) if meas else ""
    row["error_pct"] = error_pct(pred, meas)
    return {k: row.get(k, "") for k in FIELDS}


def compiled_rows(zm: Any, backend: str, budgets: list[float], *, regions: bool = False, do_fit: bool = False,
                  repeats: int = 1) -> list[dict]:  # fmt: skip
    """One row per budget: ``predict_peaks`` against ``sweep`` (and a ``fit`` row with ``do_fit``)."""
    import torch
    from _zoo import units

    from remat_knapsack.torch import fit, predict_peaks, sweep

    path = "regions" if regions else "compiled"
    reg = units(zm) if regions else None
    if regions and not reg:
        return [_row(zm, backend, path, error="no blocks to compile as regions")]
    torch._dynamo.reset()
    try:
        t0 = time.perf_counter()
        preds = predict_peaks(zm.model, zm.args, budgets, loss=zm.loss, backend=backend, regions=reg)
        seconds = round(time.perf_counter() - t0, 2)
    except Exception as e:  # noqa: BLE001 - recorded in the row
        return [_row(zm, backend, path, budget=b, error=f"predict_peaks: {_why(e)}") for b in budgets]
    torch._dynamo.reset()
    try:
        report = sweep(zm.model, zm.args, budgets=budgets, loss=zm.loss, backend=backend, repeats=repeats,
                       progress=False, regions=reg)  # fmt: skip
        points = list(report.points)
    except Exception as e:  # noqa: BLE001
        points = [None] * len(budgets)
        sweep_error = f"sweep: {_why(e)}"
    rows = []
    for p, m in zip(preds, points):
        if m is None:
            rows.append(_row(zm, backend, path, budget=p.budget, predicted_bytes=p.peak_bytes,
                             planning_seconds=seconds, error=sweep_error))  # fmt: skip
        else:
            rows.append(_row(zm, backend, path, budget=p.budget, predicted_bytes=p.peak_bytes,
                             measured_bytes=m.peak_bytes if m.ok else None, planning_seconds=seconds,
                             error=("" if m.ok else f"sweep: {m.error}"[:300])))  # fmt: skip
    if do_fit:
        swept = [m.peak_bytes for m in points if m is not None and m.ok]
        if swept:
            limit = (min(swept) + max(swept)) // 2
            torch._dynamo.reset()
            try:
                t0 = time.perf_counter()
                r = fit(zm.model, zm.args, limit, loss=zm.loss, backend=backend, repeats=repeats, regions=reg)
                rows.append(_row(zm, backend, "fit" if not regions else "fit-regions", limit_mib=round(limit / MiB, 4),
                                 predicted_bytes=r.predicted_peak_bytes, measured_bytes=r.peak_bytes,
                                 planning_seconds=round(time.perf_counter() - t0, 2),
                                 error="" if r.peak_bytes <= limit else
                                 f"measured/limit {r.peak_bytes / limit:.3f}"))  # fmt: skip
            except Exception as e:  # noqa: BLE001
                rows.append(_row(zm, backend, "fit" if not regions else "fit-regions", limit_mib=round(limit / MiB, 4),
                                 error=f"fit: {_why(e)}"))  # fmt: skip
    torch._dynamo.reset()
    return rows


def eager_row(zm: Any) -> dict:
    """``plan_checkpoints`` midway between its fully-recomputed and unplanned modelled peaks, and its measurement."""
    from _zoo import units

    from remat_knapsack.torch import plan_checkpoints

    try:
        top = plan_checkpoints(zm.model, zm.args, 1 << 50, loss=zm.loss, units=units(zm))
        limit = (top.full_checkpoint_peak_bytes + top.unplanned_peak_bytes) // 2
        t0 = time.perf_counter()
        plan = plan_checkpoints(zm.model, zm.args, limit, loss=zm.loss, units=units(zm))
        seconds = round(time.perf_counter() - t0, 2)
        measured = plan.measure(zm.args, loss=zm.loss)
    except Exception as e:  # noqa: BLE001
        return _row(zm, "", "eager", error=f"plan_checkpoints: {_why(e)}")
    return _row(zm, "", "eager", limit_mib=round(limit / MiB, 4), predicted_bytes=plan.predicted_peak_bytes,
                measured_bytes=measured, planning_seconds=seconds)  # fmt: skip


def run_model(name: str, precisions: list[str], backends: list[str], budgets: list[float], *, eager: bool = True,
              regions: bool = False, do_fit: bool = False) -> list[dict]:  # fmt: skip
    """Every row of one model: per precision, the eager row, then per backend the compiled (and regions) rows."""
    from _zoo import make

    rows: list[dict] = []
    for precision in precisions:
        try:
            zm = make(name, precision)
        except Exception as e:  # noqa: BLE001
            rows.append({**{k: "" for k in FIELDS}, "model": name, "precision": precision, "path": "build",
                         "error": f"build: {_why(e)}"})  # fmt: skip
            continue
        if eager:
            t0 = time.perf_counter()
            rows.append(eager_row(zm))
            _say(rows[-1], time.perf_counter() - t0)
        for backend in backends:
            for reg in [False, True] if regions else [False]:
                t0 = time.perf_counter()
                got = compiled_rows(zm, backend, budgets, regions=reg, do_fit=do_fit)
                for r in got:
                    _say(r, None)
                print(f"  ({time.perf_counter() - t0:.1f} s)", flush=True)
                rows += got
    return rows


def _say(row: dict, seconds: float | None) -> None:
    cell = f"{row['model']} {row['precision']} {row['backend'] or '-'} {row['path']} {row['budget']}"
    what = (
        row["error"]
        if row["error"] and not row["error_pct"]
        else (f"predicted {row['predicted_mib']} MiB, measured {row['measured_mib']} MiB, {row['error_pct']}%")
    )
    print(f"{cell}: {what}" + (f" ({seconds:.1f} s)" if seconds is not None else ""), flush=True)


def tables(path: Path) -> str:
    """The Markdown summary of a zoo.csv: per model, the worst absolute error over budgets per precision and
    backend (and per path: ``regions``, ``fit``, ``fit-regions``), and the eager row's error."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    models: list[tuple[str, str]] = []
    for r in rows:
        if (r["model"], r["family"]) not in models and r["family"]:
            models.append((r["model"], r["family"]))
    def column(r: dict) -> str:  # "aot_eager" (compiled), "eager", "aot_eager regions", "aot_eager fit", ...
        return {"compiled": r["backend"], "eager": "eager"}.get(r["path"], f"{r['backend']} {r['path']}")

    cols = []
    for r in rows:
        if r["path"] != "build":
            key = (r["precision"], column(r))
            if key not in cols:
                cols.append(key)
    from _zoo import ZOO

    zoo_order = {name: i for i, name in enumerate(ZOO)}
    models.sort(key=lambda m: zoo_order.get(m[0], len(zoo_order)))
    order = {"fp32": 0, "bf16": 1, "autocast": 2}
    cols.sort(key=lambda c: (c[1] == "eager", c[1], order.get(c[0], 9)))

    def cell(model: str, precision: str, col: str) -> str:
        sel = [r for r in rows if r["model"] == model and r["precision"] == precision and r["path"] != "build"
               and column(r) == col]  # fmt: skip
        if not sel:
            return ""
        errs = [float(r["error_pct"]) for r in sel if r["error_pct"] != ""]
        failed = [r for r in sel if r["error_pct"] == ""]
        if not errs:
            return "error"
        worst = max(errs, key=abs)
        return ("0.0" if abs(worst) < 0.05 else f"{worst:+.1f}") + (f" ({len(failed)} failed)" if failed else "")

    head = "| model | family | " + " | ".join(f"{b} {p}" for p, b in cols) + " |"
    out = [head, "|" + "---|" * (2 + len(cols))]
    for model, family in models:
        out.append(f"| {model} | {family} | " + " | ".join(cell(model, p, b) for p, b in cols) + " |")
    return "\n".join(out)


def kept_rows(path: Path, models: list[str], precisions: list[str], backends: list[str], eager: bool) -> list[dict]:
    """The rows of an existing zoo.csv that a run of these cells does not redo (``--merge``)."""
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))

    def redone(r: dict) -> bool:
        if r["model"] not in models or r["precision"] not in precisions:
            return False
        return r["path"] == "build" or (r["path"] == "eager" and eager) or r["backend"] in backends

    return [r for r in rows if not redone(r)]


def main(argv: list[str] | None = None) -> int:
    from _zoo import PRECISIONS, QUICK, ZOO

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", choices=list(ZOO), metavar="MODEL", help=f"some of {', '.join(ZOO)}")
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)} (one per family)")
    ap.add_argument("--precisions", nargs="+", choices=PRECISIONS, default=list(PRECISIONS))
    ap.add_argument("--backends", nargs="+", default=BACKENDS)
    ap.add_argument("--budgets", type=float, nargs="+", default=BUDGETS)
    ap.add_argument("--no-eager", action="store_true", help="skip the plan_checkpoints rows")
    ap.add_argument("--no-compiled", action="store_true", help="only the plan_checkpoints rows (no backend)")
    ap.add_argument("--fit", action="store_true", help="add a fit row per compiled cell")
    ap.add_argument("--regions", action="store_true", help="also the compiled rows with regions= (the blocks)")
    ap.add_argument("--out", type=Path, default=Path("bench-results"), help="directory of zoo.csv")
    ap.add_argument("--update-results", action="store_true", help="also rewrite benchmarks/results/zoo.csv")
    ap.add_argument("--merge", action="store_true",
                    help="keep the rows already in each output file for the cells this run does not redo")  # fmt: skip
    ap.add_argument("--tables", type=Path, metavar="CSV", help="print the Markdown summary of a zoo.csv and stop")
    a = ap.parse_args(argv)
    if a.tables:
        print(tables(a.tables))
        return 0
    from _results import default, write_rows

    names = a.models or (QUICK if a.quick else list(ZOO))
    if a.no_compiled:
        a.backends = []
    if "inductor" in a.backends:
        from torch._inductor.cpu_vec_isa import pick_vec_isa

        pick_vec_isa()  # compiles probe programs once per process
    paths = [a.out / "zoo.csv"] + ([Path(default("zoo"))] if a.update_results else [])
    kept = {path: kept_rows(path, names, a.precisions, a.backends, not a.no_eager) if a.merge else []
            for path in paths}  # fmt: skip
    start = time.perf_counter()
    rows: list[dict] = []
    for name in names:
        t0 = time.perf_counter()
        print(f"{name}:", flush=True)
        rows += run_model(name, a.precisions, a.backends, a.budgets, eager=not a.no_eager, regions=a.regions,
                          do_fit=a.fit)  # fmt: skip
        print(f"{name}: {time.perf_counter() - t0:.0f} s", flush=True)
        for path in paths:
            write_rows(kept[path] + rows, path)
    print(f"{len(rows)} rows in {time.perf_counter() - start:.0f} s")
    for path in paths:
        print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
