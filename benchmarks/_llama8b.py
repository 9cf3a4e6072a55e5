"""Planning a Llama-3-8B-shaped model built on the meta device, at the size it trains: 1 x 8192 tokens, bf16.

Nothing of the model's size is allocated: the model is built under ``with torch.device("meta"):`` and every
planner traces the step on fake tensors. Each case runs in a fresh Python process (``subprocess`` +
``python -c``), so the peak memory reported for it is the case's own: that process's and its workers'
(``_memory.PeakMemory``: the lowering workers of ``predict_peaks`` under inductor included), importing
torch and transformers (about 0.5 GiB) included.

The step: :class:`Step` calls ``LlamaForCausalLM(input_ids=ids, labels=ids)``: the model shifts the labels
and computes the cross entropy itself, on the logits upcast to float32, as Hugging Face's training loop does;
the loss given to the planners is ``out.loss``. The loss is then inside the compiled model (no loss outside).

Cases (:func:`run_8b`):

* ``predict_peaks``: ``predict_peaks(step, (ids,), BUDGETS, loss=..., backend=B, device="cpu")`` for
  ``B`` in ``aot_eager`` and ``inductor``;
* ``plan_checkpoints``: the eager path at a limit midway between its smallest and its largest plan (learnt
  from a first call with a huge limit, whose ``full_peak_bytes`` and smallest peak bound the range);
* ``fakes_plan``: the compiled path's plan for a limit ``L`` without a measuring step,
  ``fit(step, (ids,), L, loss=..., backend=B, measure=False)``: one compile on fakes; its predicted peak;
* ``fsdp_*``: the same model with FSDP2 ``fully_shard`` on each decoder layer and the root, over 8 ranks of
  a fake process group (``FakeStore``, as torchtitan's memory estimator does), planned on the meta device.

``python benchmarks/_llama8b.py [--quick] [--case NAME ...]`` prints the rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import torch
from _memory import PeakMemory

#: Llama 3 8B's shape (Meta's config), without the KV cache.
CONFIG_8B = dict(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                 intermediate_size=14336, vocab_size=128256, rms_norm_eps=1e-5, rope_theta=500000,
                 max_position_embeddings=8192, use_cache=False)  # fmt: skip
#: A small model of the same family, for the tests.
CONFIG_SMALL = dict(num_hidden_layers=2, hidden_size=256, num_attention_heads=4, num_key_value_heads=2,
                    intermediate_size=688, vocab_size=32000, rms_norm_eps=1e-5, rope_theta=500000,
                    max_position_embeddings=2048, use_cache=False)  # fmt: skip
SEQ = 8192
BUDGETS = [0.05, 0.2, 0.4, 0.7, 0.9]
GiB = 1 << 30
#: Seconds each case may run before it is stopped.
CASE_TIMEOUT = 900


class Step(torch.nn.Module):
    """``inner(input_ids=ids, labels=ids).loss``'s output: the model shifts the labels itself."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, ids: torch.Tensor) -> Any:
        return self.inner(input_ids=ids, labels=ids)


def out_loss(out: Any) -> Any:
    return out.loss


