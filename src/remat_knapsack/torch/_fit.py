"""``fit``: the fastest plan whose training step fits in a number of bytes, from one compile.

:func:`fit` compiles the model with a peak-constrained
:class:`~remat_knapsack.torch.KnapsackSolver` (``max_peak_bytes``), which plans
each joint graph with the peak model while the partitioner runs. It then
measures one step as :func:`~remat_knapsack.torch.sweep` does. When the
measured peak is above the limit it aims lower, by the ratio of measured to
modelled peak, and compiles again: at most three compiles in all.

>>> from remat_knapsack.torch import fit, use_solver                 # doctest: +SKIP
>>> report = fit(model, (x,), 64 << 20)                               # doctest: +SKIP
>>> report.peak_bytes <= 64 << 20, report.compiles                    # doctest: +SKIP
(True, 1)
>>> with use_solver(report.solver):                                   # doctest: +SKIP
...     compiled = torch.compile(model)                               # the same plan

With ``measure=False`` it plans without running anything: one compile on fake
tensors, no kernel built, no step run; the plan is the one whose modelled peak
fits. That is the compiled path's plan for a model on the meta device.
"""

from __future__ import annotations

import contextlib
import json
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch._functorch.config as _fconfig

from ..errors import PeakLimitError
from . import _plugin as _rt
from . import _regions
from ._predict import learn_step
from .capture import capture_backend, capture_graphs, is_meta, measure_outside, on_fakes, target_device
from .peaks import step_peak
from .step import (
    agree,
    check_keep_output,
    check_model,
    device_of,
    gather_objects,
    is_out_of_memory,
    max_over_ranks,
    out_of_memory_message,
    preserved,
    profile_peak_bytes,
    release,
    run_step,
    saved_tensor_bytes,
    sync,
    world_size,
    zero_grad,
)

__all__ = ["FitReport", "fit", "MAX_COMPILES"]

#: Compiles :func:`fit` may spend (the first plan and up to two corrections).
MAX_COMPILES = 3

#: When no plan's modelled peak fits but the smallest is at most this fraction above the
#: limit, :func:`fit` compiles that plan and measures it instead of raising (the inductor
#: model's error on the models measured is within 10%).
MODEL_SLACK = 0.10

#: A measured peak below this fraction of the limit, with something recomputed, makes
#: :func:`fit` try a plan that keeps more (within :data:`MAX_COMPILES`).
FILL = 0.9

#: After a plan's step runs out of memory, :func:`fit` aims this fraction of that plan's target.
OOM_AIM = 0.9

#: A prediction within this fraction above the measured peak is right: :func:`fit` does not aim
#: higher after it (a plan that keeps more would be predicted, and measure, above the limit).
PREDICTED_RIGHT = 0.01


@dataclass
class FitReport:
    """What :func:`fit` chose and measured.

    Attributes
    ----------
    max_peak_bytes : int
        The limit asked for.
    peak_bytes : int or None
        Measured peak of one training step above its start (as ``sweep`` measures it);
        None with ``measure=False``.
    step_seconds : float or None
        Median wall time of ``repeats`` steps; None with ``measure=False``.
    saved_bytes : int or None
        Measured bytes saved for backward; None with ``measure=False``.
    predicted_peak_bytes : int or None
        The peak model's prediction for the compiled plan.
    compiles : int
        How many times ``fit`` compiled and ran the step (1 to 3; 0 with ``measure=False``).
    solver : KnapsackSolver
        ``with use_solver(report.solver):`` compiles the same plan.
    attempts : list of dict
        Each compile's target, predicted and measured peak, in order.
    """

    max_peak_bytes: int
    peak_bytes: int | None
    step_seconds: float | None
    saved_bytes: int | None
    predicted_peak_bytes: int | None
    compiles: int
    solver: Any = field(repr=False)
    backend: str = "inductor"
    attempts: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field, the solver as its repr and its ``max_peak_bytes``."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["solver"] = repr(self.solver)
        d["solver_max_peak_bytes"] = getattr(self.solver, "max_peak_bytes", None)
        return d

    def to_json(self, path: Any = None) -> str:
        text = json.dumps(self.to_dict(), indent=2, allow_nan=False)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        return text

    def summary(self) -> str:
        MiB = 2**20
        pred = "n/a" if self.predicted_peak_bytes is None else f"{self.predicted_peak_bytes / MiB:.1f} MiB"
        if self.peak_bytes is None:
            return (f"limit {self.max_peak_bytes / MiB:.1f} MiB: predicted peak {pred}, not measured "
                    f"(planned on fake tensors), {self.solver!r}")  # fmt: skip
        return (
            f"limit {self.max_peak_bytes / MiB:.1f} MiB: peak {self.peak_bytes / MiB:.1f} MiB "
            f"(predicted {pred}), step {self.step_seconds * 1e3:.1f} ms, saved {self.saved_bytes / MiB:.1f} MiB, "
            f"{self.compiles} compile(s), {self.solver!r}"
        )


