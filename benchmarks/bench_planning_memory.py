"""Planning's own memory and time, against the memory of training under the plan, per model and planning API.

    python benchmarks/bench_planning_memory.py                   # every model; writes bench-results/planning-memory.csv
    python benchmarks/bench_planning_memory.py --quick           # tiny and decoder only
    python benchmarks/bench_planning_memory.py --models decoder gpt2
    python benchmarks/bench_planning_memory.py --update-results  # also rewrites benchmarks/results/planning-memory.csv

The planners plan on fake tensors, without running the step they plan. This
script measures what planning itself costs a process in memory (peak resident
set size, ``resource.getrusage(RUSAGE_SELF).ru_maxrss``) and time, next to
what training under the plan costs, on the CPU with the ``aot_eager``
backend. The peak RSS is a high-water mark: once a process has touched memory
it counts, freed or not. So every measurement is a fresh process (this script
with the hidden ``--child`` option), started one at a time, and all of a
model's processes do the same work up to the point where they differ:

* ``baseline``: import torch and ``remat_knapsack.torch``, build the model and
  its inputs, read the peak RSS. This is the floor the rows are
  compared with. One baseline per model for the materialised model and one
  for the model built under ``with torch.device("meta"):``. After its
  reading, the materialised baseline process also computes, without being
  measured, what the rows need: ``predict_peaks`` at the budgets 0.05, 0.3,
  0.8 and 1.0, and ``plan_checkpoints`` with no limit. So no measured process
  plans more than once.
* one process per row: the baseline's work, then one planning call, timed
  (``planning_seconds``), then the peak RSS is read (the *plan* reading). The
  calls are ``predict_peaks`` at the budgets 0.05, 0.3, 0.8; ``fit``
  (``repeats=1``) at a limit midway between the smallest and largest of those
  predictions; and ``plan_checkpoints`` at a limit midway between its
  modelled peaks with every unit recomputed and with none. Then two training
  steps (SGD) under the plan, and the peak RSS is read again (the *plan+run*
  reading). Then, after both readings, one more step is profiled
  (``remat_knapsack.torch.step.profile_peak_bytes``, as ``sweep``
  measures a step: above what is allocated when it begins). Each row steps
  as its planner measures: the compiled rows as ``sweep`` and ``fit`` do
  (``out = model(*args); loss(out).backward()``, the output alive through the
  backward), the eager rows as ``CheckpointPlan.measure`` does
  (``loss(model(*args)).backward()``, the output gone before it). The plan reading
  is taken before anything runs under the plan, so training does not touch
  it; and since a high-water mark only rises, a separate process that planned
  and then trained would reach the plan+run reading too. The step
  under ``predict_peaks`` is compiled at the smallest budget (0.05, with the
  ``"auto"`` solver, as ``predict_peaks`` models it); under ``fit`` it is
  compiled with ``use_solver(report.solver)``; under ``plan_checkpoints`` it
  runs eagerly with the plan applied. A meta model is first materialised
  (``to_empty`` on the CPU, random weights, zero inputs of the same shapes), as
  a user would materialise it and load its weights.

Columns (MiB = 2**20 bytes): ``planning_rss_mib`` is the plan reading minus
the baseline's, ``plan_and_run_rss_mib`` the plan+run reading minus the same
baseline, and ``ratio`` the first over the second. The plan+run reading
follows planning, so it is the larger of planning's and training's high-water marks:
a ratio well below 1 says training under the plan needs more memory than
planning it did, and a ratio near 1 says planning set the high-water mark.
``predicted_peak_mib`` is the plan's modelled step peak (``predict_peaks``:
at budget 0.05), ``measured_step_peak_mib`` the profiled one, and
``unplanned_step_peak_mib`` the peak of the step with no plan, which is never
run: ``predict_peaks`` at budget 1.0 for the compiled rows,
``CheckpointPlan.unplanned_peak_bytes`` for the eager ones. ``fit_peak_mib``
is the peak ``fit`` itself measured.

What the numbers include: a planning process loads the machinery planning
needs for the first time in that process (dynamo and AOTAutograd, fake
tensors, the profiler that measures each op's workspace once), and a glibc
process keeps much of what it frees; both count in ``planning_rss_mib``. The
``tiny`` model's rows, whose step is a fraction of a MiB, show that fixed
part. ``fit`` plans on fake tensors and then compiles and measures the plan
for real (that is how it checks a plan fits), so its planning RSS includes
running the planned step. Timings share the CPU's cores with whatever else
runs.

Models: ``tiny`` (one block of the attention stack on 64 tokens: the fixed
cost), ``attention`` (``_models.AttentionStack``: 6 layers of plain
``q @ k.T`` attention on one 1536-token sequence, d = 64; the unplanned step
peaks at about 301 MiB, the smallest plan at about 119 MiB), ``decoder``
(``_models.Decoder``, 4 layers, d = 256, vocabulary 4096, batch 4 x 256, a
logsumexp loss over the vocabulary), ``gpt2`` (transformers'
``GPT2LMHeadModel``, 4 layers, hidden 256, vocabulary 8192, batch 4 x 256,
the same loss outside the model) and ``llama`` (``examples/sweep_llama.py``:
``LlamaForCausalLM``, 4 layers, hidden 256, vocabulary 4096, batch 4 x 256,
its own loss). The last two are built from configs (nothing is downloaded)
and skipped when transformers is missing. ``--quick``: tiny and decoder.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))

MiB = 1 << 20
BACKEND = "aot_eager"
#: The budgets predict_peaks is asked for; the planned step of its rows runs at the first.
BUDGETS = [0.05, 0.3, 0.8]
#: The planned step of the predict_peaks rows: the smallest budget.
RUN_BUDGET = BUDGETS[0]
TRAIN_STEPS = 2
CHILD_TIMEOUT_S = 900
#: What a child prints before its JSON result, on a line of its own.
MARK = "PLANNING-MEMORY-RESULT "
ALL_MODELS = ["tiny", "attention", "decoder", "gpt2", "llama"]
QUICK_MODELS = ["tiny", "decoder"]
#: (api, built on the meta device) of each row, in order.
ROWS = [("predict_peaks", False), ("predict_peaks", True), ("fit", False),
        ("plan_checkpoints", False), ("plan_checkpoints", True)]  # fmt: skip
TABLE = [("model", 9), ("api", 16), ("built_on", 8), ("limit_mib", 9), ("planning_rss_mib", 16),
         ("plan_and_run_rss_mib", 20), ("ratio", 5), ("planning_seconds", 16), ("predicted_peak_mib", 18),
         ("measured_step_peak_mib", 22), ("unplanned_step_peak_mib", 23)]  # fmt: skip


# ---------------------------------------------------------------------- models


@dataclass(frozen=True)
class Model:
    """How to build one benchmark model: its module, its inputs and its loss (None: ``.loss`` or ``.sum()``)."""

    make: Callable[[], Any]
    inputs: Callable[[], tuple]
    loss: Callable[[Any], Any] | None = None
    needs_transformers: bool = False


def _logsumexp(out: Any) -> Any:
    logits = getattr(out, "logits", out)
    return logits.float().logsumexp(-1).mean()


def _attention() -> Any:
    from _models import AttentionStack

    return AttentionStack()


def _tiny() -> Any:
    from _models import AttentionStack

    return AttentionStack(layers=1)


def _decoder() -> Any:
    from _models import Decoder

    return Decoder(vocab=4096, d=256, layers=4)


def _gpt2() -> Any:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=8192, n_positions=256,
                        bos_token_id=0, eos_token_id=0, use_cache=False)  # fmt: skip
    return GPT2LMHeadModel(config)


def _llama() -> Any:
    from sweep_llama import make

    return make()[0]


def _randn(*shape: int) -> Callable[[], tuple]:
    def inputs() -> tuple:
        import torch

        return (torch.randn(*shape),)

    return inputs


def _ids(vocab: int, *shape: int) -> Callable[[], tuple]:
    def inputs() -> tuple:
        import torch

        return (torch.randint(0, vocab, shape),)

    return inputs


def models() -> dict[str, Model]:
    """The benchmark's models by name (building none of them)."""
    return {
        "tiny": Model(_tiny, _randn(1, 64, 64)),
        "attention": Model(_attention, _randn(1, 1536, 64)),
        "decoder": Model(_decoder, _ids(4096, 4, 256), _logsumexp),
        "gpt2": Model(_gpt2, _ids(8192, 4, 256), _logsumexp, needs_transformers=True),
        "llama": Model(_llama, _ids(4096, 4, 256), needs_transformers=True),
    }