def build(config: dict | None = None, batch: int = 1, seq: int = SEQ, dtype: torch.dtype = torch.bfloat16,
          attn: str = "sdpa") -> tuple[Step, tuple[torch.Tensor]]:  # fmt: skip
    """``(Step(LlamaForCausalLM), (ids,))`` on the meta device in ``dtype``: ids int64 of ``batch x seq``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(**(config or CONFIG_8B))
    cfg._attn_implementation = attn
    with torch.device("meta"):
        inner = LlamaForCausalLM(cfg).to(dtype).train()
    ids = torch.empty(batch, seq, dtype=torch.long, device="meta")
    return Step(inner), (ids,)


def param_bytes(model: torch.nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def shard_fsdp(step: Step, world_size: int = 8) -> None:
    """FSDP2 ``fully_shard`` on each decoder layer and the root, rank 0 of a fake ``world_size``-rank group."""
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if not dist.is_initialized():
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)
    for layer in step.inner.model.layers:
        fully_shard(layer)
    fully_shard(step)


def _rss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def case(name: str, config: dict | None = None, batch: int = 1, seq: int = SEQ, backend: str = "aot_eager",
         limit: int | None = None) -> dict:  # fmt: skip
    """Run one case in this process; a dict row (see the module docstring)."""
    row: dict[str, Any] = {"case": name, "backend": backend, "batch": batch, "seq": seq, "budget": None,
                           "limit_bytes": limit, "predicted_peak_bytes": None, "seconds": None, "notes": ""}
    with PeakMemory() as memory:
        _run(name, row, config, batch, seq, backend, limit)
    row["planning_peak_memory_bytes"] = memory.peak_bytes
    return row


def _run(name: str, row: dict, config: dict | None, batch: int, seq: int, backend: str, limit: int | None) -> None:
    """:func:`case`'s work: build, plan, and fill ``row`` in (a failure is written in ``row["notes"]``)."""
    import warnings

    from remat_knapsack.torch import predict_peaks

    step, args = build(config, batch, seq)
    row["param_bytes"] = param_bytes(step)
    row["rss_after_build_bytes"] = _rss()
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if name == "predict_peaks":
                preds = predict_peaks(step, args, BUDGETS, loss=out_loss, backend=backend, device="cpu")
                row["predicted_peak_bytes"] = [int(p.peak_bytes) for p in preds]
                row["budget"] = [float(p.budget) for p in preds]
            elif name == "plan_checkpoints":
                row["backend"] = "eager"
                row.update(_plan_eager(step, args, limit))
            elif name == "fakes_plan":
                row.update(_fakes_plan(step, args, backend, limit))
            elif name == "fsdp_plan_checkpoints":
                row["backend"] = "eager"
                shard_fsdp(step)
                row.update(_plan_eager(step, args, limit))
            elif name == "fsdp_predict_peaks":
                shard_fsdp(step)
                preds = predict_peaks(step, args, BUDGETS, loss=out_loss, backend=backend, device="cpu")
                row["predicted_peak_bytes"] = [int(p.peak_bytes) for p in preds]
                row["budget"] = [float(p.budget) for p in preds]
            else:
                raise ValueError(f"unknown case {name!r}")
        except Exception as exc:  # reported, not raised: a row says what failed and where
            import traceback

            tb = traceback.extract_tb(exc.__traceback__)
            where = "; ".join(f"{os.path.basename(f.filename)}:{f.lineno} {f.name}" for f in tb[-3:])
            first = str(exc).splitlines()[0] if str(exc) else ""
            failed = f"FAILED {type(exc).__name__}: {first} [{where}]"
            row["notes"] = (row["notes"] + " | " if row["notes"] else "") + failed
    row["seconds"] = round(time.perf_counter() - t0, 1)
    warned = sorted({str(w.message).splitlines()[0][:600] for w in caught if issubclass(w.category, RuntimeWarning)})
    if warned:
        row["notes"] = (row["notes"] + " | " if row["notes"] else "") + " | ".join(warned)


def _plan_eager(step: Step, args: tuple, limit: int | None) -> dict:
    """plan_checkpoints at ``limit``; without one, midway between full checkpointing's peak and the unplanned
    peak (learnt from a first call with an unreachable-high limit, which plans nothing)."""
    from remat_knapsack.torch import plan_checkpoints

    out: dict[str, Any] = {}
    if limit is None:
        t0 = time.perf_counter()
        top = plan_checkpoints(step, args, 1 << 50, loss=out_loss, device="cpu")
        out["first_call_seconds"] = round(time.perf_counter() - t0, 1)
        out["full_checkpoint_peak_bytes"] = int(top.full_checkpoint_peak_bytes)
        out["unplanned_peak_bytes"] = int(top.unplanned_peak_bytes)
        limit = (int(top.full_checkpoint_peak_bytes) + int(top.unplanned_peak_bytes)) // 2
    plan = plan_checkpoints(step, args, limit, loss=out_loss, device="cpu")
    out.update(limit_bytes=int(limit), predicted_peak_bytes=int(plan.predicted_peak_bytes),
               unplanned_peak_bytes=int(plan.unplanned_peak_bytes),
               full_checkpoint_peak_bytes=int(plan.full_checkpoint_peak_bytes),
               recompute_seconds=float(plan.recompute_seconds),
               checkpointed_units=sum(1 for u in plan.units if getattr(u, "checkpointed", True)))
    return out


def _fakes_plan(step: Step, args: tuple, backend: str, limit: int | None) -> dict:
    """The compiled path's plan for ``limit``: ``fit(..., measure=False)``, one compile on fakes, nothing run."""
    from remat_knapsack.torch import fit

    report = fit(step, args, int(limit), loss=out_loss, backend=backend, measure=False)
    choices = report.solver.plans.values()
    return {"limit_bytes": int(limit), "predicted_peak_bytes": report.predicted_peak_bytes,
            "graphs": len(choices), "plan": [p.choice["plan"] for p in choices],
            "min_peak_bytes": [int(p.choice["min_peak_bytes"]) for p in choices]}


