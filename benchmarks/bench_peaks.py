"""Peak model and ``fit`` against the budget sweep: predicted vs measured peaks, and fit vs the sweep.

    pip install 'remat-knapsack[torch,models]'
    python benchmarks/bench_peaks.py                       # every model, aot_eager and inductor
    python benchmarks/bench_peaks.py --models mixer --backends aot_eager

For each model: ``sweep`` over the budgets (one compile each) and
``predict_peaks`` over the same budgets (one compile), then ``fit`` at two
limits between the smallest and largest swept peak, at the smallest swept
peak itself (a limit a swept budget meets: never refused), at half the smallest
swept peak (unreachable: its PeakLimitError names the smallest modelled peak),
and between that smallest modelled peak and the smallest swept one when the
model reaches below the sweep. Rows go to benchmarks/results/peaks.csv (rewritten; with
``--models`` or ``--backends`` the other rows already there are kept).

Models: ``llama`` (examples/sweep_llama.py, needs transformers), ``cnn``
(examples/sweep_cnn.py), and three written here that the peak model was never
tuned on: ``mixer`` (an MLP-mixer on 8 x 8 patches), ``convattn`` (a conv stem
and two attention blocks) and ``gpt2`` (transformers' GPT2LMHeadModel, 4
layers, hidden 256, vocabulary 8192, batch 4 x 256, with the loss over the
vocabulary computed outside the compiled model; needs transformers), and
``blocks`` (a 4-layer decoder, d = 256, compiled block by block with
``regions=``, the embeddings, head and cross-entropy eager; fit's step is
compared with the sweep's unpaired there), ``unet`` (two down and two up
levels with skip connections, GroupNorm and bilinear upsampling, 8 images of
64 x 64, an MSE loss) and ``vit`` (a convolutional patch embedding and three
of torch's ``TransformerEncoderLayer``, 16 images of 32 x 32).
``fit`` runs under both backends (``--no-fit-inductor``: aot_eager only).

inductor's caches start cold for each model and backend (a fresh
``TORCHINDUCTOR_CACHE_DIR``), as on a user's first run, so the sweep's
compiles build every kernel; ``--warm-cache`` keeps the usual cache
directory instead. The CPU's vector-ISA probe (a one-time compile per
process) runs before anything is timed.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from _models import Layer  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "peaks.csv"
BUDGETS = [0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1.0]
FIELDS = ["model", "backend", "kind", "budget", "limit_bytes", "peak_bytes", "predicted_peak_bytes",
          "error_pct", "saved_bytes", "predicted_saved_bytes", "step_ms", "compiles", "seconds", "note"]  # fmt: skip


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


class MixerBlock(torch.nn.Module):
    def __init__(self, tokens: int, dim: int) -> None:
        super().__init__()
        self.n1 = torch.nn.LayerNorm(dim)
        self.tok = torch.nn.Sequential(torch.nn.Linear(tokens, 2 * tokens), torch.nn.GELU(),
                                       torch.nn.Linear(2 * tokens, tokens))  # fmt: skip
        self.n2 = torch.nn.LayerNorm(dim)
        self.ch = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.tok(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.ch(self.n2(x))


class Mixer(torch.nn.Module):
    def __init__(self, blocks: int = 4, dim: int = 128, patch: int = 8, size: int = 64, classes: int = 10) -> None:
        super().__init__()
        self.patch = patch
        tokens = (size // patch) ** 2
        self.embed = torch.nn.Linear(3 * patch * patch, dim)
        self.blocks = torch.nn.ModuleList([MixerBlock(tokens, dim) for _ in range(blocks)])
        self.head = torch.nn.Linear(dim, classes)

    def forward(self, x):
        b, p = x.shape[0], self.patch
        x = x.unfold(2, p, p).unfold(3, p, p).permute(0, 2, 3, 1, 4, 5).reshape(b, -1, 3 * p * p)
        x = self.embed(x)
        for blk in self.blocks:
            x = blk(x)
        return self.head(x.mean(1))


def make_mixer():
    torch.manual_seed(0)
    x = torch.randn(32, 3, 64, 64)
    labels = torch.randint(0, 10, (32,))
    return Mixer(), (x,), lambda out: F.cross_entropy(out, labels)


class ConvAttn(torch.nn.Module):
    def __init__(self, dim: int = 96, heads: int = 4, blocks: int = 2, classes: int = 10) -> None:
        super().__init__()
        self.stem = torch.nn.Sequential(
            torch.nn.Conv2d(3, dim // 2, 3, padding=1), torch.nn.BatchNorm2d(dim // 2), torch.nn.SiLU(),
            torch.nn.Conv2d(dim // 2, dim, 3, stride=2, padding=1), torch.nn.BatchNorm2d(dim), torch.nn.SiLU(),
        )  # fmt: skip
        self.attn = torch.nn.ModuleList([torch.nn.MultiheadAttention(dim, heads, batch_first=True)
                                         for _ in range(blocks)])  # fmt: skip
        self.norms = torch.nn.ModuleList([torch.nn.LayerNorm(dim) for _ in range(2 * blocks)])
        self.mlps = torch.nn.ModuleList([torch.nn.Sequential(torch.nn.Linear(dim, 2 * dim), torch.nn.GELU(),
                                                             torch.nn.Linear(2 * dim, dim))
                                         for _ in range(blocks)])  # fmt: skip
        self.head = torch.nn.Linear(dim, classes)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        for i, (attn, mlp) in enumerate(zip(self.attn, self.mlps)):
            h = self.norms[2 * i](x)
            x = x + attn(h, h, h, need_weights=False)[0]
            x = x + mlp(self.norms[2 * i + 1](x))
        return self.head(x.mean(1))


def make_convattn():
    torch.manual_seed(0)
    x = torch.randn(16, 3, 32, 32)
    labels = torch.randint(0, 10, (16,))
    return ConvAttn(), (x,), lambda out: F.cross_entropy(out, labels)


def make_gpt2():
    """transformers' GPT2LMHeadModel with the loss outside the compiled model, as most training loops have it."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=8192, n_positions=256,
                        bos_token_id=0, eos_token_id=0, use_cache=False)  # fmt: skip
    ids = torch.randint(0, 8192, (4, 256))
    return GPT2LMHeadModel(config).train(), (ids,), lambda out: out.logits.float().logsumexp(-1).mean()