def build(name: str, meta: bool) -> tuple[Any, tuple, Callable[[Any], Any] | None]:
    """``(model, args, loss)`` of a model, in training mode; built under ``torch.device("meta")`` when ``meta``."""
    import torch

    spec = models()[name]
    torch.manual_seed(0)
    with torch.device("meta") if meta else contextlib.nullcontext():
        model, args = spec.make(), spec.inputs()
    return model.train(), args, spec.loss


def materialise(model: Any, args: tuple) -> tuple:
    """Give a meta model CPU storage and random weights (in place); CPU inputs of ``args``'s shapes (zeros)."""
    import torch

    model.to_empty(device="cpu")
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
        for b in model.buffers():
            b.zero_()
    return tuple(torch.zeros(a.shape, dtype=a.dtype) if isinstance(a, torch.Tensor) else a for a in args)


def has_transformers() -> bool:
    import importlib.util

    return importlib.util.find_spec("transformers") is not None


# ---------------------------------------------------------------------- one child


def peak_rss_mib() -> float:
    """This process's peak resident set size so far, in MiB (``ru_maxrss`` is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _loss_fn(loss: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    if loss is not None:
        return loss
    return lambda out: out.loss if getattr(out, "loss", None) is not None else out.sum()


def plan(api: str, model: Any, args: tuple, loss: Any, limit: int | None) -> tuple[Any, dict]:
    """Run one planning API: (what the step needs to run under it, the numbers it gives)."""
    from remat_knapsack.torch import fit, plan_checkpoints, predict_peaks

    if api == "predict_peaks":
        preds = predict_peaks(model, args, BUDGETS, loss=loss, backend=BACKEND)
        return None, {"predicted": preds[0].peak_bytes, "predictions": [p.peak_bytes for p in preds]}
    if api == "fit":
        report = fit(model, args, limit, loss=loss, backend=BACKEND, repeats=1)
        return report.solver, {"predicted": report.predicted_peak_bytes, "fit_peak": report.peak_bytes,
                               "compiles": report.compiles}  # fmt: skip
    if api == "plan_checkpoints":
        checkpoints = plan_checkpoints(model, args, limit, loss=loss)
        return checkpoints, {"predicted": checkpoints.predicted_peak_bytes,
                             "unplanned": checkpoints.unplanned_peak_bytes}  # fmt: skip
    raise ValueError(f"unknown api {api!r}")


@contextlib.contextmanager
def planned(api: str, model: Any, chosen: Any) -> Iterator[Any]:
    """The model to step under the plan: compiled with the plan's solver, or eager with the plan applied."""
    import torch

    from remat_knapsack.torch import use_solver

    if api == "plan_checkpoints":
        with chosen:
            yield model
        return
    torch._dynamo.reset()
    try:
        if api == "fit":
            with use_solver(chosen):
                yield torch.compile(model, backend=BACKEND)
        else:
            with use_solver("auto"), torch._functorch.config.patch(activation_memory_budget=RUN_BUDGET):
                yield torch.compile(model, backend=BACKEND)
    finally:
        torch._dynamo.reset()