def _check_repeats(repeats: Any) -> int:
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    return repeats


def fit(
    model: Callable[..., Any],
    args: Any,
    max_peak_bytes: int,
    *,
    loss: Callable[[Any], Any] | None = None,
    backend: Any = "inductor",
    repeats: int = 5,
    regions: Sequence[str] | None = None,
    keep_output: bool = True,
    measure: bool = True,
) -> FitReport:
    """The plan that saves the most runtime while one training step peaks within ``max_peak_bytes``.

    Plans with the peak model inside the compile (a :class:`KnapsackSolver`
    with ``max_peak_bytes``, the model and loss checked on fake tensors
    first). A plan whose modelled peak is over the limit stops the compile
    there: nothing of it is built or run. A plan that fits is built and its
    step measured as
    :func:`sweep` does (peak, saved bytes, median of ``repeats`` steps). A
    step that runs out of memory is an answer: that plan does not fit, and
    ``fit`` aims :data:`OOM_AIM` of its target. If the measured peak
    is above the limit, it compiles again aiming at ``target * limit /
    measured``; if it lands below :data:`FILL` of the limit with something
    recomputed and a prediction above the measurement, it compiles again
    aiming higher by the same ratio. At most
    :data:`MAX_COMPILES` compiles in all; it returns the fastest compiled plan
    within the limit.

    ``regions``: names of submodules compiled one by one, the rest of the model
    eager (as torchtitan compiles each block). The step is recorded once
    first (one more compile, at PyTorch's default plan, measured): which
    graphs run in which order, and what the eager code adds. Then every
    graph's plan is held to the whole step's modelled peak, each graph
    planned with the ones before it at their chosen plans. That recorded step
    is real (so is the planning under torch.distributed): there, plans are
    chosen inside the real compile.

    ``keep_output``: the step planned and measured. True (default):
    ``out = model(*args); loss(out).backward()``, the output alive through
    the backward. False: ``loss(model(*args)).backward()``, the output freed
    after the loss, as Hugging Face's ``Trainer`` does. The plan is for that
    step; :attr:`FitReport.solver` carries it.

    ``measure``: False plans without running anything, for a model that
    cannot run yet (built on the meta device, or too large for the memory
    at hand): the model compiles once on fake tensors with the peak model
    planning each graph, no kernel is built and no step runs. The report
    has the plan (:attr:`FitReport.solver`) and its predicted peak, no
    measurement (``peak_bytes``, ``step_seconds`` and ``saved_bytes`` None,
    ``compiles`` 0). One process, without ``regions`` (both learn the step
    from a real run).

    The model's gradients, buffers and the random generators are as they
    were when ``fit`` returns or raises.

    Raises
    ------
    ValueError
        Before anything compiles: a limit that is not a number of bytes > 0
        (0, negative, NaN, inf, a string), ``repeats`` < 1, a model or loss
        that does not run, a region that is not a submodule, a model on the
        meta device with ``measure=True``, ``measure=False`` with ``regions``
        or under torch.distributed.
    PeakLimitError
        No plan's modelled peak fits the limit (it names the smallest the model
        reaches), or no compiled plan's measured peak fits it (it says how many
        ran out of memory).
    StepOutOfMemoryError
        Fake tensors cannot run the model, and its real unplanned forward,
        run instead to check it, does not fit in memory.
    """
    limit = _rt.check_peak_limit(max_peak_bytes)
    repeats = _check_repeats(repeats)
    keep_output = check_keep_output(keep_output)
    if not isinstance(measure, bool):
        raise ValueError(f"measure must be True or False, got {measure!r}")
    args = args if isinstance(args, tuple) else (args,)
    if not measure:
        return _plan_unmeasured(model, args, limit, loss, backend, regions, keep_output)
    if is_meta(model, args):
        raise ValueError("fit compiles and measures the plan, and the model or an input is on the meta "
                         "device: pass measure=False to plan it without running, or materialise the model")
    regions = _regions.check_regions(model, regions)
    device = device_of(model, args)
    name = _backend_name(backend)
    with preserved(model, args, device):
        loss_fn, step, outside, fakes = learn_step(model, args, loss, regions, backend, device, keep_output)
        attempts, tried, compiles = _fit_loop(model, args, loss_fn, limit, step, outside, fakes, backend, repeats,
                                              device, regions, keep_output)  # fmt: skip
    fitting = [(r, s) for r, s in tried if r["peak_bytes"] is not None and r["peak_bytes"] <= limit]
    if not fitting:
        measured = [r["peak_bytes"] for r in attempts if r["peak_bytes"] is not None]
        out_of_memory = sum(1 for r in attempts if r.get("out_of_memory"))
        if measured:
            raise PeakLimitError(limit, min(measured), measured=True, out_of_memory=out_of_memory)
        raise PeakLimitError(limit, min(r["predicted_peak_bytes"] for r in attempts), out_of_memory=out_of_memory)
    best, solver = min(fitting, key=lambda rs: rs[0]["step_seconds"])
    return FitReport(
        max_peak_bytes=limit,
        peak_bytes=best["peak_bytes"],
        step_seconds=best["step_seconds"],
        saved_bytes=best["saved_bytes"],
        predicted_peak_bytes=best["predicted_peak_bytes"],
        compiles=compiles,
        solver=_report_solver(solver),
        backend=name,
        attempts=attempts,
    )


