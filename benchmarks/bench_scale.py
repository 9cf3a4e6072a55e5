"""Planning's time against the model's depth: a plain compile, ``predict_peaks`` and ``fit``, side by side.

The model is a ``transformers`` GPT-2 built from a config (hidden 128, 4 heads,
vocabulary 8192, batch 4 x 256 tokens, cross-entropy on the logits outside the
model), compiled with inductor on the CPU, at 2, 4, 8, 16 and 32 layers. For
each depth, each of three jobs runs in a fresh process with inductor's caches
cold (its own ``TORCHINDUCTOR_CACHE_DIR``):

* ``plain``: ``torch.compile`` and one training step (what planning is compared with);
* ``predict_peaks``: at budgets 0.05, 0.4 and 0.9;
* ``fit``: at a limit midway between the predicted peaks at budgets 0.05 and 0.9
  (then the measured peak, the prediction and the number of compiles).

Each row has the job's wall seconds and its ratio to ``plain`` at the same depth,
and its peak memory, its worker processes included (``_memory.PeakMemory``).
With ``--samples N`` each job runs N times, one after the other, in a fresh
process each: the seconds are the median and the ratio is the ratio of medians.

With ``--pair-depths D ...`` each of those depths also gets one process that runs
``fit`` twice at the same limit: with the peak search it uses under inductor
(steered by the liveness pass, at most three plans lowered) and with the search
that one replaced (every plan it visits lowered by inductor). Both plans' recompute cost
(PyTorch's runtime estimate of what the backward runs again), predicted and
measured peaks, and step times, taken
in alternation (``PAIR_STEPS`` pairs after a warm-up): the rows ``guided_plan``
and ``lowered_plan``, ``seconds`` being each search's planning time.

With ``--llama8b`` the rows of
``benchmarks/_llama8b.py`` (a Llama-3-8B-shaped model planned on the meta device)
are added.

    python benchmarks/bench_scale.py                  # about 40 minutes on 2 cores
    python benchmarks/bench_scale.py --samples 2 --pair-depths 8   # the published table
    python benchmarks/bench_scale.py --depths 2 4     # a few minutes
    python benchmarks/bench_scale.py --update-results # rewrite benchmarks/results/scale.csv
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results  # noqa: E402
from _memory import PeakMemory  # noqa: E402

DEPTHS = [2, 4, 8, 16, 32]
BUDGETS = [0.05, 0.4, 0.9]
JOBS = ("plain", "predict_peaks", "fit")
#: Step-time pairs (one step of each plan, alternating) for ``--pair-depths``, after two warm-up steps each.
PAIR_STEPS = 15
HIDDEN, HEADS, VOCAB, BATCH, SEQ = 128, 4, 8192, 4, 256


def _model(layers: int) -> tuple[Any, tuple, Any]:
    """(model, args, loss): GPT-2 with ``layers`` blocks, its input ids, cross-entropy on the logits."""
    import torch
    import torch.nn.functional as F
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=layers, n_embd=HIDDEN, n_head=HEADS, vocab_size=VOCAB, n_positions=SEQ,
                        bos_token_id=0, eos_token_id=0, use_cache=False)  # fmt: skip
    lm = GPT2LMHeadModel(config)

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lm = lm

        def forward(self, ids: Any) -> Any:
            return self.lm(input_ids=ids).logits

    ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=torch.Generator().manual_seed(1))

    def loss(logits: Any) -> Any:
        return F.cross_entropy(logits.flatten(0, 1), ids.flatten())

    return Step(), (ids,), loss


def _job(job: str, layers: int, limit: int | None) -> dict[str, Any]:
    """Run one job in this process: its wall seconds and what it found."""
    import torch

    from remat_knapsack.torch import fit, predict_peaks
    from remat_knapsack.torch.step import profile_peak_bytes

    model, args, loss = _model(layers)
    row: dict[str, Any] = {}
    with PeakMemory() as memory:
        t0 = time.perf_counter()
        if job == "plain":
            compiled = torch.compile(model)
            loss(compiled(*args)).backward()
            row["seconds"] = time.perf_counter() - t0
            model.zero_grad(set_to_none=True)

            def step() -> None:
                loss(compiled(*args)).backward()

            row["measured_peak_bytes"] = int(profile_peak_bytes(step, "cpu"))
        elif job == "predict_peaks":
            found = predict_peaks(model, args, BUDGETS, loss=loss)
            row["seconds"] = time.perf_counter() - t0
            row["predicted"] = {str(p.budget): p.peak_bytes for p in found}
        elif job == "pair":
            row.update(_pair_plans(model, args, loss, limit))
        else:
            report = fit(model, args, limit, loss=loss, repeats=3)
            row["seconds"] = time.perf_counter() - t0
            row.update(compiles=report.compiles, measured_peak_bytes=report.peak_bytes,
                       predicted_peak_bytes=report.predicted_peak_bytes, step_seconds=report.step_seconds)  # fmt: skip
    row["peak_memory_bytes"] = memory.peak_bytes
    return row


@contextlib.contextmanager
def _lowering_every_plan() -> Any:
    """Inside the block, inductor's peak search scores every plan it visits with inductor's generated code
    (``search_plan`` sampling the frontier and bisecting), as it did before ``search_guided`` steered it."""
    from remat_knapsack.torch import search

    guided = search.search_guided

    def lowered(cap, candidates, runtimes, memory, limit, *, compose, max_plans, frontier_points, **_):  # noqa: ANN001
        return search.search_plan(cap, candidates, runtimes, memory, limit, compose=compose, max_plans=max_plans,
                                  frontier_points=frontier_points, bisect=True)  # fmt: skip

    search.search_guided = lowered
    try:
        yield
    finally:
        search.search_guided = guided


def _pair_plans(model: Any, args: tuple, loss: Any, limit: int) -> dict[str, Any]:
    """``fit`` at ``limit`` with each search, then the two plans' steps timed in alternation."""
    import copy
    import statistics

    import torch

    from remat_knapsack.torch import fit, use_solver

    plans: dict[str, dict[str, Any]] = {}
    steps = {}
    for name, search in (("guided_plan", contextlib.nullcontext), ("lowered_plan", _lowering_every_plan)):
        m = copy.deepcopy(model)
        t0 = time.perf_counter()
        with search():
            report = fit(m, args, limit, loss=loss, repeats=1)
        seconds = time.perf_counter() - t0
        torch._dynamo.reset()  # a compile of its own: dynamo would reuse the other copy's code
        with use_solver(report.solver):
            compiled = torch.compile(m)

        def step(compiled: Any = compiled, m: Any = m) -> None:
            loss(compiled(*args)).backward()
            m.zero_grad(set_to_none=True)

        choices = report.solver.choices
        plans[name] = {"seconds": seconds, "compiles": report.compiles,
                       "predicted_peak_bytes": report.predicted_peak_bytes,
                       "measured_peak_bytes": report.peak_bytes,
                       "recompute_cost": sum(c["recompute_cost"] for c in choices),
                       "saved": sorted(sorted(p.saved_names) for p in report.solver.plans.values())}  # fmt: skip
        steps[name] = step
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(2):  # warm-up: the compile with the plan happens in the first
        for step in steps.values():
            step()
    for _ in range(PAIR_STEPS):
        for name, step in steps.items():
            t0 = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - t0)
    for name in plans:
        plans[name]["step_ms"] = statistics.median(times[name]) * 1e3
    same = plans["guided_plan"].pop("saved") == plans["lowered_plan"].pop("saved")
    return {"plans": plans, "same_plan": same}