def train_and_measure(api: str, model: Any, args: tuple, loss: Any, chosen: Any) -> dict:
    """Train ``TRAIN_STEPS`` steps under the plan, read the peak RSS, then profile one step's peak:
    ``{"run_rss_mib", "measured"}``."""
    import torch

    from remat_knapsack.torch.step import profile_peak_bytes

    loss_fn = _loss_fn(loss)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    with planned(api, model, chosen) as stepped:

        def step() -> None:
            if api == "plan_checkpoints":  # CheckpointPlan.measure's step: the output is gone before the backward
                loss_fn(stepped(*args)).backward()
            else:  # sweep's and fit's step: the output lives through the backward
                out = stepped(*args)
                loss_fn(out).backward()

        for _ in range(TRAIN_STEPS):
            opt.zero_grad(set_to_none=True)
            step()
            opt.step()
        rss = peak_rss_mib()
        opt.zero_grad(set_to_none=True)
        measured = profile_peak_bytes(step)
    return {"run_rss_mib": rss, "measured": measured}


def probe(model: Any, args: tuple, loss: Any) -> dict:
    """What the measured children need, computed once per model: the predictions and the eager plan's peaks."""
    from remat_knapsack.torch import plan_checkpoints, predict_peaks

    preds = predict_peaks(model, args, [*BUDGETS, 1.0], loss=loss, backend=BACKEND)
    everything = plan_checkpoints(model, args, 1 << 50, loss=loss)
    return {"predictions": [p.peak_bytes for p in preds[:-1]], "unplanned_compiled": preds[-1].peak_bytes,
            "full_checkpoint": everything.full_checkpoint_peak_bytes,
            "unplanned_eager": everything.unplanned_peak_bytes}  # fmt: skip


