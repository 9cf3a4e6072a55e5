"""Models compiled region by region, and the step they run: which graphs run, in what order, and what else.

``regions=`` names submodules compiled one by one, the rest of the model
eager, as torchtitan compiles each transformer block. Several joint graphs then
share one step: each block's forward saves tensors that live while the others
run, and eager code (embeddings, the output head, the loss, the gradients
passed from block to block) sits between them. Identical blocks usually share
one graph, run once per block.

:func:`compiled` compiles the regions in place (``nn.Module.compile``) and
undoes it. :func:`record_step` compiles them once at PyTorch's default plan,
runs one training step under the profiler and cuts its allocation timeline at
each compiled graph's forward and backward run: a :class:`Step`. Its
:meth:`Step.peak` replays that timeline with any plan of each graph, the
eager parts as measured and each graph's runs as the peak model gives them. It
learns the eager code from the one step it runs: no compile per plan.

May import: torch, :mod:`._plugin`, :mod:`.capture`, :mod:`.peaks` and :mod:`.step`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch._functorch.config as _fconfig

from . import _plugin, capture, peaks
from .step import gather_objects, profile_timeline, run_step

__all__ = ["Step", "check_regions", "compiled", "gather_ranks", "record_step"]

#: Profiler events that bracket one compiled graph's run: its forward, and its backward node.
FORWARD_EVENT = "CompiledFunction"
BACKWARD_EVENT = "autograd::engine::evaluate_function: CompiledFunctionBackward"
#: The profiler event around a dynamo-compiled frame's run; its name ends with the compile id.
REGION_EVENT = "Torch-Compiled Region: "


def check_regions(model: Any, regions: Any) -> list[str] | None:
    """``regions`` as a list of submodule names of ``model``; ValueError naming what is wrong."""
    if regions is None:
        return None
    if isinstance(regions, str) or not isinstance(regions, Sequence) or not regions:
        raise ValueError(f"regions must be a non-empty list of submodule names, got {regions!r}")
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"regions= needs an nn.Module model, got {type(model).__name__}")
    names = list(regions)
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise ValueError(f"regions[{i}] must be a submodule name, got {name!r}")
        try:
            model.get_submodule(name)
        except AttributeError:
            raise ValueError(f"regions[{i}] = {name!r} is not a submodule of {type(model).__name__}") from None
    if len(set(names)) != len(names):
        raise ValueError(f"regions names a submodule twice: {names}")
    for a in names:
        for b in names:
            if a != b and b.startswith(a + "."):
                raise ValueError(f"regions {a!r} and {b!r} nest: name disjoint submodules")
    return names


@contextlib.contextmanager
def compiled(model: Any, regions: list[str] | None, backend: Any) -> Iterator[Callable[..., Any]]:
    """The callable a step runs: ``torch.compile(model)``, or ``model`` with each region compiled in place.

    Regions are compiled with ``nn.Module.compile`` and put back on exit (even
    when the block raises), so the model is left as it was found.
    """
    if regions is None:
        yield torch.compile(model, backend=backend)
        return
    subs = [model.get_submodule(name) for name in regions]
    before = [s._compiled_call_impl for s in subs]
    try:
        for s in subs:
            s.compile(backend=backend)
        yield model
    finally:
        for s, b in zip(subs, before):
            s._compiled_call_impl = b


@dataclass
class Step:
    """One training step of a model compiled by regions, as recorded once.

    ``segments``: the step in time order, each ``("eager", deltas)`` (the
    allocator's events measured between graph runs: embeddings, the head, the
    loss, gradients passed between blocks), ``("forward", key)`` or
    ``("backward", key)`` (one run of graph ``key``, :func:`~.capture.graph_key`).
    ``captures``: one :class:`~.capture.Capture` per distinct key.
    ``defaults``: each graph at PyTorch's default plan (budget 1, the recorded
    one); ``current``: each graph's plan being composed (its default until a
    solver picks one).
    """

    segments: list[tuple[str, Any]]
    captures: dict[str, capture.Capture]
    measured_peak_bytes: int = 0
    #: Under torch.distributed: every rank's segments (:func:`gather_ranks`); a plan's peak is the worst rank's.
    rank_segments: list[list[tuple[str, Any]]] = field(default_factory=list)
    defaults: dict[str, peaks.GraphPeak] = field(default_factory=dict)
    #: Each graph at its budget-0 plan (the least it keeps): what a graph not yet planned is assumed to be.
    floors: dict[str, peaks.GraphPeak] = field(default_factory=dict)
    current: dict[str, peaks.GraphPeak] = field(default_factory=dict)

    @property
    def order(self) -> list[str]:
        """The key of each forward graph run, in order."""
        return [k for kind, k in self.segments if kind == "forward"]

    def reset(self) -> None:
        """Before a solver plans the step: every graph at its budget-0 plan, so that the first graph
        planned is not held to the others' default plans (each graph then sees the plans chosen
        before it)."""
        self.current = dict(self.floors or self.defaults)

    def saved_bytes(self, graphs: dict[str, peaks.GraphPeak]) -> int:
        """Bytes saved for backward by the graphs over the step: each run saves its own."""
        plans = {**self.current, **graphs}
        return sum(plans[k].saved_bytes for k in self.order)

    def peak(self, graphs: dict[str, peaks.GraphPeak] | None = None, **replace: Any) -> int:
        """The step's modelled peak with ``graphs`` (by key; missing keys: :attr:`current`).

        ``replace``: ``key=GraphPeak`` overrides for one call (the plan being scored).
        """
        plans = {**self.defaults, **self.current, **(graphs or {}), **replace}
        return max(_replay(segments, plans) for segments in (self.rank_segments or [self.segments]))

    def scorer(self, key: str) -> Callable[[peaks.GraphPeak], int] | None:
        """For the graph ``key``: a plan's GraphPeak -> the step's peak with it (None: not in this step)."""
        if key not in self.captures:
            return None
        return lambda g: self.peak(**{key: g})


def _replay(segments: list[tuple[str, Any]], plans: dict[str, peaks.GraphPeak]) -> int:
    """The peak of one rank's step: its eager segments as measured, each graph run as ``plans`` model it."""
    running = peak = 0
    for kind, item in segments:
        if kind == "eager":
            deltas = item
        else:
            g = plans[item]
            deltas = g.fw_events if kind == "forward" else g.bw_events
        for d in deltas:
            running += d
            peak = max(peak, running)
    return peak


