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
and the process's peak RSS. With ``--llama8b`` the rows of
``benchmarks/_llama8b.py`` (a Llama-3-8B-shaped model planned on the meta device)
are added.

    python benchmarks/bench_scale.py                  # about 40 minutes on 2 cores
    python benchmarks/bench_scale.py --depths 2 4     # a few minutes
    python benchmarks/bench_scale.py --update-results # rewrite benchmarks/results/scale.csv
"""

from __future__ import annotations

import argparse
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

DEPTHS = [2, 4, 8, 16, 32]
BUDGETS = [0.05, 0.4, 0.9]
JOBS = ("plain", "predict_peaks", "fit")
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
    import resource

    import torch

    from remat_knapsack.torch import fit, predict_peaks
    from remat_knapsack.torch.step import profile_peak_bytes

    model, args, loss = _model(layers)
    row: dict[str, Any] = {}
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
    else:
        report = fit(model, args, limit, loss=loss, repeats=3)
        row["seconds"] = time.perf_counter() - t0
        row.update(compiles=report.compiles, measured_peak_bytes=report.peak_bytes,
                   predicted_peak_bytes=report.predicted_peak_bytes, step_seconds=report.step_seconds)  # fmt: skip
    row["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return row


def _run(job: str, layers: int, limit: int | None = None) -> dict[str, Any]:
    """One job in a fresh process, inductor's caches cold."""
    with tempfile.TemporaryDirectory(prefix="remat-scale-") as cache:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
        spec = json.dumps({"job": job, "layers": layers, "limit": limit})
        proc = subprocess.run([sys.executable, __file__, "--child", spec], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{job} at {layers} layers failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(depths: list[int]) -> list[dict[str, Any]]:
    rows = []
    for layers in depths:
        plain = _run("plain", layers)
        predicted = _run("predict_peaks", layers)
        peaks = predicted.pop("predicted")
        low, high = peaks[str(BUDGETS[0])], peaks[str(BUDGETS[-1])]
        limit = (low + high) // 2
        fitted = _run("fit", layers, limit)
        base = {"model": "gpt2", "layers": layers, "backend": "inductor"}
        rows.append({**base, "job": "plain", "seconds": round(plain["seconds"], 2), "ratio_to_plain": 1.0,
                     "measured_peak_bytes": plain["measured_peak_bytes"],
                     "peak_rss_bytes": plain["peak_rss_bytes"]})  # fmt: skip
        rows.append({**base, "job": "predict_peaks", "budgets": " ".join(map(str, BUDGETS)),
                     "seconds": round(predicted["seconds"], 2),
                     "ratio_to_plain": round(predicted["seconds"] / plain["seconds"], 3),
                     "predicted_peak_bytes": " ".join(str(peaks[str(b)]) for b in BUDGETS),
                     "peak_rss_bytes": predicted["peak_rss_bytes"]})  # fmt: skip
        rows.append({**base, "job": "fit", "limit_bytes": limit, "seconds": round(fitted["seconds"], 2),
                     "ratio_to_plain": round(fitted["seconds"] / plain["seconds"], 3),
                     "compiles": fitted["compiles"], "predicted_peak_bytes": fitted["predicted_peak_bytes"],
                     "measured_peak_bytes": fitted["measured_peak_bytes"],
                     "step_ms": round(fitted["step_seconds"] * 1e3, 1),
                     "peak_rss_bytes": fitted["peak_rss_bytes"]})  # fmt: skip
        for row in rows[-3:]:
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
    rows = measure([2, 4] if a.quick else a.depths)
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
