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

import contextlib
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
from ._measure import (
    is_out_of_memory,
    out_of_memory_message,
    profile_peak_bytes,
    release,
    saved_tensor_bytes,  # noqa: F401  (sweep's measurements)
)
from ._ranks import max_over_ranks
from ._state import preserved
from .capture import is_meta, on_fakes

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
    make_solver, solver_name = _solver_factory(solver)
    args = args if isinstance(args, tuple) else (args,)
    if is_meta(model, args):
        raise ValueError("sweep measures real steps, and the model or an input is on the meta device: "
                         "materialise it (to_empty, then load its weights), or ask predict_peaks")  # fmt: skip
    loss_fn = on_fakes(model, args, None, lambda fake: _check_model(model, args, loss, fake))
    regions = _regions.check_regions(model, regions)
    device = _device(model, args)

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
                point = _measure(model, args, loss_fn, b, make_solver(), backend, repeats, device, calls, regions)
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


def _default_loss(out: Any) -> Any:
    value = getattr(out, "loss", None)
    if value is not None:
        return value
    if hasattr(out, "sum"):
        return out.sum()
    raise ValueError(f"the model's output ({type(out).__name__}) has no .loss and no .sum(); pass loss=")


def _check_model(model: Any, args: tuple, loss: Any, fake: Any = None) -> Callable[[Any], Any]:
    """Run the model and the loss once eagerly: ValueError naming what does not work, before any compile.

    ``fake`` (a :class:`~.capture.FakeModel`): on its fake tensors, which
    allocate nothing; otherwise on the real ones, where running out of memory
    raises :class:`StepOutOfMemoryError` (the unplanned forward does not fit:
    the model is not broken).
    """
    if not callable(model):
        raise ValueError(f"model must be an nn.Module or a callable, got {type(model).__name__}")
    checked = checked_loss(loss)
    context = fake.mode if fake is not None else contextlib.nullcontext()
    with context:
        try:
            out = model(*(fake.args if fake is not None else args))
        except Exception as exc:
            if fake is None and is_out_of_memory(exc):
                raise StepOutOfMemoryError(
                    "the unplanned forward (model(*args) with every activation kept for backward) does not fit in "
                    f"memory: {out_of_memory_message(exc)}") from None  # fmt: skip
            raise ValueError(f"the model does not run on args: model(*args) raised {type(exc).__name__}: "
                             f"{exc}") from exc
        checked(out)
    return loss if loss is not None else _default_loss


def checked_loss(loss: Any) -> Callable[[Any], Any]:
    """``loss`` (default: ``.loss`` or ``.sum()``) raising ValueError when it fails or is not a scalar needing grad."""
    if loss is not None and not callable(loss):
        raise ValueError(f"loss must be a callable output -> scalar, got {type(loss).__name__}")
    loss_fn = loss if loss is not None else _default_loss

    def checked(out: Any) -> Any:
        try:
            value = loss_fn(out)
        except ValueError:
            raise
        except Exception as exc:
            raise ValueError(f"the loss does not run on the model's output: {type(exc).__name__}: {exc}") from exc
        check_loss_value(value)
        return value

    return checked


def check_loss_value(value: Any) -> None:
    """ValueError unless ``value`` is a scalar tensor that requires grad."""
    if not isinstance(value, torch.Tensor) or value.numel() != 1:
        shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
        raise ValueError(f"the loss must be a scalar tensor, got {shape}")
    if not value.requires_grad:
        raise ValueError("the loss does not require grad: no parameter or input with requires_grad reaches it")


def _device(model: Any, args: tuple) -> str:
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if isinstance(model, torch.nn.Module):
        tensors += list(model.parameters())[:1]
    return "cuda" if any(t.is_cuda for t in tensors) else "cpu"


# ---------------------------------------------------------------------- one budget


def _measure(model, args, loss_fn, budget, solver_value, backend, repeats, device, calls,
             regions=None) -> BudgetPoint:  # fmt: skip
    torch._dynamo.reset()
    patch = _fconfig.patch(activation_memory_budget=budget, activation_memory_budget_solver=solver_value)
    with patch, _regions.compiled(model, regions, backend) as compiled:

        def step() -> None:
            out = compiled(*args)
            loss_fn(out).backward()

        def clear() -> None:
            _zero_grad(model, args)

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
                _sync(device)
                t0 = time.perf_counter()
                step()
                _sync(device)
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


def _zero_grad(model: Any, args: tuple) -> None:
    if isinstance(model, torch.nn.Module):
        model.zero_grad(set_to_none=True)
    for a in args:
        if isinstance(a, torch.Tensor) and a.grad is not None:
            a.grad = None


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


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
