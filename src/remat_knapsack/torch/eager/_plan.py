"""plan_checkpoints and CheckpointPlan: selective activation checkpointing chosen for a byte limit.

The plan, from one recorded step (:func:`~._record.record_step`, on fake
tensors unless they cannot run the model; the ops' seconds modelled, so the
same model gives the same plan whether it is materialised or on the meta
device):

1. **Per unit, every budget at once.** The ops of each unit's forward are a
   0/1 knapsack (weight: the bytes an op creates; value: the modelled
   seconds its replay would cost). :func:`remat_knapsack.tradeoff.frontier` gives the
   exact best set of saved ops for every budget in one pass; its
   breakpoints, with "not checkpointed" (no replay, every byte kept), are
   the unit's menu.
2. **Across units** (:mod:`._split`). Starting from every unit at full recomputation, the
   moves along the units' lower convex hulls are ordered by seconds saved
   per byte, and the last plan of that walk whose step peak
   (:class:`~._timeline.Timeline`) fits is found by bisection; from it, each
   unit in turn moves to the furthest breakpoint of its whole frontier that
   still fits (a gallop, then a bisection), until none moves. Exact per
   unit; across units a Lagrangian walk and a descent, not a proof of optimality: the peak is a
   maximum over the step, not a sum.

Complexity: the frontier's O(n S) per unit (n ops, S Pareto states), then
O((log H + R U log S) (S_t + T)) for the search (H hull entries in all, U
units, R descent rounds, S_t storages and T ops of the step).

May import: torch, numpy, :mod:`remat_knapsack.errors`,
``..step`` (the checks, measuring, what a step puts back, the ranks),
``..capture`` (fake tensors) and this subpackage's modules.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NoReturn

import numpy as np
import torch
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from ...errors import PeakLimitError, StepOutOfMemoryError
from ..capture import is_meta, target_device
from ..step import (
    RankFailedError,
    agree,
    check_keep_output,
    checked_loss,
    clear_grads,
    default_loss,
    gather_objects,
    is_out_of_memory,
    max_over_ranks,
    out_of_memory_message,
    preserved,
    profile_peak_bytes,
    release,
    run_step,
)
from ._record import Recording, record_step
from ._split import Menu, Search
from ._timeline import Timeline, UnitItems

__all__ = ["CheckpointPlan", "UnitPlan", "build_plan", "default_units", "plan_checkpoints"]


@dataclass(frozen=True)
class UnitPlan:
    """What the plan does with one unit.

    ``saved_ops`` and ``recomputed_ops`` name ops as ``"aten.mm.default#2"``
    (the third ``mm`` of the unit's forward). ``saved_bytes``: what the
    unit's forward keeps for its backward under the plan (its outputs
    excepted). ``recompute_seconds``: the modelled time of the ops its
    backward replays (0 when it is not checkpointed).
    """

    name: str
    checkpointed: bool
    saved_ops: tuple[str, ...]
    recomputed_ops: tuple[str, ...]
    saved_bytes: int
    recompute_seconds: float


class CheckpointPlan:
    """A selective-checkpointing plan for one model: which units to checkpoint and which ops they save.

    :meth:`apply` wraps each checkpointed unit's forward, in place, in
    ``torch.utils.checkpoint.checkpoint`` (non-reentrant, random number
    generator state preserved) with a selective policy: the saved ops'
    outputs are cached, every other op is replayed in the backward.
    :meth:`remove` puts the forwards back exactly as they were.

    Attributes
    ----------
    units : tuple[UnitPlan, ...]
    predicted_peak_bytes : int
        The modelled peak of one step under the plan, above what was
        allocated when the step began (as :func:`sweep` measures it).
    limit_bytes : int
    unplanned_peak_bytes, full_checkpoint_peak_bytes : int
        The modelled peaks with no unit checkpointed, and with every unit
        fully recomputed.
    recompute_seconds : float
        Sum over units: the modelled extra time a step spends replaying.
    planning_seconds, solve_seconds : float
        Wall time of :func:`plan_checkpoints`, and of its knapsack solves and walk alone.
    keep_output : bool
        The step planned (and measured by :meth:`measure`): ``out = model(*args);
        loss(out).backward()``, or, False, ``loss(model(*args)).backward()``.
    """

    def __init__(self, model: torch.nn.Module, modules: Sequence[torch.nn.Module], units: tuple[UnitPlan, ...],
                 saved: Sequence[frozenset[tuple[str, int]]], predicted_peak_bytes: int, limit_bytes: int,
                 unplanned_peak_bytes: int, full_checkpoint_peak_bytes: int,
                 planning_seconds: float, solve_seconds: float, allow_mutation: Sequence[bool] | None = None,
                 timeline: Timeline | None = None) -> None:  # fmt: skip
        self.model = model
        self._modules = list(modules)
        self.units = units
        self._saved = list(saved)
        # per unit: it caches an in-place buffer update (see CheckpointedForward)
        self._allow_mutation = list(allow_mutation) if allow_mutation is not None else [False] * len(self._saved)
        self.predicted_peak_bytes = int(predicted_peak_bytes)
        self.limit_bytes = int(limit_bytes)
        self.unplanned_peak_bytes = int(unplanned_peak_bytes)
        self.full_checkpoint_peak_bytes = int(full_checkpoint_peak_bytes)
        self.planning_seconds = planning_seconds
        self.solve_seconds = solve_seconds
        self._originals: list[tuple[torch.nn.Module, Any]] | None = None
        self._timeline = timeline  # the recorded statistics, for benchmarks that plan on the same ones
        #: The step planned: the output kept through the backward, or dropped after the loss.
        self.keep_output = timeline.recording.keep_output if timeline is not None else True

    @property
    def recompute_seconds(self) -> float:
        return sum(u.recompute_seconds for u in self.units)

    @property
    def applied(self) -> bool:
        return self._originals is not None

    def apply(self) -> CheckpointPlan:
        """Wrap each checkpointed unit's forward (in place; parameter names and state dict unchanged).

        Apply before ``fully_shard`` or ``DistributedDataParallel``, as
        torchtitan applies its checkpointing, or after ``fully_shard`` to
        a plan made on the sharded model: FSDP2's hooks stay around the
        wrapped forward, so a replay in the backward runs on the parameters
        its pre-backward all-gathered. Raises ``RuntimeError`` if the plan
        is already applied.
        """
        if self._originals is not None:
            raise RuntimeError("the plan is already applied; call remove() first")
        originals = []
        for unit, module, saved, mutates in zip(self.units, self._modules, self._saved, self._allow_mutation):
            if not unit.checkpointed:
                continue
            own = module.__dict__.get("forward", _MISSING)
            originals.append((module, own))
            # a forward set on the instance is wrapped as it is; the class's is looked up at each call
            module.forward = CheckpointedForward(module, None if own is _MISSING else own, saved, mutates)
        self._originals = originals
        return self

    def remove(self) -> None:
        """Put back the forwards :meth:`apply` found (a no-op when the plan is not applied)."""
        for module, original in self._originals or ():
            if original is _MISSING:
                del module.forward
            else:
                module.forward = original
        self._originals = None

    def measure(self, args: Any, *, loss: Callable[[Any], Any] | None = None) -> int:
        """The measured peak of one step under the plan, in bytes, as :func:`sweep` measures it.

        Applies the plan for the step (and removes it after, unless it was
        applied already), runs one step to warm up and one under the
        profiler (CUDA: ``torch.cuda.max_memory_allocated``); gradients,
        buffers and random generators are put back as they were. Raises
        ``ValueError`` when the model or ``args`` are on the meta device
        (materialise the model with ``to_empty`` and load its weights first).
        """
        args = args if isinstance(args, tuple) else (args,)
        loss_fn = loss if loss is not None else default_loss
        model = self.model
        _check_real(model, args)
        device = target_device(model, args)

        def step() -> None:
            clear_grads(model, args)
            run_step(model, args, loss_fn, self.keep_output)

        applied = self.applied
        try:
            if not applied:
                self.apply()
            with preserved(model, args, device):
                step()
                clear_grads(model, args)
                return profile_peak_bytes(step, device)
        finally:
            if not applied:
                self.remove()

    def __enter__(self) -> CheckpointPlan:
        return self.apply()

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def to_dict(self) -> dict[str, Any]:
        return {
            "limit_bytes": self.limit_bytes,
            "predicted_peak_bytes": self.predicted_peak_bytes,
            "unplanned_peak_bytes": self.unplanned_peak_bytes,
            "full_checkpoint_peak_bytes": self.full_checkpoint_peak_bytes,
            "recompute_seconds": self.recompute_seconds,
            "planning_seconds": self.planning_seconds,
            "solve_seconds": self.solve_seconds,
            "units": [asdict(u) for u in self.units],
        }

    def to_json(self, path: Any = None) -> str:
        text = json.dumps(self.to_dict(), indent=2)
        if path is not None:
            with open(path, "w") as f:
                f.write(text + "\n")
        return text

    def summary(self) -> str:
        mib = 1 << 20
        lines = [f"limit {self.limit_bytes / mib:.1f} MiB: predicted peak {self.predicted_peak_bytes / mib:.1f} MiB "
                 f"(no checkpointing {self.unplanned_peak_bytes / mib:.1f} MiB, "
                 f"every unit recomputed {self.full_checkpoint_peak_bytes / mib:.1f} MiB); "
                 f"replays {self.recompute_seconds * 1e3:.1f} ms a step; "
                 f"planned in {self.planning_seconds:.2f} s"]  # fmt: skip
        for u in self.units:
            if not u.checkpointed:
                lines.append(f"  {u.name}: not checkpointed")
                continue
            lines.append(f"  {u.name}: {len(u.saved_ops)} ops saved ({u.saved_bytes / mib:.2f} MiB), "
                         f"{len(u.recomputed_ops)} recomputed ({u.recompute_seconds * 1e3:.2f} ms)")  # fmt: skip
        return "\n".join(lines)

    def __repr__(self) -> str:
        checkpointed = sum(u.checkpointed for u in self.units)
        return (f"CheckpointPlan({checkpointed}/{len(self.units)} units checkpointed, "
                f"predicted_peak_bytes={self.predicted_peak_bytes}, limit_bytes={self.limit_bytes})")  # fmt: skip


_MISSING = object()


def _check_real(model: Any, args: tuple) -> None:
    """ValueError when the model or an input is on the meta device: a step cannot run for real."""
    if is_meta(model, ()):
        raise ValueError("the model is on the meta device; materialise it (to_empty) before measuring")
    if is_meta(None, args):
        raise ValueError("args holds a tensor on the meta device; pass real inputs to measure a step")


class CheckpointedForward:
    """A unit's forward under non-reentrant checkpointing that caches the ops in ``saved`` (by name and occurrence).

    Set as the module's own ``forward`` by :meth:`CheckpointPlan.apply`. An
    object rather than a closure, so that ``copy.deepcopy`` of the model
    gives a copy that runs its own weights and ``torch.save`` can pickle it.
    Keyword tensors are handed to ``checkpoint`` positionally, so that it
    restores every device's random state and checks them for in-place writes
    as it does positional ones. ``allow_mutation``: the unit caches an
    in-place update of a buffer (batch norm's step counter), whose version
    torch bumps after the cache records it, so the cache's own mutation check
    is off for that unit; the planner never caches an op whose output is
    written later.
    """

    def __init__(self, module: torch.nn.Module, forward: Any, saved: frozenset[tuple[str, int]],
                 allow_mutation: bool) -> None:  # fmt: skip
        self.module, self.forward, self.saved, self.allow_mutation = module, forward, saved, allow_mutation

    def _context(self) -> Any:
        counts: dict[tuple[bool, Any], int] = {}

        def policy(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
            key = (ctx.is_recompute, op)
            occurrence = counts.get(key, 0)
            counts[key] = occurrence + 1
            saved = (str(op), occurrence) in self.saved
            return CheckpointPolicy.MUST_SAVE if saved else CheckpointPolicy.PREFER_RECOMPUTE

        return create_selective_checkpoint_contexts(policy, allow_cache_entry_mutation=self.allow_mutation)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        names, count = list(kwargs), len(args)
        forward = self.forward if self.forward is not None else type(self.module).forward.__get__(self.module)

        def run(*flat: Any) -> Any:
            return forward(*flat[:count], **dict(zip(names, flat[count:])))

        if not self.saved:  # full recomputation: plain checkpointing, without the selective cache's per-op cost
            return checkpoint(run, *args, *kwargs.values(), use_reentrant=False)
        return checkpoint(run, *args, *kwargs.values(), use_reentrant=False, context_fn=self._context)


# ---------------------------------------------------------------------- units


def default_units(model: torch.nn.Module) -> list[str]:
    """The units :func:`plan_checkpoints` takes by default.

    The children of an ``nn.Sequential`` model; otherwise the blocks of its
    largest ``nn.ModuleList`` (by parameters); with no ``nn.ModuleList``, the
    children of its largest ``nn.Sequential``.
    """
    if isinstance(model, torch.nn.Sequential):
        return [name for name, _ in model.named_children()]
    lists = [(name, m) for name, m in model.named_modules() if isinstance(m, torch.nn.ModuleList) and len(m)]
    if not lists:
        lists = [(name, m) for name, m in model.named_modules() if isinstance(m, torch.nn.Sequential) and len(m)]
    if not lists:
        raise ValueError("the model has no nn.ModuleList or nn.Sequential of blocks; "
                         "pass units= (names of submodules, each run once per step)")  # fmt: skip
    name, blocks = max(lists, key=lambda item: (sum(p.numel() for p in item[1].parameters()), len(item[1])))
    return [f"{name}.{child}" if name else child for child, _ in blocks.named_children()]


def _resolve_units(model: Any, units: Any) -> list[tuple[str, torch.nn.Module]]:
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model must be an nn.Module, got {type(model).__name__}")
    if units is None:
        names = default_units(model)
    elif isinstance(units, str) or not isinstance(units, Sequence) or not units:
        raise ValueError(f"units must be a non-empty list of submodule names, got {units!r}")
    else:
        names = list(units)
    modules = dict(model.named_modules())
    resolved = []
    for index, name in enumerate(names):
        if not isinstance(name, str) or name not in modules or name == "":
            raise ValueError(f"units[{index}] = {name!r} is not a submodule of the model")
        resolved.append((name, modules[name]))
    for i, (a, _) in enumerate(resolved):
        for b, _ in resolved[i + 1:]:
            if a == b or b.startswith(a + ".") or a.startswith(b + "."):
                raise ValueError(f"units {a!r} and {b!r} overlap; name modules that do not contain each other")
    return resolved


def _check_device(model: Any, args: tuple, device: Any) -> str:
    """Where the step will run, "cpu" or "cuda" (:func:`~..capture.target_device`); ValueError naming
    a ``device`` that is not one of them."""
    if device is not None and not isinstance(device, (str, torch.device)):
        raise ValueError(f"device must be 'cpu' or 'cuda' (where the step will run), got {device!r}")
    try:
        return target_device(model, args, device)
    except RuntimeError as exc:  # torch.device's own refusal of the string
        raise ValueError(f"device must be 'cpu' or 'cuda' (where the step will run), got {device!r}") from exc


def _check_limit(max_peak_bytes: Any) -> int:
    if isinstance(max_peak_bytes, bool) or not isinstance(max_peak_bytes, (int, float, np.integer, np.floating)):
        raise ValueError(f"max_peak_bytes must be a number of bytes, got {max_peak_bytes!r}")
    if isinstance(max_peak_bytes, (float, np.floating)) and not np.isfinite(max_peak_bytes) or max_peak_bytes < 1:
        raise ValueError(f"max_peak_bytes must be a finite number >= 1, got {max_peak_bytes!r}")
    return int(max_peak_bytes)


def _unit_plan(name: str, recording: Recording, items: UnitItems, saved: np.ndarray | None) -> UnitPlan:
    ops = [recording.ops[i] for i in items.ops]
    labels = [f"{op.name}#{op.occurrence}" for op in ops]
    if saved is None:
        return UnitPlan(name, False, (), (), int(items.kept_bytes.sum()), 0.0)
    kept = int(items.kept_bytes[saved[items.kept_op]].sum()) + int(items.temp_bytes[saved[items.temp_op]].sum())
    return UnitPlan(name, True,
                    tuple(label for label, s in zip(labels, saved) if s),
                    tuple(label for label, s, op in zip(labels, saved, ops) if not s and op.occurrence >= 0),
                    kept, float(items.seconds[~saved].sum()))  # fmt: skip


def plan_checkpoints(model: torch.nn.Module, args: Any, max_peak_bytes: int, *,
                     loss: Callable[[Any], Any] | None = None, units: Sequence[str] | None = None,
                     device: str | None = None, keep_output: bool = True) -> CheckpointPlan:  # fmt: skip
    """The selective-checkpointing plan with the least replay time whose step peaks within ``max_peak_bytes``.

    Records one eager training step (``out = model(*args); loss(out).backward()``,
    or with ``keep_output=False`` ``loss(model(*args)).backward()``) on
    fake tensors, under a recording dispatch mode: the step is not run for
    real, so a step that does not fit in memory is planned too, and so is a
    model built under ``with torch.device("meta"):`` (with meta inputs),
    which gets the plan of the same model materialised. Each op's time is a
    roofline model of the device (:mod:`._roofline`); what an op allocates
    within itself is measured once per distinct op on real tensors of its
    shapes (:mod:`._workspace`). When fake tensors cannot run the model (an
    op whose output depends on values, such as ``x[x > 0]``), the step is
    recorded on the real tensors instead, with a warning naming the cause.
    The model's parameters, gradients, buffers and random generators are
    left as they were. Nothing is applied: call :meth:`CheckpointPlan.apply`
    (before ``fully_shard`` to a plan of the unsharded model, after it to a
    plan of the sharded one; after ``to_empty`` and loading the weights for a
    meta model: the plan names modules, which ``to_empty`` keeps).

    Parameters
    ----------
    model : nn.Module
    args : tuple
        The model's positional arguments for one step (a single tensor is
        taken as ``(tensor,)``).
    max_peak_bytes : int
        The limit on one step's peak, above what is allocated when the step
        begins (parameters and inputs excluded, as :func:`sweep` measures).
    loss : callable, optional
        ``output -> scalar``; default: ``output.loss`` when it exists, else ``output.sum()``.
    units : list of str, optional
        Names of the submodules that may be checkpointed, each run once per
        step; default: the blocks of the model's largest ``nn.ModuleList``
        (the children of an ``nn.Sequential``).
    device : {"cpu", "cuda"}, optional
        Where the step will run: the device whose nominal rates time the ops
        and where workspaces are measured. Default: where the model's
        parameters or the inputs are; the CPU for a model on the meta
        device. For "cuda" where no GPU is available, the step is recorded
        on fake CPU tensors, workspaces count 0, and an op CUDA would choose
        differently (its attention kernels) is planned as the CPU's.
    keep_output : bool
        The step planned. True (default): ``out = model(*args);
        loss(out).backward()``, the output alive through the backward. False:
        ``loss(model(*args)).backward()``, the output freed after the loss, as
        Hugging Face's ``Trainer`` does. :meth:`CheckpointPlan.measure` runs
        the same step.

    Under ``torchrun`` every rank records its step and then adopts rank
    0's plan, so all ranks apply the same one; the predicted peak is the
    largest over ranks. A rank that fails makes every rank raise. On a
    model already wrapped with ``fully_shard`` (each block, then the root)
    the recorded step is the sharded one, on the real tensors: its
    all-gathers before each block's forward and backward, its reshards
    (storages resized to 0) and its gradients' reduce-scatters are in the
    step, outside every unit, and the predicted peak is one rank's peak of
    the sharded step.

    Complexity: one step on fake tensors, each distinct op run once on real
    tensors for its workspace, then the knapsack frontiers and the walk
    (module docstring).

    Raises
    ------
    ValueError
        Naming a bad argument: ``max_peak_bytes`` not a positive number, a
        unit that is not a submodule or that contains another, a ``device``
        other than "cpu" or "cuda", a model that does not run on ``args`` or
        a loss that is not a scalar; a meta model that fake tensors cannot run.
    StepOutOfMemoryError
        When fake tensors cannot run the model and the real step, recorded
        instead, runs out of memory (the unplanned step does not fit).
    PeakLimitError
        When no plan fits, with the smallest peak any plan reaches.

    Examples
    --------
    >>> import torch
    >>> from remat_knapsack.torch import plan_checkpoints
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(),
    ...                                                    torch.nn.Linear(256, 64)) for _ in range(4)])
    >>> x = torch.randn(512, 64, requires_grad=True)
    >>> plan = plan_checkpoints(model, (x,), 3 << 20)
    >>> plan.predicted_peak_bytes <= 3 << 20
    True
    >>> with plan:
    ...     model(x).sum().backward()
    """
    start = time.perf_counter()
    limit = agree("checking the limit", lambda: _check_limit(max_peak_bytes))
    limit = min(gather_objects(limit))  # ranks given different limits plan for the smallest
    args = args if isinstance(args, tuple) else (args,)
    resolved = agree("checking the units", lambda: _resolve_units(model, units))
    loss_fn = checked_loss(loss)
    keep_output = check_keep_output(keep_output)
    target = agree("checking the device", lambda: _check_device(model, args, device))
    recording = agree("recording one step", lambda: _record(model, args, loss_fn, resolved, target, keep_output))
    solve_start = time.perf_counter()
    timeline = Timeline(recording)
    search = Search(timeline, [Menu(items) for items in timeline.units], limit)
    positions, peak = search.run()
    solve_seconds = time.perf_counter() - solve_start
    choice = _rank_zero_choice(recording, timeline, search.choice(positions))
    peak = max_over_ranks(timeline.peak(choice))
    full = max_over_ranks(timeline.peak(timeline.full()))
    if peak > limit:
        raise PeakLimitError(limit, peak)
    unplanned = max_over_ranks(timeline.peak(timeline.none()))
    return build_plan(model, resolved, timeline, choice, peak, limit, unplanned, full,
                      time.perf_counter() - start, solve_seconds)  # fmt: skip


def _rank_zero_choice(recording: Recording, timeline: Timeline,
                      choice: list[np.ndarray | None]) -> list[np.ndarray | None]:  # fmt: skip
    """Rank 0's choice, on every rank (each rank measures its own workspaces and may be given other
    shapes, so their own plans may differ).

    Raises :class:`~..step.RankFailedError` on every rank when the ranks' units ran different ops.
    """
    signature = [[recording.ops[i].name for i in items.ops] for items in timeline.units]
    shared = gather_objects((signature, [None if c is None else c.tolist() for c in choice]))
    differs = [rank for rank, (other, _) in enumerate(shared) if other != shared[0][0]]
    if differs:
        raise RankFailedError(f"rank {differs[0]}'s units ran other ops than rank 0's; "
                                     "every rank must run the same model on inputs of the same shapes")  # fmt: skip
    return [None if c is None else np.array(c, dtype=bool) for c in shared[0][1]]


def build_plan(model: torch.nn.Module, units: list[tuple[str, torch.nn.Module]], timeline: Timeline,
               choice: list[np.ndarray | None], peak: int, limit: int, unplanned: int, full: int,
               planning_seconds: float = 0.0, solve_seconds: float = 0.0) -> CheckpointPlan:  # fmt: skip
    """The :class:`CheckpointPlan` of one choice (per unit: a mask of saved ops, or None)."""
    recording = timeline.recording
    unit_plans = tuple(_unit_plan(name, recording, items, saved)
                       for (name, _), items, saved in zip(units, timeline.units, choice))  # fmt: skip
    saved_sets = [frozenset((recording.ops[i].name, recording.ops[i].occurrence)
                            for i, s in zip(items.ops, saved) if s) if saved is not None else frozenset()
                  for items, saved in zip(timeline.units, choice)]  # fmt: skip
    return CheckpointPlan(model, [m for _, m in units], unit_plans, saved_sets, peak, limit, unplanned, full,
                          planning_seconds, solve_seconds, [items.caches_in_place_write for items in timeline.units],
                          timeline)  # fmt: skip


def _record(model: Any, args: tuple, loss_fn: Callable[[Any], Any], units: list, device: str,
            keep_output: bool) -> Recording:  # fmt: skip
    """The step recorded on fake tensors, or on the real ones when fake tensors cannot run it (with a
    warning; :func:`~._record.record_step`).

    A model that does not run raises ValueError saying so; a real step that
    runs out of memory raises :class:`StepOutOfMemoryError`.
    """
    try:
        return record_step(model, args, loss_fn, units, device=device, keep_output=keep_output)
    except Exception as exc:
        if not is_out_of_memory(exc):
            _raise_does_not_run(exc)
        message = out_of_memory_message(exc)
    release(device)  # out of the except block: the failed step's frames are garbage now
    raise StepOutOfMemoryError("the unplanned step does not fit in memory (fake tensors cannot run the model, so "
                               f"one real step, with every activation kept for backward, was recorded): {message}")


def _raise_does_not_run(exc: Exception) -> NoReturn:
    """Raise ``exc`` itself when it is a ValueError (a unit check, or the model's own), else a ValueError
    saying that the model does not run on args."""
    if isinstance(exc, ValueError):
        raise exc
    raise ValueError(f"the model does not run on args: one training step (loss(model(*args)).backward()) "
                     f"raised {type(exc).__name__}: {exc}") from exc