class UNet(torch.nn.Module):
    """Two down and two up levels with skip connections, GroupNorm, bilinear upsampling."""

    def __init__(self, c: int = 32) -> None:
        super().__init__()

        def conv(i: int, o: int) -> torch.nn.Module:
            return torch.nn.Sequential(torch.nn.Conv2d(i, o, 3, padding=1), torch.nn.GroupNorm(8, o), torch.nn.GELU())

        self.down = torch.nn.ModuleList([conv(3, c), conv(c, 2 * c), conv(2 * c, 4 * c)])
        self.up = torch.nn.ModuleList([conv(6 * c, 2 * c), conv(3 * c, c)])
        self.out = torch.nn.Conv2d(c, 3, 1)

    def forward(self, x):
        skips = []
        for i, block in enumerate(self.down):
            x = block(x if i == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        skips.pop()
        for block in self.up:
            x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
            x = block(torch.cat([x, skips.pop()], dim=1))
        return self.out(x)


def make_unet():
    torch.manual_seed(0)
    x, target = torch.randn(8, 3, 64, 64), torch.randn(8, 3, 64, 64)
    return UNet(), (x,), lambda out: F.mse_loss(out, target)


class ViT(torch.nn.Module):
    """Patch embedding by convolution, then torch's own TransformerEncoderLayer (pre-norm, no dropout)."""

    def __init__(self, d: int = 128, layers: int = 3, heads: int = 4, patch: int = 4, classes: int = 10) -> None:
        super().__init__()
        self.embed = torch.nn.Conv2d(3, d, patch, stride=patch)
        layer = torch.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, classes)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x).flatten(2).transpose(1, 2)).mean(1))


def make_vit():
    torch.manual_seed(0)
    x, labels = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
    return ViT(), (x,), lambda out: F.cross_entropy(out, labels)


class BlockDecoder(torch.nn.Module):
    def __init__(self, vocab: int = 4096, d: int = 256, layers: int = 4, heads: int = 4, t: int = 256) -> None:
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(vocab, d), torch.nn.Embedding(t, d)
        self.layers = torch.nn.ModuleList([Layer(d, heads) for _ in range(layers)])
        self.norm, self.head = torch.nn.LayerNorm(d), torch.nn.Linear(d, vocab)

    def forward(self, ids):
        h = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        for layer in self.layers:
            h = layer(h)
        return self.head(self.norm(h))