def child(spec: dict) -> dict:
    """A baseline or a row's readings, in this (fresh) process: ``spec`` names the model and the api."""
    import torch  # noqa: F401

    import remat_knapsack.torch  # noqa: F401

    model, args, loss = build(spec["model"], spec["meta"])
    if spec["api"] == "baseline":
        out = {"rss_mib": peak_rss_mib()}
        if spec.get("probe"):
            out.update(probe(model, args, loss))
        return out
    start = time.perf_counter()
    chosen, out = plan(spec["api"], model, args, loss, spec.get("limit"))
    out.update(seconds=time.perf_counter() - start, rss_mib=peak_rss_mib())
    try:
        if spec["meta"]:
            args = materialise(model, args)
        out.update(train_and_measure(spec["api"], model, args, loss, chosen))
    except Exception as exc:  # the plan's readings stand; the row says why the run has none
        out["run_error"] = f"{type(exc).__name__}: {exc}"[:500]
    return out


def child_main(text: str) -> int:
    spec = json.loads(text)
    try:
        out = child(spec)
    except Exception as exc:  # reported as the row's note; the parent goes on with the other rows
        out = {"error": f"{type(exc).__name__}: {exc}"[:500]}
    print(MARK + json.dumps(out), flush=True)
    return 0


# ---------------------------------------------------------------------- the parent


def spawn(spec: dict) -> dict:
    """Run one child (a fresh process) and return what it measured, or ``{"error": ...}``."""
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)],
                              capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"error": f"the child ran past {CHILD_TIMEOUT_S} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    out = json.loads(lines[-1][len(MARK):]) if lines else {
        "error": f"the child exited {done.returncode}: {(done.stderr or done.stdout)[-500:]}"}  # fmt: skip
    error = "".join(f"  {out[key]}" for key in ("error", "run_error") if key in out)
    print(f"  {spec['model']} {spec['api']}{' (meta)' if spec['meta'] else ''}: "
          f"{time.perf_counter() - start:.1f} s{error}", flush=True)  # fmt: skip
    return out