def gather_ranks(step: Step) -> Step:
    """Share ``step``'s measured segments across ranks (a no-op in one process); returns it.

    Every rank then composes the same peak for a plan, the maximum over ranks,
    and so takes the same decisions. The ranks must have recorded the same
    graphs in the same order (SPMD); ValueError otherwise.
    """
    everyone = gather_objects(step.segments)
    if len(everyone) > 1:
        shapes = {tuple((kind, item) for kind, item in seg if kind != "eager") for seg in everyone}
        if len(shapes) != 1:
            raise ValueError("the ranks ran different compiled graphs in their steps: the plan cannot be shared")
        step.rank_segments = everyone
        step.measured_peak_bytes = max(_replay(seg, step.defaults) for seg in everyone)
    return step


def _calibrate(segments: list[tuple[str, Any]], plans: dict[str, peaks.GraphPeak]) -> list[tuple[str, Any]]:
    """Replace each run's measured net (``("net", bytes)``) by the part the model does not see.

    A graph run can free tensors the model keeps (an input whose last
    reference the run drops, as between the pieces DDP splits a graph into).
    The difference between what the run left allocated and what the model's
    events for the recorded plan leave is added after the run, as eager code
    would be; at the recorded plan the replay then gives the measured step.
    """
    out: list[tuple[str, Any]] = []
    for kind, item in segments:
        if kind != "net":
            out.append((kind, item))
            continue
        run_kind, key = out[-1]
        g = plans[key]
        residual = item - sum(g.fw_events if run_kind == "forward" else g.bw_events)
        if residual:
            out.append(("eager", (residual,)))
    return out


def _runs_by_compile(timeline: Any, captures: list[capture.Capture]) -> list[str] | None:
    """The graph key of each forward run, found by the dynamo compile whose region encloses it.

    A frame compiled once runs its graph(s) at every call (identical blocks,
    DDP's per-module frames); the profiler names each run's region by its
    compile id, and each capture knows the compile that made it. None when a
    run or a capture has no compile id to go by.
    """
    by_compile: dict[str, list[str]] = {}
    for cap in captures:
        if cap.compile_id is None:
            return None
        by_compile.setdefault(cap.compile_id, []).append(capture.graph_key(cap.joint_graph))
    regions = [(s, e, name[len(REGION_EVENT):].strip()) for name, s, e in timeline.intervals
               if name.startswith(REGION_EVENT)]  # fmt: skip
    keys: list[str] = []
    seen_in: dict[tuple[int, int], int] = {}
    for _, start, end in (iv for iv in timeline.intervals if iv[0] == FORWARD_EVENT):
        inside = [(s, e, cid) for s, e, cid in regions if s <= start and end <= e and cid in by_compile]
        if not inside:
            return None
        s, e, cid = max(inside, key=lambda r: r[0])  # the innermost
        k = seen_in.get((s, e), 0)  # the k-th graph run inside this region run
        seen_in[(s, e)] = k + 1
        graphs = by_compile[cid]
        keys.append(graphs[min(k, len(graphs) - 1)])
    return keys