def make_blocks():
    """A decoder compiled block by block (torchtitan's way): each layer a region, the rest and the loss eager."""
    torch.manual_seed(0)
    ids, target = torch.randint(0, 4096, (4, 256)), torch.randint(0, 4096, (4, 256))
    model = BlockDecoder()

    def loss(logits):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))

    return model, (ids,), loss, [f"layers.{i}" for i in range(4)]


def make(name: str):
    """(model, args, loss or None, regions or None) of a model by name."""
    if name == "blocks":
        return make_blocks()
    if name == "gpt2":
        made = make_gpt2()
    elif name == "llama":
        made = _example("sweep_llama").make()
    elif name == "cnn":
        made = _example("sweep_cnn").make()
    elif name == "mixer":
        made = make_mixer()
    elif name == "convattn":
        made = make_convattn()
    elif name == "unet":
        made = make_unet()
    elif name == "vit":
        made = make_vit()
    else:
        raise SystemExit(f"unknown model {name!r}")
    return made[0], made[1], (made[2] if len(made) == 3 else None), None


def _pct(pred, meas):
    return round(100.0 * (pred - meas) / meas, 1) if meas else ""


def run(name: str, backend: str, repeats: int, do_fit: bool, budgets: list[float] = BUDGETS,
        cache_dir: str | None = None) -> list[dict]:  # fmt: skip
    from remat_knapsack.errors import PeakLimitError
    from remat_knapsack.torch import fit, predict_peaks, sweep

    if cache_dir is not None:  # inductor reads the directory at each use: nothing compiled before is found
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    model, args, loss, regions = make(name)
    rows: list[dict] = []
    t0 = time.perf_counter()
    preds = predict_peaks(model, args, budgets, loss=loss, backend=backend, regions=regions)
    t_pred = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = sweep(model, args, budgets=budgets, loss=loss, backend=backend, repeats=repeats, progress=False,
                   regions=regions)  # fmt: skip
    t_sweep = time.perf_counter() - t0
    print(f"{name} {backend}: predict_peaks {t_pred:.1f} s, sweep {t_sweep:.1f} s", flush=True)
    ok = []
    for p, m in zip(preds, report.points):
        row = {"model": name, "backend": backend, "kind": "budget", "budget": m.budget,
               "predicted_peak_bytes": p.peak_bytes, "predicted_saved_bytes": p.saved_bytes}  # fmt: skip
        if m.error is None:
            ok.append(m)
            row.update(peak_bytes=m.peak_bytes, saved_bytes=m.saved_bytes, step_ms=round(m.step_seconds * 1e3, 2),
                       error_pct=_pct(p.peak_bytes, m.peak_bytes), compiles=1)  # fmt: skip
        else:
            row["note"] = m.error[:200]
        rows.append(row)
        print(row, flush=True)
    rows.append({"model": name, "backend": backend, "kind": "timing", "seconds": round(t_pred, 1),
                 "note": f"predict_peaks over {len(budgets)} budgets; sweep took {t_sweep:.1f} s"})  # fmt: skip
    if not do_fit or not ok:
        return rows
    lo = min(m.peak_bytes for m in ok)
    hi = max(m.peak_bytes for m in ok)
    limits = [("fit-mid", int(lo + 0.5 * (hi - lo))), ("fit-low", int(lo + 0.15 * (hi - lo))),
              ("fit-smallest-swept", lo), ("fit-unreachable", int(0.5 * lo)),
              ("fit-below-swept", None)]  # fmt: skip
    smallest_modelled = None
    for kind, limit in limits:
        if limit is None:  # between the smallest modelled peak (from the unreachable limit) and the smallest swept
            if smallest_modelled is None or smallest_modelled >= lo:
                rows.append({"model": name, "backend": backend, "kind": kind,
                             "note": f"the smallest modelled peak {smallest_modelled} is not below the smallest "
                                     f"swept peak {lo}"})  # fmt: skip
                continue
            limit = (smallest_modelled + lo) // 2
        fits = [m for m in ok if m.peak_bytes <= limit]
        best = min(fits, key=lambda m: m.step_seconds) if fits else None
        note = (f"fastest swept within: budget {best.budget:g}, peak {best.peak_bytes}, "
                f"step {best.step_seconds * 1e3:.2f} ms") if best else "no swept budget fits"  # fmt: skip
        t0 = time.perf_counter()
        try:
            r = fit(model, args, limit, loss=loss, backend=backend, repeats=repeats, regions=regions)
        except PeakLimitError as e:
            if not e.measured:
                smallest_modelled = e.smallest
            rows.append({"model": name, "backend": backend, "kind": kind, "limit_bytes": limit,
                         "seconds": round(time.perf_counter() - t0, 1),
                         "note": f"PeakLimitError: smallest {'measured' if e.measured else 'modelled'} "
                                 f"{e.smallest}; {note}"})  # fmt: skip
            print(rows[-1], flush=True)
            continue
        paired = ""
        if best is not None and regions is None:
            fa, fb = paired_times(model, args, loss, backend, r.solver, best.budget, repeats + 2)
            paired = f"; paired timing (alternating, median of {repeats + 2}): fit {fa * 1e3:.2f} ms, " \
                     f"swept {fb * 1e3:.2f} ms, ratio {fa / fb:.2f}"
        rows.append({"model": name, "backend": backend, "kind": kind, "limit_bytes": limit,
                     "peak_bytes": r.peak_bytes, "predicted_peak_bytes": r.predicted_peak_bytes,
                     "error_pct": _pct(r.predicted_peak_bytes, r.peak_bytes) if r.predicted_peak_bytes else "",
                     "saved_bytes": r.saved_bytes, "step_ms": round(r.step_seconds * 1e3, 2),
                     "compiles": r.compiles, "seconds": round(time.perf_counter() - t0, 1),
                     "note": f"{note}; peak/limit {r.peak_bytes / limit:.3f}{paired}"})  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def _own_code(model, tag: str):
    """``model`` behind a forward with its own code object, so dynamo caches its compile apart."""
    ns: dict = {}
    exec(f"def forward(self, *args):\n    return self.inner(*args)  # {tag}\n", ns)
    wrapper = type(f"Plan{tag}", (torch.nn.Module,), {"forward": ns["forward"]})()
    wrapper.inner = model
    return wrapper