def _run(job: str, layers: int, limit: int | None = None) -> dict[str, Any]:
    """One job in a fresh process, inductor's caches cold."""
    with tempfile.TemporaryDirectory(prefix="remat-scale-") as cache:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
        spec = json.dumps({"job": job, "layers": layers, "limit": limit})
        proc = subprocess.run([sys.executable, __file__, "--child", spec], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{job} at {layers} layers failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _median_run(job: str, layers: int, samples: int, limit: int | None = None) -> dict[str, Any]:
    """``samples`` runs of one job: the last run's row, with ``seconds`` the median over the runs."""
    import statistics

    runs = [_run(job, layers, limit) for _ in range(samples)]
    row = dict(runs[-1])
    row["seconds"] = statistics.median(r["seconds"] for r in runs)
    row["samples"] = [round(r["seconds"], 2) for r in runs]
    return row


def measure(depths: list[int], samples: int = 1, pair_depths: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    rows = []
    for layers in depths:
        plain = _median_run("plain", layers, samples)
        predicted = _median_run("predict_peaks", layers, samples)
        peaks = predicted.pop("predicted")
        low, high = peaks[str(BUDGETS[0])], peaks[str(BUDGETS[-1])]
        limit = (low + high) // 2
        fitted = _median_run("fit", layers, samples, limit)
        base = {"model": "gpt2", "layers": layers, "backend": "inductor"}
        rows.append({**base, "job": "plain", "seconds": round(plain["seconds"], 2), "ratio_to_plain": 1.0,
                     "samples": " ".join(map(str, plain["samples"])),
                     "measured_peak_bytes": plain["measured_peak_bytes"],
                     "peak_memory_bytes": plain["peak_memory_bytes"]})  # fmt: skip
        rows.append({**base, "job": "predict_peaks", "budgets": " ".join(map(str, BUDGETS)),
                     "seconds": round(predicted["seconds"], 2),
                     "ratio_to_plain": round(predicted["seconds"] / plain["seconds"], 3),
                     "samples": " ".join(map(str, predicted["samples"])),
                     "predicted_peak_bytes": " ".join(str(peaks[str(b)]) for b in BUDGETS),
                     "peak_memory_bytes": predicted["peak_memory_bytes"]})  # fmt: skip
        rows.append({**base, "job": "fit", "limit_bytes": limit, "seconds": round(fitted["seconds"], 2),
                     "ratio_to_plain": round(fitted["seconds"] / plain["seconds"], 3),
                     "samples": " ".join(map(str, fitted["samples"])),
                     "compiles": fitted["compiles"], "predicted_peak_bytes": fitted["predicted_peak_bytes"],
                     "measured_peak_bytes": fitted["measured_peak_bytes"],
                     "step_ms": round(fitted["step_seconds"] * 1e3, 1),
                     "peak_memory_bytes": fitted["peak_memory_bytes"]})  # fmt: skip
        pair = layers in pair_depths
        if pair:
            paired = _run("pair", layers, limit)
            for name, plan in paired["plans"].items():
                rows.append({**base, "job": name, "limit_bytes": limit, "seconds": round(plan["seconds"], 2),
                             "predicted_peak_bytes": plan["predicted_peak_bytes"],
                             "measured_peak_bytes": plan["measured_peak_bytes"],
                             "compiles": plan["compiles"], "recompute_cost": plan["recompute_cost"],
                             "same_plan": paired["same_plan"],
                             "step_ms": round(plan["step_ms"], 1),
                             "peak_memory_bytes": paired["peak_memory_bytes"]})  # fmt: skip
        for row in rows[-(5 if pair else 3):]:
            print(", ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    return rows


def _merged(rows: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    """``rows`` with the rows of the CSV at ``path`` for (model, layers) pairs not among them, ordered by depth."""
    import csv

    if not os.path.exists(path):
        return rows
    fresh = {(r["model"], str(r["layers"])) for r in rows}
    with open(path, newline="", encoding="utf-8") as f:
        kept = [r for r in csv.DictReader(f) if (r["model"], r["layers"]) not in fresh]
    merged = kept + rows
    return sorted(merged, key=lambda r: (r["model"] != "gpt2", int(r["layers"]) if r.get("layers") else 0))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depths", type=int, nargs="+", default=DEPTHS, help="numbers of layers")
    ap.add_argument("--quick", action="store_true", help="depths 2 and 4 only")
    ap.add_argument("--samples", type=int, default=1, help="runs of each job per depth (their median is reported)")
    ap.add_argument("--pair-depths", type=int, nargs="*", default=[],
                    help="depths at which fit's plan is also set against the search that lowers every plan")
    ap.add_argument("--llama8b", action="store_true", help="add the Llama-3-8B-shaped rows (meta device)")
    ap.add_argument("--out", type=Path, default=Path("bench-results"), help="directory of scale.csv")
    ap.add_argument("--update-results", action="store_true", help="also rewrite benchmarks/results/scale.csv")
    ap.add_argument("--merge", action="store_true",
                    help="keep the rows of benchmarks/results/scale.csv for the depths not measured now")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        spec = json.loads(a.child)
        print(json.dumps(_job(spec["job"], spec["layers"], spec["limit"])))
        return 0
    if a.samples < 1:
        ap.error(f"--samples must be at least 1, got {a.samples}")
    rows = measure([2, 4] if a.quick else a.depths, a.samples, tuple(a.pair_depths))
    if a.llama8b:
        import _llama8b

        rows += _llama8b.run_8b(quick=a.quick)
    if a.merge:
        rows = _merged(rows, _results.default("scale"))
    print("wrote", _results.write_rows(rows, a.out / "scale.csv"))
    if a.update_results:
        print("wrote", _results.write_rows(rows, _results.default("scale")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
