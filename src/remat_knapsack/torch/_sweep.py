"""``sweep``: compile a model at each ``activation_memory_budget`` and measure what users care about.

The budget caps a proxy (the knapsack's normalised saved size); the physical
peak of a training step need not follow it. For each budget, :func:`sweep`
resets dynamo, sets the budget and the solver, compiles and runs one warm-up
step, then measures one step's peak, one step's saved tensors and the median
of ``repeats`` timed steps. Every config value it touches comes back on exit,
after an error and after Ctrl-C too. Cost: one compile per budget (seconds to
minutes each) plus ``repeats + 2`` steps.

>>> import torch                                                      # doctest: +SKIP
>>> from remat_knapsack.torch import sweep                            # doctest: +SKIP
>>> report = sweep(model, (x,), budgets=[0, 0.3, 1], backend="aot_eager")  # doctest: +SKIP
>>> report.best(64 << 20)                                             # doctest: +SKIP
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch._functorch.config as _fconfig

from ..api import SOLVERS
from ..errors import StepOutOfMemoryError
from ..sweep_report import BudgetPoint, SweepReport, check_budgets
from . import _plugin as _rt
from . import _regions
from .capture import is_meta, on_fakes
from .step import (
    check_keep_output,
    check_model,
    device_of,
    is_out_of_memory,
    max_over_ranks,
    out_of_memory_message,
    preserved,
    profile_peak_bytes,
    release,
    run_step,
    saved_tensor_bytes,
    sync,
    zero_grad,
)

__all__ = ["sweep", "PYTORCH_SOLVERS", "StepOutOfMemoryError", "profile_peak_bytes", "saved_tensor_bytes"]


#: PyTorch's built-in knapsack solvers by function name -> its config string.
PYTORCH_SOLVERS = {
    "dp_knapsack": "dp",
    "greedy_knapsack": "greedy",
    "ilp_knapsack": "ilp",
    "dp_knapsack_sliding_hirschberg": "dp_knapsack_sliding_hirschberg",
}


def sweep(
    model: Callable[..., Any],
    args: Any,
    *,
    budgets: Sequence[float] | None = None,
    loss: Callable[[Any], Any] | None = None,
    backend: Any = "inductor",
    solver: Any = "auto",
    repeats: int = 5,
    progress: bool = True,
    regions: Sequence[str] | None = None,
    keep_output: bool = True,
) -> SweepReport:
    """Compile ``model`` at each budget and measure peak memory, step time and saved bytes.

    Parameters
    ----------
    model : nn.Module or callable
        Called as ``model(*args)``.
    args : tuple
        Example inputs (a single tensor is taken as ``(tensor,)``).
    budgets : sequence of float, optional
        In [0, 1]; default 0.0, 0.1, ..., 1.0. Reported in ascending order.
    loss : callable, optional
        Output -> scalar tensor. Default ``output.loss`` when the output has
        one, else ``output.sum()``.
    backend : str or callable
        ``torch.compile``'s backend.
    solver : str or KnapsackSolver
        One of :data:`remat_knapsack.SOLVERS` (our exact solvers), a
        :class:`~remat_knapsack.torch.KnapsackSolver` (e.g. ``budget="knee"``),
        or one of PyTorch's built-ins by function name (:data:`PYTORCH_SOLVERS`).
    repeats : int
        Timed steps per budget (the median is reported).
    progress : bool
        A tqdm bar over budgets (a line per budget on stderr without tqdm).
    regions : list of str, optional
        Names of submodules compiled one by one (``nn.Module.compile``), the
        rest of the model eager, as torchtitan compiles each block; put back
        as they were afterwards. None (default): the whole model compiled.
    keep_output : bool
        The step measured. True (default): ``out = model(*args);
        loss(out).backward()``, the output alive through the backward. False:
        ``loss(model(*args)).backward()``, the output freed after the loss, as
        Hugging Face's ``Trainer`` does.

    Each budget starts with ``torch._dynamo.reset()``, which also drops what
    the process compiled before; the sweep ends with one too. Between steps the
    gradients of an ``nn.Module``'s parameters (and of tensor ``args``) are set
    to None; wrap a plain callable in a module to have its parameters' cleared.
    The AOTAutograd cache is off during the sweep, so every budget partitions.
    ``solve_seconds`` is the wall time of PyTorch's knapsack calls (with our
    solvers it includes recording the graph's name and node sizes).

    Returns
    -------
    SweepReport
        ``points`` in budget order; a budget whose compile or step failed has
        its ``error`` set and the sweep goes on.

    Raises
    ------
    ValueError
        Before anything compiles: a budget outside [0, 1], an unknown solver,
        ``repeats`` < 1, a model that does not run on ``args``, a loss that is
        not a scalar tensor requiring grad.
    KeyboardInterrupt
        Passed on after the config is restored.
    """
    budget_list = check_budgets(budgets)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    keep_output = check_keep_output(keep_output)
    make_solver, solver_name = _solver_factory(solver)
    args = args if isinstance(args, tuple) else (args,)
    if is_meta(model, args):
        raise ValueError("sweep measures real steps, and the model or an input is on the meta device: "
                         "materialise it (to_empty, then load its weights), or ask predict_peaks")  # fmt: skip
    loss_fn = on_fakes(model, args, None, lambda fake: check_model(model, args, loss, fake))
    regions = _regions.check_regions(model, regions)
    device = device_of(model, args)

    points: list[BudgetPoint] = []
    bar = _progress(budget_list, progress)
    calls: list[tuple[float, float]] = []  # (predicted saved, seconds) per knapsack

    def observe(memory, runtimes, max_memory, result, seconds):  # noqa: ARG001
        _, saved_idx, _ = result
        calls.append((math.fsum(float(memory[i]) for i in saved_idx), seconds))

    with _rt._wrapper_held(), _observer(observe), _fconfig.patch(enable_autograd_cache=False), \
            preserved(model, args, device):
        try:
            for b in bar:
                calls.clear()
                point = _measure(model, args, loss_fn, b, make_solver(), backend, repeats, device, calls, regions,
                                 keep_output)
                points.append(point)
                _report_progress(bar, point)
        finally:
            torch._dynamo.reset()
            if hasattr(bar, "close"):
                bar.close()
    name = backend if isinstance(backend, str) else getattr(backend, "__name__", repr(backend))
    return SweepReport(points, backend=name, solver=solver_name, device=device, repeats=repeats)


# ---------------------------------------------------------------------- checks


def _solver_factory(solver: Any) -> tuple[Callable[[], Any], str]:
    """A callable giving the config value for one budget (a fresh KnapsackSolver each time), and a name."""
    if isinstance(solver, _rt.KnapsackSolver):
        proto = solver
        return (lambda: _rt.KnapsackSolver(proto.solver, budget=proto.budget, **proto.options)), repr(proto)
    if isinstance(solver, str) and solver in SOLVERS:
        _rt.KnapsackSolver(solver)  # raises UnsupportedTorchError on an old torch, before any compile
        return (lambda: _rt.KnapsackSolver(solver)), solver
    if isinstance(solver, str) and solver in PYTORCH_SOLVERS:
        value = PYTORCH_SOLVERS[solver]
        return (lambda: value), f"torch {solver}"
    raise ValueError(
        f"unknown solver {solver!r}: use one of {', '.join(SOLVERS)}, a KnapsackSolver, "
        f"or PyTorch's {', '.join(PYTORCH_SOLVERS)}"
    )


# ---------------------------------------------------------------------- one budget


def _measure(model, args, loss_fn, budget, solver_value, backend, repeats, device, calls,
             regions=None, keep_output=True) -> BudgetPoint:  # fmt: skip
    torch._dynamo.reset()
    patch = _fconfig.patch(activation_memory_budget=budget, activation_memory_budget_solver=solver_value)
    with patch, _regions.compiled(model, regions, backend) as compiled:

        def step() -> None:
            run_step(compiled, args, loss_fn, keep_output)

        def clear() -> None:
            zero_grad(model, args)

        try:
            clear()
            step()  # compiles: the knapsacks run here
            graphs = len(calls)
            predicted = math.fsum(c[0] for c in calls)
            solve_s = math.fsum(c[1] for c in calls)
            clear()
            saved = saved_tensor_bytes(step)
            clear()
            peak = max_over_ranks(profile_peak_bytes(step, device))  # under torchrun: the worst rank's
            times = []
            for _ in range(repeats):
                clear()
                sync(device)
                t0 = time.perf_counter()
                step()
                sync(device)
                times.append(time.perf_counter() - t0)
            clear()
        except Exception as exc:  # a compile failure or a failing step: this budget's error
            if is_out_of_memory(exc):
                msg = f"the step at budget {budget:g} does not fit in memory: {out_of_memory_message(exc)}"
            else:
                msg = f"{type(exc).__name__}: {exc}".strip()
            failed = True
        else:
            failed = False
    if failed:  # outside the handler: the traceback, and the step's tensors it held, are gone
        clear()
        release(device)
        return BudgetPoint(budget, error=msg[:2000])
    return BudgetPoint(
        budget=budget,
        peak_bytes=int(peak),
        step_seconds=statistics.median(times),
        saved_bytes=int(saved),
        predicted_saved=predicted,
        graphs=graphs,
        solve_seconds=solve_s,
    )


# ---------------------------------------------------------------------- plumbing


class _observer:
    """Context manager: ``obs`` hears of every knapsack solved (through the plug-in's wrapper)."""

    def __init__(self, obs: Callable[..., None]) -> None:
        self.obs = obs

    def __enter__(self) -> None:
        with _rt._lock:
            _rt._observers.append(self.obs)

    def __exit__(self, *exc: Any) -> None:
        with _rt._lock:
            _rt._observers.remove(self.obs)


def _progress(budgets: list[float], progress: bool) -> Any:
    if not progress:
        return budgets
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _Lines(budgets)
    return tqdm(budgets, desc="budgets", unit="budget", file=sys.stderr)


class _Lines(list):
    """Progress without tqdm: one line per budget on stderr."""


def _report_progress(bar: Any, p: BudgetPoint) -> None:
    if p.error is not None:
        text = f"budget {p.budget:g}: error"
    else:
        text = f"budget {p.budget:g}: peak {p.peak_bytes / 2**20:.1f} MiB, step {p.step_seconds * 1e3:.1f} ms"  # type: ignore[operator]
    if isinstance(bar, _Lines):
        print(text, file=sys.stderr, flush=True)
    elif hasattr(bar, "set_postfix_str"):
        bar.set_postfix_str(text)


# Last, so that either module may be imported first: remat_knapsack.torch re-exports sweep.