def paired_times(model, args, loss, backend, solver, budget, rounds):
    """Median step time of fit's plan and of a swept budget, timed alternately (one step each per round)."""
    import statistics

    import torch._functorch.config as fconfig

    from remat_knapsack.torch import KnapsackSolver, use_solver
    from remat_knapsack.torch.step import default_loss as _default_loss

    loss_fn = loss or _default_loss
    torch._dynamo.reset()
    a = torch.compile(_own_code(model, "fit"), backend=backend)
    b = torch.compile(_own_code(model, "swept"), backend=backend)
    with fconfig.patch(enable_autograd_cache=False):
        with use_solver(solver):  # fit's own solver: its plan, with what fit measured around the graph
            loss_fn(a(*args)).backward()
        with fconfig.patch(activation_memory_budget=budget, activation_memory_budget_solver=KnapsackSolver("auto")):
            loss_fn(b(*args)).backward()
    times: dict = {"a": [], "b": []}
    for _ in range(rounds):
        for key, fn in (("a", a), ("b", b)):
            model.zero_grad(set_to_none=True)
            t0 = time.perf_counter()
            loss_fn(fn(*args)).backward()
            times[key].append(time.perf_counter() - t0)
    model.zero_grad(set_to_none=True)
    torch._dynamo.reset()
    return statistics.median(times["a"]), statistics.median(times["b"])