def limits(probed: dict) -> dict[str, int | None]:
    """Each api's limit: fit's midway between the smallest and largest prediction, plan_checkpoints' midway
    between its peaks with every unit recomputed and with none."""
    preds = probed["predictions"]
    return {"predict_peaks": None, "fit": (min(preds) + max(preds)) // 2,
            "plan_checkpoints": (probed["full_checkpoint"] + probed["unplanned_eager"]) // 2}  # fmt: skip


def _mib(nbytes: Any) -> Any:
    return "" if nbytes is None else round(nbytes / MiB, 1)


def make_row(name: str, api: str, meta: bool, limit: int | None, floor: dict, probed: dict, got: dict) -> dict:
    """One CSV row from a model's baseline and probe and what the row's process measured."""
    planning = got["rss_mib"] - floor["rss_mib"] if "rss_mib" in got else None
    both = got["run_rss_mib"] - floor["rss_mib"] if "run_rss_mib" in got else None
    unplanned = got.get("unplanned") if api == "plan_checkpoints" else probed.get("unplanned_compiled")
    notes = [f"{what}: {got[key]}" for what, key in (("plan", "error"), ("run", "run_error")) if key in got]
    if "compiles" in got:
        notes.append(f"fit compiled {got['compiles']} time(s)")
    return {
        "model": name, "api": api, "built_on": "meta" if meta else "cpu", "limit_mib": _mib(limit),
        "baseline_rss_mib": round(floor["rss_mib"], 1),
        "planning_rss_mib": "" if planning is None else round(planning, 1),
        "plan_and_run_rss_mib": "" if both is None else round(both, 1),
        "ratio": round(planning / both, 2) if planning is not None and both else "",
        "planning_seconds": round(got["seconds"], 2) if "seconds" in got else "",
        "predicted_peak_mib": _mib(got.get("predicted")),
        "measured_step_peak_mib": _mib(got.get("measured")),
        "unplanned_step_peak_mib": _mib(unplanned),
        "fit_peak_mib": _mib(got.get("fit_peak")),
        "note": "; ".join(notes),
    }  # fmt: skip


def run_model(name: str) -> list[dict]:
    """Every row of one model: its two baselines (and the probe), then one process per row."""
    floors = {meta: spawn({"model": name, "api": "baseline", "meta": meta, "probe": not meta})
              for meta in (False, True)}  # fmt: skip
    probed = floors[False]
    if "error" in probed:
        return [{"model": name, "note": f"baseline: {probed['error']}"}]
    limit_of = limits(probed)
    rows = []
    for api, meta in ROWS:
        if "error" in floors[meta]:
            rows.append({"model": name, "api": api, "built_on": "meta" if meta else "cpu",
                         "note": f"baseline: {floors[meta]['error']}"})  # fmt: skip
            continue
        got = spawn({"model": name, "api": api, "meta": meta, "limit": limit_of[api]})
        rows.append(make_row(name, api, meta, limit_of[api], floors[meta], probed, got))
    return rows


def table(rows: list[dict]) -> str:
    """The rows as a fixed-width text table (the main columns)."""
    lines = ["  ".join(f"{col:>{width}}" for col, width in TABLE)]
    for row in rows:
        lines.append("  ".join(f"{str(row.get(col, '')):>{width}}" for col, width in TABLE))
        if row.get("note"):
            lines.append(f"    note: {row['note']}")
    return "\n".join(lines)


def chosen_models(names: list[str] | None, quick: bool) -> list[str]:
    """The models to run: ``names``, else the quick or full list; those needing transformers dropped without it."""
    wanted = names or (QUICK_MODELS if quick else ALL_MODELS)
    unknown = [n for n in wanted if n not in ALL_MODELS]
    if unknown:
        raise SystemExit(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(ALL_MODELS)}")
    if has_transformers():
        return wanted
    skipped = [n for n in wanted if models()[n].needs_transformers]
    if skipped:
        print(f"transformers is missing: {', '.join(skipped)} skipped (pip install 'remat-knapsack[models]')")
    return [n for n in wanted if n not in skipped]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_MODELS)}")
    ap.add_argument("--models", nargs="+", help=f"some of {', '.join(ALL_MODELS)}")
    ap.add_argument("--out", type=Path, default=Path("bench-results"), help="directory of planning-memory.csv")
    ap.add_argument("--update-results", action="store_true",
                    help="also rewrite benchmarks/results/planning-memory.csv")  # fmt: skip
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child is not None:
        return child_main(a.child)
    from _results import default, write_rows

    start = time.perf_counter()
    rows = []
    for name in chosen_models(a.models, a.quick):
        print(f"{name}:", flush=True)
        rows += run_model(name)
    print(table(rows))
    print(f"{len(rows)} rows in {time.perf_counter() - start:.0f} s")
    paths = [a.out / "planning-memory.csv"] + ([Path(default("planning-memory"))] if a.update_results else [])
    for path in paths:
        print("wrote", write_rows(rows, path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