def _fit_loop(model, args, loss_fn, limit, step, outside, fakes, backend, repeats, device, regions, keep_output):
    """:func:`fit`'s compiles: (each attempt's result, (result, solver) of those measured, compiles)."""
    target = limit
    attempts: list[dict[str, Any]] = []
    tried: list[tuple[dict[str, Any], Any]] = []
    smallest_model: int | None = None
    compiles = 0
    try:
        for _ in range(MAX_COMPILES):
            solver = _rt.KnapsackSolver("auto", max_peak_bytes=target)
            solver._keep_output = keep_output
            if step is None:  # one graph: the loss and its tangents are that graph's
                _tell_outside(solver, outside)
            else:  # several: the recorded step composes them, the loss between forwards and backwards
                step.reset()
                solver._step = step
            result, solver = agree(f"compile {compiles + 1} of fit", lambda: _plan_and_measure(  # noqa: B023
                model, args, loss_fn, solver, backend, repeats, device, regions, fakes))  # noqa: B023
            result = _shared(result)
            compiles += 1
            attempts.append(result)
            tried.append((result, solver))
            if smallest_model is None and result["min_modelled_peak_bytes"] is not None:
                smallest_model = result["min_modelled_peak_bytes"]
            if not result["plan_fits"]:
                smallest = result["min_modelled_peak_bytes"] or 0
                if len(attempts) == 1 and smallest <= (1 + MODEL_SLACK) * limit and compiles < MAX_COMPILES:
                    # Nothing fits the model, but the smallest plan is within the model's error of the
                    # limit: compile it and let the measurement decide, rather than refuse a limit
                    # that a plan may meet.
                    attempts.pop()
                    tried.pop()
                    target = smallest
                    continue
                if len(attempts) == 1:
                    raise PeakLimitError(limit, smallest)
                attempts.pop()
                tried.pop()
                break
            if result.get("out_of_memory"):
                # The plan's step ran out of memory: it does not fit, whatever the limit says. Aim lower.
                nxt = min(target - 1, int(math.floor(target * OOM_AIM)))
                if smallest_model is not None and nxt < smallest_model:
                    nxt = smallest_model
                    if nxt >= target:
                        break
                target = nxt
                continue
            if result["peak_bytes"] <= limit:
                # Well below the limit with something recomputed, and the model over-predicted this
                # plan: aim higher (by the same ratio), to keep more within the limit. A plan the
                # model predicted right is the best it knows within the limit already.
                over_predicted = (result["predicted_peak_bytes"] or 0) > (1 + PREDICTED_RIGHT) * result["peak_bytes"]
                if result["peak_bytes"] >= FILL * limit or not result["recomputes"] or not over_predicted:
                    break
                nxt = int(math.floor(target * limit / max(1, result["peak_bytes"])))
                if nxt <= target or any(r["target_bytes"] >= nxt for r in attempts):
                    break
                target = nxt
                continue
            predicted = result["predicted_peak_bytes"]
            if not predicted or not result["plan_fits"]:
                break
            # The model was off by measured/predicted on this plan: aim that much lower.
            nxt = int(math.floor(target * limit / result["peak_bytes"]))
            if nxt >= target:
                nxt = target - 1
            if smallest_model is not None and nxt < smallest_model:
                nxt = smallest_model
                if nxt >= target:
                    break
            target = nxt
    finally:
        torch._dynamo.reset()
    return attempts, tried, compiles