def interval_check(name: str, pairs: int = 60) -> dict:
    """Does the real peak model have the interval (consecutive-ones) structure the LP argument needs?

    An interval model fixes one column per candidate (its saved interval) and
    makes the peak at each program point linear in the choices, so the peak
    change of recomputing a pair is the sum of the single changes at every
    point, and recomputing candidate i removes exactly i from the saved set.
    On the captured graph this counts how often each fails.
    """
    import random

    from remat_knapsack.torch import PEAK_BUDGET, KnapsackSolver
    from remat_knapsack.torch.capture import compile_and_capture as _compile_and_capture
    from remat_knapsack.torch.peaks import step_peak
    from remat_knapsack.torch.step import check_model as _check_model

    model, args, loss, _ = make(name)
    _check_model(model, args, loss)
    cap = _compile_and_capture(model, args, "aot_eager")[0]
    seen: dict = {}

    class Grab(KnapsackSolver):
        def __call__(self, memory, joint_graph, max_memory, node_info, nodes):
            seen["nodes"] = list(nodes)
            return super().__call__(memory, joint_graph, max_memory, node_info, nodes)

    from remat_knapsack.torch import _plugin

    with _plugin._wrapper_held():  # the runtimes PyTorch computes reach the solver
        cap.saved_for_budget(PEAK_BUDGET, solver=Grab())
    nodes = seen["nodes"]
    n = len(nodes)

    def saved(rec):
        return {x.name for x in cap.saved_for_plan(nodes, rec)}

    def peak(rec):
        return step_peak([cap.peak(cap.saved_for_plan(nodes, rec))])

    base_saved, base_peak = saved(()), peak(())
    single = {i: peak((i,)) for i in range(n)}
    not_removal = sum(1 for i in range(n) if saved((i,)) != base_saved - {nodes[i].name})
    rng = random.Random(0)
    all_pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    picks = rng.sample(all_pairs, min(pairs, len(all_pairs)))
    non_additive = sum(1 for i, j in picks
                       if peak((i, j)) - base_peak != (single[i] - base_peak) + (single[j] - base_peak))  # fmt: skip
    lp = _interval_lp(cap, nodes, base_peak, single)
    return {"model": name, "backend": "aot_eager", "kind": "interval-check",
            "note": f"{n} candidates; recomputing one candidate changes the saved set by more than that candidate "
                    f"in {not_removal}/{n}; pair peak change is not the sum of the single changes in "
                    f"{non_additive}/{len(picks)} sampled pairs; {lp}"}  # fmt: skip


def _interval_lp(cap, nodes, base_peak, single) -> str:
    """LP relaxation of the interval model built from the save-everything plan: is its optimum integral?

    Rows: the program points (allocation events) of that plan's step; column i:
    candidate i's bytes over its live interval (consecutive ones). Recomputing i
    (x_i = 0) removes them. Seven limits between the interval model's floor
    (every candidate recomputed) and its top. Maximise PyTorch's runtime estimates kept.
    """
    import numpy as np
    from scipy.optimize import linprog

    from remat_knapsack.torch.peaks import node_storages as _node_storages

    g = cap.peak(cap.saved_for_plan(nodes, ()))
    events = list(g.fw_events) + list(g.bw_events)
    keys = list(g.fw_keys) + list(g.bw_keys)
    running = np.cumsum(events)
    rows = len(events)
    cols = []
    for node in nodes:
        st = _node_storages(node)
        key = st[0][0] if st else None
        idx = [k for k, kk in enumerate(keys) if kk == key]
        col = np.zeros(rows)
        if len(idx) >= 2:
            col[idx[0]:idx[-1]] = st[0][1]
        cols.append(col)
    A = np.array(cols).T  # rows x n, consecutive ones per column (times the bytes)
    consecutive = all(np.all(np.diff(np.flatnonzero(c)) == 1) for c in A.T if c.any())
    from remat_knapsack.torch import estimate_runtimes

    runtimes = np.array(estimate_runtimes(nodes), dtype=float)
    floor = float(np.max(running - A.sum(1)))  # every candidate recomputed
    top = float(np.max(running))
    results = []
    for k in range(1, 8):
        limit = floor + k * (top - floor) / 8
        # running - A (1 - x) <= limit  <=>  A x <= limit - running + A 1
        res = linprog(-runtimes, A_ub=A, b_ub=limit - running + A.sum(1), bounds=[(0, 1)] * len(nodes),
                      method="highs")  # fmt: skip
        if res.status == 0:
            results.append(int(np.sum((res.x > 1e-6) & (res.x < 1 - 1e-6))))
    fractional = sum(1 for f in results if f)
    return (f"interval LP ({rows} rows, consecutive ones: {consecutive}) at {len(results)} limits between "
            f"{floor / 2**20:.1f} and {top / 2**20:.1f} MiB: fractional optimum at {fractional} "
            f"(fractional variables per limit {results})")  # fmt: skip


