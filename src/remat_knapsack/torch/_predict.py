"""``predict_peaks``: the peak of one training step at each budget, from one compile on fake tensors.

:func:`predict_peaks` compiles the model once on fake tensors (nothing of the
step's size is allocated), keeps the joint graphs (:mod:`.capture`), and for
each budget asks the partitioner which saved set it picks and the peak model
(:mod:`.peaks`) what that plan peaks at. :func:`learn_step` is what the step
adds around the compiled graphs (the loss, or, with ``regions=`` and under
torchrun, one recorded step); :func:`~remat_knapsack.torch.fit` learns it the
same way.

>>> from remat_knapsack.torch import predict_peaks                    # doctest: +SKIP
>>> [p.peak_bytes for p in predict_peaks(model, (x,), [0.2, 0.5, 1.0])]  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..sweep_report import check_budgets
from . import _plugin as _rt
from . import _regions
from .capture import compile_and_capture, is_meta, measure_outside, on_fakes, target_device
from .peaks import PeakPrediction, has_symbolic_sizes, step_peak
from .step import agree, check_keep_output, check_model, preserved, world_size

__all__ = ["learn_step", "predict_peaks"]


def predict_peaks(
    model: Callable[..., Any],
    args: Any,
    budgets: Sequence[float],
    *,
    loss: Callable[[Any], Any] | None = None,
    backend: Any = "inductor",
    regions: Sequence[str] | None = None,
    device: str | None = None,
    keep_output: bool = True,
) -> list[PeakPrediction]:
    """Predicted peak and saved bytes of one training step at each budget, from one compile.

    The model is compiled once, on fake tensors (its parameters, buffers and
    inputs swapped for ``FakeTensor`` s of the same shapes: nothing of the
    step's size is allocated, so a step that does not fit in memory is
    predicted too); each budget's saved set is what the partitioner picks with our
    ``"auto"`` solver (``choose_saved_values_set`` called on the captured graph,
    shortcuts included), and its peak comes from the forward and backward
    graphs the partitioner extracts for it: under ``inductor`` (the default,
    ``torch.compile``'s) the wrapper code inductor generates for each graph,
    read before any kernel is built (one to two seconds per graph); under
    ``aot_eager`` a liveness pass over the FX graphs. Cost: one compile plus
    that per budget, against one compile and one measured step per budget for
    :func:`~remat_knapsack.torch.sweep`. Under inductor the budgets' plans are
    lowered side by side, each in a forked worker, one per core (at most four;
    ``REMAT_KNAPSACK_WORKERS=1``: one after the other, in this process).

    ``loss`` is checked as :func:`sweep` checks it. When it runs outside the
    compiled model (the usual case: ``loss(model(x))``), its own peak between
    the forward and the backward is counted once, on the fake outputs, and
    added (:func:`~remat_knapsack.torch.capture.measure_outside`). When fake
    tensors cannot run the model (an op whose output depends on values), the
    real tensors are used instead, with a ``RuntimeWarning`` naming the op.

    ``device``: where the step will run ("cpu" or "cuda"; default: the
    model's, the CPU for a model on the meta device). A model built under
    ``with torch.device("meta"):``, with meta inputs, is predicted as the
    same model materialised there; ``device="cuda"`` needs a torch built with
    CUDA (the capture compiles for the device).

    ``keep_output``: which step is predicted. True (default):
    ``out = model(*args); loss(out).backward()``, the output alive through the
    backward. False: ``loss(model(*args)).backward()``, the output freed after
    the loss and before the backward, as Hugging Face's ``Trainer`` does; for
    a language model whose output is the logits, that is often the difference
    that matters.

    ``regions``: names of submodules compiled one by one, the rest eager (as
    torchtitan compiles each block). One real step is then compiled, run and
    measured at PyTorch's default plan (so is one under torch.distributed,
    whose collectives need real tensors); it tells which graphs run in which
    order (identical blocks share one graph, run once per block) and what the
    eager code around them adds (its measured peak less the modelled one).
    Each budget's peak composes every graph's plan over that step, with no
    further compile (:mod:`remat_knapsack.torch._regions`).
    """
    budget_list = check_budgets(budgets)
    keep_output = check_keep_output(keep_output)
    args = args if isinstance(args, tuple) else (args,)
    regions = _regions.check_regions(model, regions)
    where = target_device(model, args, device)
    if where == "cuda" and not torch.backends.cuda.is_built():
        raise ValueError(f"device='cuda' needs a torch built with CUDA (this one is {torch.__version__}): the "
                         "compile that captures the graphs runs for the device; plan_checkpoints(device='cuda') "
                         "plans an eager CUDA step on any torch")  # fmt: skip
    solver = _rt.KnapsackSolver("auto")
    if regions is not None or world_size() > 1:
        if is_meta(model, args):
            raise ValueError("regions= and torchrun learn the step from one real run of it; the model or an input "
                             "is on the meta device: plan it without regions, or materialise it")  # fmt: skip
        with preserved(model, args, where):
            loss_fn, step, _, _ = learn_step(model, args, loss, regions, backend, where, keep_output)
        _warn_symbolic(step.captures.values())
        by_capture = {k: _each_budget(c, budget_list, solver) for k, c in step.captures.items()}
        out = []
        for i, b in enumerate(budget_list):
            graphs = {k: found[i] for k, found in by_capture.items()}
            out.append(PeakPrediction(budget=b, peak_bytes=step.peak(graphs),
                                      saved_bytes=step.saved_bytes(graphs)))  # fmt: skip
        return out

    def capture(fake: Any) -> tuple[list[Any], Any]:
        loss_fn = check_model(model, args, loss, fake)
        outside = measure_outside(model, args, loss_fn, where, fake)
        return compile_and_capture(model, args, backend, fake), outside

    with preserved(model, args, where):
        caps, outside = on_fakes(model, args, device, capture)
    if len(caps) == 1:
        caps[0].tangent_bytes = outside.tangent_bytes
        caps[0].loss_peak_bytes = outside.loss_peak_bytes
        caps[0].loss_phases = outside.loss_phases
    for c in caps:
        c.keep_output = keep_output
    by_capture = [_each_budget(c, budget_list, solver) for c in caps]
    out = []
    for i, b in enumerate(budget_list):
        graphs = [found[i] for found in by_capture]
        out.append(PeakPrediction(budget=b, peak_bytes=step_peak(graphs),
                                  saved_bytes=sum(g.saved_bytes for g in graphs)))  # fmt: skip
    return out


def _each_budget(cap: Any, budgets: Sequence[float], solver: Any) -> list[Any]:
    """The GraphPeak of ``cap``'s plan at each budget: the saved sets first, then their peaks, side by side
    (under inductor each plan's lowering is a core's work, and the plans do not depend on one another)."""
    with _rt._wrapper_held():
        saved_sets = [cap.saved_for_budget(b, solver) for b in budgets]
        return cap.peaks(saved_sets)


def learn_step(model, args, loss, regions, backend, device, keep_output) -> tuple[Any, Any, Any, bool]:
    """The loss, and what the peak model adds to the graphs: (loss_fn, recorded step, outside, on fakes).

    With ``regions`` or under torch.distributed, one step is recorded on the
    real tensors (:func:`_regions.record_step`; under torch.distributed its
    segments are gathered from every rank, so that every rank plans alike).
    Otherwise the model and its loss run on fake tensors (nothing allocated):
    the loss's own peak is learnt there (:func:`~.capture.measure_outside`),
    and the plans are chosen there too (``fakes`` true); on the real tensors
    when fake tensors cannot run the model. ``keep_output``: the step's form
    (:func:`~.step.run_step`), as the recorded step runs it.
    """
    if regions is None and world_size() == 1:
        def learn(fake: Any) -> tuple[Any, Any, bool]:
            loss_fn = check_model(model, args, loss, fake)
            return loss_fn, measure_outside(model, args, loss_fn, device, fake), fake is not None

        loss_fn, outside, fakes = on_fakes(model, args, None, learn)
        return loss_fn, None, outside, fakes
    loss_fn = agree("checking the model and loss", lambda: check_model(model, args, loss))
    step = agree("recording one step", lambda: _regions.record_step(model, args, loss_fn, regions, backend, device,
                                                                   keep_output=keep_output))  # fmt: skip
    return loss_fn, _regions.gather_ranks(step), None, False


def _warn_symbolic(captures: Any) -> None:
    """A ``RuntimeWarning`` when a graph was compiled with dynamic shapes (two blocks of one class on inputs of
    different sizes recompile the shared code with symbolic sizes): its peak is modelled without the
    workspaces of the ops whose sizes are symbolic, and may be low."""
    import warnings

    if any(has_symbolic_sizes(n) for c in captures for n in c.joint_graph.nodes):
        warnings.warn("a block was compiled with dynamic shapes (symbolic sizes, as when blocks of one class run on "
                      "inputs of different sizes): its predicted peak may be low; give each such block inputs of "
                      "one size, or mark them static (torch._dynamo.mark_static)", RuntimeWarning, stacklevel=3)