def _shared(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with its measurements the worst over ranks, so that every rank decides alike.

    A plan that ran out of memory on any rank ran out of memory on all.
    """
    if world_size() == 1:
        return result
    failed = [text for text in gather_objects(result.get("out_of_memory")) if text]
    if failed:
        return {**result, "peak_bytes": None, "step_seconds": None, "saved_bytes": None, "out_of_memory": failed[0]}
    for key in ("peak_bytes", "saved_bytes"):
        if result.get(key) is not None:
            result[key] = max_over_ranks(result[key])
    if result.get("step_seconds") is not None:
        result["step_seconds"] = max(gather_objects(float(result["step_seconds"])))
    return result


def _report_solver(solver: Any) -> Any:
    """A fresh solver that compiles ``solver``'s plan again (with the recorded step, for regions).

    It carries the plans ``solver`` chose, by graph: compiling the same model
    with it saves the same nodes without searching again.
    """
    fresh = _rt.KnapsackSolver("auto", max_peak_bytes=solver.max_peak_bytes)
    fresh._keep_output = solver._keep_output
    if solver._step is not None:
        fresh._step = solver._step
    else:
        fresh._tangent_bytes, fresh._loss_peak_bytes = solver._tangent_bytes, solver._loss_peak_bytes
        fresh._loss_phases = solver._loss_phases
    fresh.plans = dict(solver.plans)
    return fresh


def _plan_and_measure(model, args, loss_fn, solver, backend, repeats, device, regions, fakes) -> tuple[dict, Any]:
    """One of :func:`fit`'s attempts: plan for ``solver``'s target in the compile, and run the plan only if it fits.

    With ``fakes`` (the model runs on fake tensors, one process, no regions),
    the solver stops the compile (:class:`~._plugin.PlanDoesNotFit`) when a
    graph's chosen plan is over the target by the peak model: nothing of
    that plan is built or run. Otherwise the plan is chosen inside the real
    compile and its step runs before the fit is known (a recorded step, or
    under torch.distributed, where every rank must reach the same
    collectives). Returns the result and the solver that compiled it.
    """
    solver._stop_unless_fits = bool(fakes)
    return _compile_and_measure(model, args, loss_fn, solver, backend, repeats, device, regions), solver


def _backend_name(backend: Any) -> str:
    return backend if isinstance(backend, str) else getattr(backend, "__name__", repr(backend))


def _tell_outside(solver: Any, outside: Any) -> None:
    """Give ``solver`` the loss computed outside the compiled model (its tangents and its own peak)."""
    solver._tangent_bytes = outside.tangent_bytes
    solver._loss_peak_bytes = outside.loss_peak_bytes
    solver._loss_phases = outside.loss_phases


def _plan_unmeasured(model, args, limit, loss, backend, regions, keep_output) -> FitReport:
    """``fit(..., measure=False)``: the plan chosen in one compile on fake tensors, nothing run."""
    if regions is not None or world_size() > 1:
        raise ValueError("measure=False plans on fake tensors in one process: regions= and torchrun learn the "
                         "step from a real run of it; plan without regions, or with measure=True")  # fmt: skip
    name = _backend_name(backend)
    solver = _rt.KnapsackSolver("auto", max_peak_bytes=limit)
    solver._keep_output = keep_output

    def plan(fake: Any) -> None:
        if fake is None:  # fake tensors cannot run the model (on_fakes said why): nothing is run for real
            raise ValueError("measure=False needs a model that runs on fake tensors; this one does not")
        loss_fn = check_model(model, args, loss, fake)
        _tell_outside(solver, measure_outside(model, args, loss_fn, fake.device, fake))
        _plan_on_fakes(model, solver, backend, fake)

    with preserved(model, args, target_device(model, args)):
        on_fakes(model, args, None, plan)
    choices = solver.choices
    if not choices or not all(c["fits"] for c in choices):
        smallest = max((c["min_peak_bytes"] for c in choices), default=None)
        raise PeakLimitError(limit, smallest if smallest is not None else limit + 1)
    predicted = max(int(c["predicted_peak_bytes"]) for c in choices)
    attempt = {"target_bytes": limit, "plan_fits": True, "predicted_peak_bytes": predicted, "peak_bytes": None,
               "measured": False}  # fmt: skip
    return FitReport(max_peak_bytes=limit, peak_bytes=None, step_seconds=None, saved_bytes=None,
                     predicted_peak_bytes=predicted, compiles=0, solver=_report_solver(solver), backend=name,
                     attempts=[attempt])  # fmt: skip


def _plan_on_fakes(model: Any, solver: Any, backend: Any, fake: Any) -> None:
    """Compile ``model`` with ``solver`` and run its forward on ``fake``'s tensors (a
    :class:`~.capture.FakeModel`, the model's own tensors swapped for fakes): the partitioner runs and
    ``solver`` plans every graph; no kernel is built (the capture backend) and no backward runs."""
    torch._dynamo.reset()
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(_fconfig.patch(enable_autograd_cache=False))
            stack.enter_context(_rt.use_solver(solver))
            compiled = torch.compile(model, backend=capture_backend(backend))
            with fake.mode:
                compiled(*fake.args)
    finally:
        torch._dynamo.reset()


def _recomputes(solver: Any) -> bool:
    """Whether a higher target could keep more: the knapsack let something be recomputed, or a plan that
    recomputes less was turned down for its modelled peak."""
    return any(r.solution.recomputed for r in solver.history) or any(
        o["recompute_cost"] < c["recompute_cost"] for c in solver.choices for o in c["others"].values())


def _does_not_fit(solver: Any) -> dict[str, Any]:
    """An attempt whose plan no graph's modelled peak fits: nothing measured."""
    mins = [c["min_peak_bytes"] for c in solver.choices]
    return {"target_bytes": solver.max_peak_bytes, "plan_fits": False, "predicted_peak_bytes": None,
            "min_modelled_peak_bytes": max(mins) if mins else None}  # fmt: skip


def _compile_and_measure(model, args, loss_fn, solver, backend, repeats, device, regions=None) -> dict[str, Any]:
    """One compile with ``solver`` and one measurement, as ``sweep`` measures a budget.

    The step is the form the solver plans for (``solver._keep_output``,
    :func:`~.step.run_step`). A step that runs out of memory is this plan's answer: the result says so
    (``out_of_memory``, no measured peak), and the memory is given back.
    """
    torch._dynamo.reset()
    out_of_memory = None
    with contextlib.ExitStack() as stack:
        caps = stack.enter_context(capture_graphs())
        stack.enter_context(_fconfig.patch(enable_autograd_cache=False))
        stack.enter_context(_rt.use_solver(solver))
        compiled = stack.enter_context(_regions.compiled(model, regions, backend))

        def step() -> None:
            run_step(compiled, args, loss_fn, solver._keep_output)

        try:
            zero_grad(model, args)
            step()  # compiles: the solver plans here (or stops the compile: PlanDoesNotFit)
            if any(not c["fits"] for c in solver.choices):  # no plan's modelled peak fits: no measurement
                return _does_not_fit(solver)
            zero_grad(model, args)
            peaks: list[int] = []  # one step for both: the saved-tensor hooks allocate nothing
            saved = saved_tensor_bytes(lambda: peaks.append(profile_peak_bytes(step, device)))
            peak = peaks[0]
            times = []
            for _ in range(repeats):
                zero_grad(model, args)
                sync(device)
                t0 = time.perf_counter()
                step()
                sync(device)
                times.append(time.perf_counter() - t0)
        except Exception as exc:
            if _rt.plan_did_not_fit(exc) is not None:
                return _does_not_fit(solver)
            if not is_out_of_memory(exc):
                raise
            out_of_memory = out_of_memory_message(exc)
        finally:
            zero_grad(model, args)
    records = solver.history
    # every partitioned graph went through the peak solver's choice (use_solver wraps choose_saved_values_set)
    if solver._step is not None:  # regions: the recorded step with every graph at its chosen plan
        predicted = solver._step.peak()
    else:
        predicted = step_peak(solver._graph_peaks) if solver._graph_peaks else None
    fits = all(c["fits"] for c in solver.choices)
    mins = [c["min_peak_bytes"] for c in solver.choices]
    result = {
        "target_bytes": solver.max_peak_bytes,
        "predicted_peak_bytes": predicted,
        "plan_fits": fits,
        "min_modelled_peak_bytes": max(mins) if mins else None,
        "graphs": len(caps),
        "plans_evaluated": sum(r.plans_evaluated or 0 for r in records),
        "plans": [c["plan"] for c in solver.choices],
        "recomputes": _recomputes(solver),
    }
    if out_of_memory is not None:  # outside the handler: the step's tensors its traceback held are gone
        torch._dynamo.reset()
        release(device)
        return {**result, "peak_bytes": None, "step_seconds": None, "saved_bytes": None,
                "out_of_memory": out_of_memory}  # fmt: skip
    return {**result, "peak_bytes": int(peak), "step_seconds": statistics.median(times), "saved_bytes": int(saved)}