def run_case(name: str, timeout: float = CASE_TIMEOUT, **kw: Any) -> dict:
    """:func:`case` in a fresh Python process: its row, with that process's peak memory."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = (f"import sys, json; sys.path.insert(0, {here!r}); import _llama8b; "
            f"row = _llama8b.case({name!r}, **json.loads(sys.argv[1])); print('ROW ' + json.dumps(row))")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", code, json.dumps(kw)], capture_output=True, text=True,
                              timeout=timeout)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"case": name, **kw, "notes": f"TIMEOUT after {timeout} s", "seconds": round(time.perf_counter() - t0)}
    for line in proc.stdout.splitlines():
        if line.startswith("ROW "):
            return json.loads(line[4:])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return {"case": name, **kw, "notes": f"process failed (rc {proc.returncode}): {' / '.join(tail)}",
            "seconds": round(time.perf_counter() - t0)}


def run_8b(quick: bool = False) -> list[dict]:
    """The 8B cases, each in its own process, as rows of ``scale.csv`` (:func:`scale_row`); ``quick``: aot_eager
    only, no FSDP."""
    rows = [run_case("predict_peaks", backend="aot_eager")]
    if not quick:
        rows.append(run_case("predict_peaks", backend="inductor"))
    rows.append(run_case("plan_checkpoints"))
    mid = _midway(rows[0])
    rows.append(run_case("fakes_plan", backend="aot_eager", limit=mid))
    if not quick:
        rows.append(run_case("fakes_plan", backend="inductor", limit=mid))
    if not quick:
        rows.append(run_case("fsdp_plan_checkpoints"))
        rows.append(run_case("fsdp_predict_peaks", backend="aot_eager"))
    return [scale_row(r) for r in rows]


def scale_row(row: dict) -> dict:
    """One case's row in ``benchmarks/results/scale.csv``'s columns (lists joined by spaces)."""

    def joined(v: Any) -> Any:
        return " ".join(map(str, v)) if isinstance(v, list) else v

    out = {"model": "llama3-8b-meta", "layers": CONFIG_8B["num_hidden_layers"], "backend": row.get("backend"),
           "job": row.get("case"), "seconds": row.get("seconds"),
           "peak_memory_bytes": row.get("planning_peak_memory_bytes"),
           "budgets": joined(row.get("budget")), "predicted_peak_bytes": joined(row.get("predicted_peak_bytes")),
           "limit_bytes": row.get("limit_bytes")}  # fmt: skip
    for key in ("unplanned_peak_bytes", "full_checkpoint_peak_bytes"):
        if row.get(key) is not None:
            out[key] = row[key]
    out["notes"] = row.get("notes", "")
    return out


def _midway(row: dict) -> int:
    peaks = row.get("predicted_peak_bytes") or []
    if not isinstance(peaks, list) or not peaks:
        return 40 * GiB
    return (min(peaks) + max(peaks)) // 2


def _fmt(row: dict) -> str:
    def gib(v: Any) -> Any:
        if isinstance(v, str) and v:
            return [gib(int(x)) for x in v.split()]
        if isinstance(v, list):
            return [gib(x) for x in v]
        return None if v in (None, "") else round(v / GiB, 2)

    case = row.get("case", row.get("job"))
    rss = row.get("planning_peak_memory_bytes", row.get("peak_memory_bytes"))
    return (f"{case}/{row.get('backend')}: peak GiB {gib(row.get('predicted_peak_bytes'))} "
            f"limit GiB {gib(row.get('limit_bytes'))} budgets {row.get('budget', row.get('budgets'))} "
            f"{row.get('seconds')} s memory {gib(rss)} GiB {row.get('notes', '')}")


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--case", nargs="*", help="run these cases only (in this order), e.g. predict_peaks")
    parser.add_argument("--backend", default="aot_eager")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--small", action="store_true", help="the small config (2 layers, hidden 256), seq 2048")
    ns = parser.parse_args()
    if ns.case:
        kw: dict[str, Any] = {"backend": ns.backend, "batch": ns.batch}
        if ns.small:
            kw.update(config=CONFIG_SMALL, seq=2048)
        rows = [run_case(c, **kw) for c in ns.case]
    else:
        rows = run_8b(ns.quick)
    for r in rows:
        print(_fmt(r))
        print(json.dumps(r))