def tables(path: Path) -> str:
    """Markdown tables of a peaks.csv: predicted vs measured per budget, and the fit rows."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    mib = 2**20
    out = []
    for backend in sorted({r["backend"] for r in rows}):
        out.append(f"Predicted vs measured peak, {backend} (MiB; error in %):\n")
        out.append("| model | budget | measured | predicted | error % | saved measured | saved predicted |")
        out.append("|---|---|---|---|---|---|---|")
        for r in rows:
            if r["backend"] == backend and r["kind"] == "budget" and r["peak_bytes"]:
                saved = f"{int(r['saved_bytes']) / mib:.2f} | {int(r['predicted_saved_bytes']) / mib:.2f}"
                out.append(f"| {r['model']} | {float(r['budget']):g} | {int(r['peak_bytes']) / mib:.2f} | "
                           f"{int(r['predicted_peak_bytes']) / mib:.2f} | {r['error_pct']} | {saved} |")  # fmt: skip
        out.append("")
    fits = [r for r in rows if r["kind"].startswith("fit")]
    if fits:
        out.append("fit (MiB, ms):\n")
        out.append("| model | limit | kind | fit peak | peak/limit | compiles | fit step | note |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in fits:
            peak = f"{int(r['peak_bytes']) / mib:.2f}" if r["peak_bytes"] else "-"
            ratio = f"{int(r['peak_bytes']) / int(r['limit_bytes']):.3f}" if r["peak_bytes"] else "-"
            limit = f"{int(r['limit_bytes']) / mib:.2f}" if r["limit_bytes"] else "-"
            out.append(f"| {r['model']} | {limit} | {r['kind']} | {peak} | {ratio} | "
                       f"{r['compiles'] or '-'} | {r['step_ms'] or '-'} | {r['note']} |")  # fmt: skip
        out.append("")
    for r in rows:
        if r["kind"] in ("timing", "interval-check"):
            out.append(f"- {r['model']} ({r['backend']}, {r['kind']}): "
                       f"{r['seconds'] + ' s; ' if r['seconds'] else ''}{r['note']}")  # fmt: skip
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["llama", "cnn", "mixer", "convattn", "gpt2", "blocks", "unet",
                                                    "vit"])  # fmt: skip
    ap.add_argument("--backends", nargs="+", default=["aot_eager", "inductor"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budgets", type=float, nargs="+", default=BUDGETS)
    ap.add_argument("--no-fit-inductor", action="store_true",
                    help="fit only with aot_eager; inductor gets predicted vs measured alone")  # fmt: skip
    ap.add_argument("--warm-cache", action="store_true", help="keep inductor's cache directory between models")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--interval-check", action="store_true", help="only the interval-structure check, appended")
    ap.add_argument("--tables", action="store_true", help="print Markdown tables of --out and stop")
    a = ap.parse_args()
    if a.tables:
        print(tables(Path(a.out)))
        return
    if a.interval_check:
        rows = [interval_check(m) for m in a.models]
        for r in rows:
            print(r)
        with open(a.out, "a", newline="") as f:
            csv.DictWriter(f, fieldnames=FIELDS).writerows(rows)
        return
    out = Path(a.out)
    kept = []
    if out.exists() and (a.models != ap.get_default("models") or a.backends != ap.get_default("backends")):
        with open(out, newline="") as f:
            kept = [r for r in csv.DictReader(f) if not (r["model"] in a.models and r["backend"] in a.backends)]
    if "inductor" in a.backends:
        from torch._inductor.cpu_vec_isa import pick_vec_isa

        pick_vec_isa()  # compiles probe programs once per process: not part of any timing
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-peaks-caches-") as caches:
        for backend in a.backends:
            for name in a.models:
                cache_dir = None if a.warm_cache else os.path.join(caches, f"{name}-{backend}")
                rows += run(name, backend, a.repeats, do_fit=(backend == "aot_eager" or not a.no_fit_inductor),
                            budgets=a.budgets, cache_dir=cache_dir)  # fmt: skip
                out.parent.mkdir(parents=True, exist_ok=True)
                with open(out, "w", newline="") as f:
                    w = csv.DictWriter(f, fieldnames=FIELDS)
                    w.writeheader()
                    w.writerows(kept + rows)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