def _segments(timeline: Any, order: list[str]) -> list[tuple[str, Any]]:
    """The step cut at its graph runs: measured eager deltas between them, graph keys in them."""
    forwards = [iv for iv in timeline.intervals if iv[0] == FORWARD_EVENT]
    backwards = [iv for iv in timeline.intervals if iv[0] == BACKWARD_EVENT]
    if len(forwards) != len(order) or len(backwards) != len(order):
        raise ValueError(f"the profiled step ran {len(forwards)} compiled forwards and {len(backwards)} "
                         f"backwards, but {len(order)} graph runs were recorded: a region's graphs changed "
                         "between two steps")  # fmt: skip
    runs = sorted([(s, e, "forward", k) for (_, s, e), k in zip(forwards, order)]
                  + [(s, e, "backward", k) for (_, s, e), k in zip(backwards, reversed(order))])  # fmt: skip
    segments: list[tuple[str, Any]] = []
    eager: list[int] = []
    events = list(timeline.events)
    i = 0
    for start, end, kind, key in runs:
        while i < len(events) and events[i][0] < start:
            eager.append(events[i][1])
            i += 1
        segments.append(("eager", tuple(eager)))
        eager = []
        inside = 0
        while i < len(events) and events[i][0] <= end:  # the graph's own allocations: modelled instead
            inside += events[i][1]
            i += 1
        segments.append((kind, key))
        segments.append(("net", inside))  # what the run left allocated, for _calibrate
    eager += [nbytes for _, nbytes in events[i:]]
    segments.append(("eager", tuple(eager)))
    return segments


def record_step(model: Any, args: tuple, loss_fn: Callable[[Any], Any], regions: list[str] | None, backend: Any,
                device: str, *, budget: float = 1.0, keep_output: bool = True) -> Step:  # fmt: skip
    """Compile ``model``'s regions (None: the whole model) at ``budget`` (1: PyTorch's default plan), run and
    measure one step.

    Each region call's graphs are the joint graphs partitioned during it; a
    call that compiled nothing (dynamo reused a graph) runs the graphs of the
    last call of a module of the same class with the same input shapes. The
    whole model compiled runs each of its graphs once, in the order they were
    partitioned (graph breaks, DDP's buckets). The step is run three times
    (the first compiles, the second lets DDP rebuild its gradient buckets);
    the third is profiled, and cut at the profiler events of
    each graph's forward and backward run: what lies between them is the eager
    code's (the loss, a wrapper's hooks: DDP's gradient buckets, FSDP's
    all-gathers), kept as measured. ``keep_output``: the step's form
    (:func:`~.step.run_step`).
    """
    torch._dynamo.reset()
    subs = {name: model.get_submodule(name) for name in regions or ()}
    calls: list[list[capture.Capture]] = []
    last: dict[Any, list[capture.Capture]] = {}
    try:
        with capture.capture_graphs() as caps, _fconfig.patch(enable_autograd_cache=False,
                                                             activation_memory_budget=budget):  # fmt: skip
            with compiled(model, regions, backend) as run:
                for sub in subs.values():
                    sub._compiled_call_impl = _recording(sub, sub._compiled_call_impl, caps, calls, last)

                def step() -> None:  # as sweep and fit run it
                    run_step(run, args, loss_fn, keep_output)

                _zero(model)
                step()
                if regions is None:  # the whole model: each graph once, in the order partitioned
                    calls.append(list(caps))
                first = len(calls)
                _zero(model)
                step()  # a second warm-up: DDP rebuilds its gradient buckets on the second step
                _zero(model)
                timeline = profile_timeline(step, [FORWARD_EVENT, BACKWARD_EVENT, REGION_EVENT], device)
                _zero(model)
                del calls[first:]  # the profiled step ran the same calls again
    finally:
        torch._dynamo.reset()
    if not caps:
        raise ValueError(f"no joint graph was partitioned in regions {regions}: nothing there requires grad, "
                         "the regions are torch.nn's own modules (dynamo runs those eagerly; name your "
                         "blocks), or the backend does not use min_cut_rematerialization_partition")  # fmt: skip
    captures: dict[str, capture.Capture] = {}
    order: list[str] = []
    for graphs in calls:
        for cap in graphs:
            key = capture.graph_key(cap.joint_graph)
            cap.tangents_given = True  # a backward's tangents come from the step (measured), not allocated anew
            captures.setdefault(key, cap)
            order.append(key)
    # Which graph each run was, from the compile ids (exact where graphs repeat); else the calls' order.
    order = _runs_by_compile(timeline, list(caps)) or order
    default = _plugin.KnapsackSolver()
    with _plugin._wrapper_held():
        defaults = {k: c.peak(c.saved_for_budget(budget, default)) for k, c in captures.items()}
        floors = {k: c.peak(c.saved_for_budget(0.0, default)) for k, c in captures.items()}
    step = Step(segments=_calibrate(_segments(timeline, order), defaults), captures=captures,
                measured_peak_bytes=timeline.peak_bytes, defaults=defaults, floors=floors)  # fmt: skip
    return step


def _recording(sub: Any, call: Callable[..., Any], caps: list[Any], calls: list[list[Any]],
               last: dict[Any, list[Any]]) -> Callable[..., Any]:  # fmt: skip
    """``call`` (a region's compiled call), noting the graphs each call ran."""

    def run(*args: Any, **kwargs: Any) -> Any:
        start = len(caps)
        out = call(*args, **kwargs)
        key = (type(sub), tuple(tuple(a.shape) for a in args if isinstance(a, torch.Tensor)))
        new = list(caps[start:])
        if new:
            last[key] = new
        calls.append(new or list(last.get(key, [])))
        return out

    return run


def _zero(model: Any) -> None:
    if isinstance(model, torch.nn.Module):
        model.zero_grad(set_to_none=True)
