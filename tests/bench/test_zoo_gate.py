"""The model zoo's accuracy gate: predicted step peaks within 2% of the measured ones, and compiled training that
matches eager.

Per cell (model, precision, path), one row of ``benchmarks/bench_zoo.py`` (``compiled_rows`` under aot_eager at
budget 0.4, or ``eager_row``, ``plan_checkpoints`` at the limit midway between its extremes) must have
``|error_pct| <= 2``: no absolute slack, the models' peaks are about 0.3 to 2.5 MiB. A cell the peak model
still gets wrong is ``xfail(strict=True)`` with its cause, so a fix flips it.

The default cells fit in about 90 s on two CPU cores: four compiled and four eager cells, every family of the
six and every precision among them (a compiled cell costs 7 to 35 s here, T5's about 70 s). ``ZOO_GATE=full``
runs the whole matrix: GPT-2, BERT, T5, ViT, CLIP and ResNet, each in fp32, bf16 and autocast, compiled and
eager (about 10 minutes), and the gradient check on every model.

The gradient check: per model, fp32, the compiled step (aot_eager, ``activation_memory_budget`` 0.4, our
``"auto"`` solver) gives eager's loss and gradients. Models run in eval mode: dropout off (so are ResNet's
batch norms, which then use their running statistics: the same in both steps).
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("remat_knapsack.torch")

BUDGET = 0.4
TOLERANCE_PCT = 2.0
FULL = os.environ.get("ZOO_GATE") == "full"

MODELS = ["gpt2", "bert", "t5", "vit", "clip", "resnet"]
PRECISIONS = ["fp32", "bf16", "autocast"]
#: The default cells: (model, precision, path), every model and precision once per path.
QUICK_CELLS = [
    ("bert", "autocast", "compiled"), ("vit", "autocast", "compiled"), ("clip", "fp32", "compiled"),
    ("resnet", "bf16", "compiled"),
    ("gpt2", "autocast", "eager"), ("bert", "bf16", "eager"), ("vit", "fp32", "eager"), ("resnet", "fp32", "eager"),
    ("bert", "fp32", "eager"),
]  # fmt: skip

_GRAPH_BREAK = ("the loss follows a graph break, and the first graph's hidden-state output is counted to the end "
                "of the step, where the real step frees it (an overestimate)")  # fmt: skip
#: Cells known to miss by more than 2% (signed error at the last run), with the cause.
KNOWN = {
    ("gpt2", "autocast", "compiled"): _GRAPH_BREAK,  # +2.4%
}


def _cells():
    cells = ([(m, p, path) for m in MODELS for p in PRECISIONS for path in ("compiled", "eager")]
             if FULL else QUICK_CELLS)  # fmt: skip
    out = []
    for cell in cells:
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN[cell])] if cell in KNOWN else []
        out.append(pytest.param(*cell, marks=marks, id="-".join(cell)))
    return out


@pytest.mark.parametrize(("name", "precision", "path"), _cells())
def test_predicted_peak_within_2_percent(zoo, name, precision, path):
    zoo, bench = zoo
    zm = zoo.make(name, precision)
    (row,) = bench.compiled_rows(zm, "aot_eager", [BUDGET]) if path == "compiled" else [bench.eager_row(zm)]
    assert not row["error"], row["error"]
    assert abs(row["error_pct"]) <= TOLERANCE_PCT, (
        f"{name} {precision} {path}: predicted {row['predicted_bytes']} B, measured {row['measured_bytes']} B, "
        f"{row['error_pct']:+.2f}%")  # fmt: skip


def _step(model, run, args, loss_fn):
    """One step of ``run`` (the model or its compiled form): the loss, and ``model``'s gradients."""
    model.zero_grad(set_to_none=True)
    value = loss_fn(run(*args))
    value.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return value.detach(), grads


@pytest.mark.parametrize("name", MODELS if FULL else ["gpt2", "resnet"])
def test_compiled_step_with_our_solver_matches_eager(zoo, name):
    import torch._functorch.config as fconfig

    from remat_knapsack.torch import use_solver

    zoo, _ = zoo
    zm = zoo.make(name, "fp32")
    zm.model.eval()  # dropout off
    loss_eager, grads_eager = _step(zm.model, zm.model, zm.args, zm.loss)
    torch._dynamo.reset()
    try:
        with use_solver("auto") as solver, fconfig.patch(activation_memory_budget=BUDGET,
                                                         enable_autograd_cache=False):  # fmt: skip
            compiled = torch.compile(zm.model, backend="aot_eager")
            loss_compiled, grads_compiled = _step(zm.model, compiled, zm.args, zm.loss)
    finally:
        torch._dynamo.reset()
    assert solver.history, "the knapsack was never asked: the budget did not reach our solver"
    torch.testing.assert_close(loss_compiled, loss_eager)
    assert grads_compiled.keys() == grads_eager.keys()
    for n in grads_eager:
        torch.testing.assert_close(grads_compiled[n], grads_eager[n], msg=lambda m, n=n: f"{name} {n}: {m}")
